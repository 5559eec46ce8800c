"""Kind transfer on either family: the client's socket follows the server address, the
server listens on both families (``::``, not v6-only) unless the flow's ``server_bind``
names one address; ``server_bind`` checked at load time (one line, exit 2)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from ipaddress import IPv4Address, IPv6Address, ip_address
from pathlib import Path
from typing import Any

import pytest
import yaml
from labfiles import selftests_with_flow
from toolkit import free_port, listening

from mptcplab.cli import main
from mptcplab.errors import LabInputError
from mptcplab.lab.loader import load_lab
from mptcplab.traffic.base import KindContext
from mptcplab.traffic.kinds import KINDS
from mptcplab.traffic.transfer import TOOL
from mptcplab.traffic.transfer_schema import TransferFlow
from mptcplab.traffic.transfer_tool import ANY, family

LAB = Path(__file__).resolve().parents[2] / "labs" / "selftests"






@pytest.fixture
def server(tmp_path: Path) -> Iterator[Callable[..., tuple[int, Path]]]:
    """Starts the tool's server with the given arguments; kills it at the end whatever happened."""
    procs: list[subprocess.Popen[bytes]] = []

    def start(*args: str) -> tuple[int, Path]:
        port, out = free_port(socket.AF_INET6), tmp_path / f"server-{len(procs)}.json"
        procs.append(subprocess.Popen([sys.executable, "-I", str(TOOL), "server", *args, "--port", str(port),
                                       "--out", str(out), "--seed", "5", "--bytes", "300000"]))
        listening(port)
        return port, out

    yield start
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()


def _client(address: str, port: int, *extra: str) -> dict[str, Any]:
    r = subprocess.run([sys.executable, "-I", str(TOOL), "client", "--address", address, "--port", str(port),
                        "--bytes", "300000", "--seed", "5", *extra], capture_output=True, text=True, timeout=20)
    return dict(json.loads(r.stdout))


def test_family_follows_the_address_literal() -> None:
    assert family("10.0.1.1") == socket.AF_INET
    assert family("dead:beef:1::1") == socket.AF_INET6 and family(ANY) == socket.AF_INET6
    assert family("::ffff:10.0.1.1") == socket.AF_INET6


@pytest.mark.parametrize("address, bind", [("127.0.0.1", "127.0.0.1"), ("::1", "::1")])
def test_default_server_takes_either_family(server: Callable[..., tuple[int, Path]], address: str,
                                            bind: str) -> None:
    """One server without --address (``::``, IPV6_V6ONLY off) receives an IPv4 and an IPv6
    client alike, intact; the client binds a source of its own family."""
    port, out = server()
    c = _client(address, port, "--bind", bind)
    assert "error" not in c, c
    s = json.loads(out.read_text())
    assert s["bytes"] == c["bytes"] == 300000 and s["received_sha256"] == c["sent_sha256"]
    assert s["differs"]["differing_bytes"] == 0


def test_a_bound_server_takes_only_its_address(server: Callable[..., tuple[int, Path]]) -> None:
    """server_bind's effect (mptcp_join.sh bind_tests): a server on 127.0.0.1 refuses a
    connection to ::1 on the same port, and takes one to its own address."""
    port, out = server("--address", "127.0.0.1")
    refused = _client("::1", port)
    assert "refused" in refused.get("error", "").lower(), refused
    ok = _client("127.0.0.1", port)
    assert "error" not in ok and json.loads(out.read_text())["bytes"] == 300000


def test_mptcp_socket_of_either_family(server: Callable[..., tuple[int, Path]]) -> None:
    """IPPROTO_MPTCP on an AF_INET6 socket: the client reports its socket still MPTCP."""
    try:
        socket.socket(socket.AF_INET6, socket.SOCK_STREAM, 262).close()
    except OSError as e:  # net.mptcp.enabled=0 on this host: nothing to test
        pytest.skip(f"no MPTCP socket here: {e}")
    port, out = server("--mptcp")
    c = _client("::1", port, "--mptcp")
    assert "error" not in c and c["mptcp"] is True, c
    assert json.loads(out.read_text())["received_sha256"] == c["sent_sha256"]


class _Net:
    """The two calls the kind makes of a Network: 'node:iface' -> its address (of ``version``)."""

    ADDR = {"s:eth1": {4: "10.0.1.1", 6: "dead:beef:1::1"}, "s:eth2": {4: "10.0.2.1", 6: "dead:beef:2::1"},
            "c:eth1": {4: "10.0.1.2", 6: "dead:beef:1::2"}, "c:eth9": {4: "10.0.9.2"}}

    def address(self, ref: str, version: int | None = None) -> IPv4Address | IPv6Address:
        if ref not in self.ADDR:
            return ip_address(ref)
        return ip_address(self.ADDR[ref][version or 4])


def _argv(role: str, **fields: Any) -> list[str]:
    flow = TransferFlow.model_validate({"kind": "transfer", "client": "c", "server": "s", "bytes": "1MB",
                                        "server_address": "s:eth1", **fields})
    ctx = KindContext(net=_Net(), duration_s=1.0)  # type: ignore[arg-type]
    kind = KINDS["transfer"]
    return list(kind.server_argv(flow, "m", ctx) if role == "server" else kind.client_argv(flow, "m", ctx))


def _opt(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


def test_argv_family_and_bind() -> None:
    # no server_bind: the tool's default, every address of both families
    assert _opt(_argv("server"), "--address") is None
    # the client's source is its bind interface's address of the server address's family
    assert _opt(_argv("client", bind="c:eth1"), "--bind") == "10.0.1.2"
    v6 = _argv("client", server_address="dead:beef:1::1", bind="c:eth1")
    assert (_opt(v6, "--address"), _opt(v6, "--bind")) == ("dead:beef:1::1", "dead:beef:1::2")
    # an interface without that family: its IPv4 address (the connect fails and says so)
    assert _opt(_argv("client", server_address="dead:beef:1::1", bind="c:eth9"), "--bind") == "10.0.9.2"
    # server_bind: an interface's address of the connection's family, or a literal
    assert _opt(_argv("server", server_bind="s:eth1"), "--address") == "10.0.1.1"
    assert _opt(_argv("server", server_bind="s:eth2", server_address="dead:beef:1::1"),
                "--address") == "dead:beef:2::1"
    assert _opt(_argv("server", server_bind="10.0.1.1"), "--address") == "10.0.1.1"


def _lab(tmp_path: Path, flow: dict[str, Any], v6: bool = True) -> Path:
    return selftests_with_flow(tmp_path, flow, v6)


def test_a_good_server_bind_loads(tmp_path: Path) -> None:
    lab = load_lab(_lab(tmp_path, {"server_bind": "dead:beef:1::1", "server_address": "dead:beef:1::1"}))
    flow = lab.scenarios[0].body.traffic.flows["main"]
    assert isinstance(flow, TransferFlow) and flow.server_bind == "dead:beef:1::1"


@pytest.mark.parametrize("flow, v6, problem", [
    ({"server_bind": "client:eth1"}, True, "'client:eth1' is not an interface of server"),
    ({"server_bind": "server:eth9"}, True, "'server:eth9' is not an interface of server"),
    ({"server_bind": "10.0.1.2"}, True, "10.0.1.2 is not an address of server"),
    ({"server_bind": "dead:beef:1::1"}, True, "dead:beef:1::1 is IPv6, server_address is IPv4"),
    ({"server_bind": "server:eth1", "server_address": "dead:beef:2::1"}, False,
     "dead:beef:2::1 is not an address of server"),
    ({"server_bind": "server:eth1", "server_address": "10.0.1.1"}, True, None),
    ({"server_bind": "nonsense"}, True, "neither 'node:interface' nor an IPv4 or IPv6 address"),
])
def test_bad_server_bind_is_one_line(tmp_path: Path, flow: dict[str, Any], v6: bool, problem: str | None) -> None:
    path = _lab(tmp_path, flow, v6)
    if problem is None:
        load_lab(path)
        return
    with pytest.raises(LabInputError) as e:
        load_lab(path)
    msg = str(e.value)
    assert "\n" not in msg and problem in msg and "experiment.yml" in msg
    assert e.value.field.endswith(("server_bind", "server_address")), msg


def test_server_bind_of_a_v4_only_interface_for_a_v6_flow(tmp_path: Path) -> None:
    """'node:iface' of the server whose link has no address of the connection's family."""
    path = _lab(tmp_path, {"server_bind": "server:eth1", "server_address": "dead:beef:2::1"})
    exp = yaml.safe_load((path / "experiment.yml").read_text())
    del exp["addressing"]["addresses6"]["server:eth1"], exp["addressing"]["addresses6"]["client:eth1"]
    (path / "experiment.yml").write_text(yaml.safe_dump(exp, sort_keys=False))
    with pytest.raises(LabInputError, match="server:eth1 has no IPv6 address"):
        load_lab(path)


def test_validate_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _lab(tmp_path, {"server_bind": "10.0.3.2"})
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "traffic.flows.main.server_bind" in err[0] and "not an address of server" in err[0]


def test_a_transfer_bind_names_its_v6_address_so_validate_does_not_warn(tmp_path: Path) -> None:
    """lab/joinwarnings.py: the transfer kind's ``bind: client:eth1`` stands for dead:beef:1::2 when
    the flow connects to a v6 address (bind_follows_family); the IPv4 one would be warned about."""
    from mptcplab.lab.joinwarnings import join_warnings
    lab = load_lab(_lab(tmp_path, {"server_address": "dead:beef:1::1", "bind": "client:eth1"}))
    assert not [w for w in join_warnings(lab) if ".bind:" in w]
    # an iperf3 flow's bind stays the interface's IPv4 address: that one is warned about
    path = tmp_path / "iperf3"
    path.mkdir()
    exp_file = _lab(path, {"server_address": "dead:beef:1::1", "bind": "client:eth1"}) / "experiment.yml"
    exp = yaml.safe_load(exp_file.read_text())
    main_flow = exp["traffic"]["flows"]["main"]
    for key in ("bytes", "seed"):
        main_flow.pop(key, None)
    main_flow.update(kind="iperf3", port=5201)
    exp_file.write_text(yaml.safe_dump(exp, sort_keys=False))
    warned = [w for w in join_warnings(load_lab(exp_file.parent)) if ".bind:" in w]
    assert warned and "client:eth1 is IPv4 (10.0.1.2)" in warned[0]
