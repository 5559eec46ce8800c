"""The ``laminar`` endpoint flag (Linux 6.18), which iproute2 6.1 cannot set: an endpoint
with it is added by timeline/upm_tool.py's ``endpoint-add`` (the kernel's mptcp_pm
ADD_ADDR) at setup (net/mptcp.py) and as a timeline event (timeline/actions.py); every
other endpoint keeps ``ip mptcp endpoint add``. The tool's request, its refusal of a kernel
too old for the flag, the lab's validation, and iproute2 6.1's ``rawflags 20`` read back."""

from __future__ import annotations

import shutil
import struct
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import TypeAdapter, ValidationError

from mptcplab.emulation.nfqueue import NfqueueEmulator
from mptcplab.errors import LabInputError
from mptcplab.lab.events import Event as LabEvent
from mptcplab.lab.loader import load_lab
from mptcplab.lab.network import build_network
from mptcplab.net.mptcp import ENDPOINT_TOOL, mptcp_cmds, parse_endpoints
from mptcplab.timeline import upm_tool
from mptcplab.timeline.actions import resolve, subject
from mptcplab.timeline.env import ActionEnv

REPO = Path(__file__).resolve().parents[2]
BASE = REPO / "tests" / "data" / "bad-labs" / "_base"
LAB_EVENT: TypeAdapter[Any] = TypeAdapter(LabEvent)
TOOL = (sys.executable, "-I", str(ENDPOINT_TOOL), "endpoint-add")


def lab_with(tmp_path: Path, endpoints: list[dict[str, Any]]) -> Path:
    lab = tmp_path / "lam"
    shutil.copytree(BASE, lab)
    exp = yaml.safe_load((lab / "experiment.yml").read_text())
    exp["nodes"]["client"]["mptcp"]["endpoints"] = endpoints
    (lab / "experiment.yml").write_text(yaml.safe_dump(exp, sort_keys=False))
    return lab


def setup_argv(tmp_path: Path, endpoints: list[dict[str, Any]]) -> tuple[list[tuple[str, ...]], dict[str, str]]:
    """The endpoint commands of the client at setup (after flush and limits), and its addresses."""
    lab = load_lab(lab_with(tmp_path, endpoints))
    sc = lab.scenarios[0]
    net = build_network(lab.topology, sc.body)
    addrs = {i: str(net.address(f"client:{i}")) for i in ("eth1", "eth2")}
    return [c.argv for c in mptcp_cmds(sc.body, net, "client")][2:], addrs


def test_a_laminar_endpoint_is_added_by_the_tool_and_the_others_by_ip(tmp_path: Path) -> None:
    got, a = setup_argv(tmp_path / "x", [{"address": "client:eth2", "flags": ["subflow", "laminar"], "id": 5}])
    assert got == [(*TOOL, "--address", a["eth2"], "--dev", "eth2", "--id", "5", "--flags", "subflow,laminar")]
    got, a = setup_argv(tmp_path / "y", [{"address": "client:eth1", "flags": ["laminar"]},
                                         {"address": "client:eth2", "flags": ["subflow"], "id": 3}])
    assert got == [(*TOOL, "--address", a["eth1"], "--dev", "eth1", "--flags", "laminar"),
                   ("ip", "mptcp", "endpoint", "add", a["eth2"], "dev", "eth2", "id", "3", "subflow")]


def test_the_timeline_adds_a_laminar_endpoint_with_the_tool(tmp_path: Path) -> None:
    lab = load_lab(BASE)
    env = ActionEnv(build_network(lab.topology, lab.scenarios[0].body), NfqueueEmulator(binary=Path("/bin/true")))
    eth2 = str(env.net.address("client:eth2"))
    ev = LAB_EVENT.validate_python({"at": 1, "action": "endpoint_add", "node": "client", "address": "client:eth2",
                                    "flags": ["signal", "laminar"], "id": 7, "port": 10100})
    r = resolve(env, ev)
    assert [c.argv for c in r.cmds] == [(*TOOL, "--address", eth2, "--dev", "eth2", "--id", "7", "--port", "10100",
                                         "--flags", "signal,laminar")]
    assert r.cmds[0].node == "client" and not r.cmds[0].check  # a refusal is recorded, the run goes on
    assert subject(ev)["flags"] == "signal laminar"
    plain = LAB_EVENT.validate_python({"at": 1, "action": "endpoint_add", "node": "client", "address": "client:eth2",
                                       "flags": ["subflow"]})
    assert [c.argv for c in resolve(env, plain).cmds] == [("ip", "mptcp", "endpoint", "add", eth2, "dev", "eth2",
                                                           "subflow")]


def test_laminar_cannot_be_changed_on_an_endpoint() -> None:
    # net/mptcp/pm_kernel.c mptcp_pm_nl_set_flags: only backup and fullmesh change
    with pytest.raises(ValidationError):
        LAB_EVENT.validate_python({"at": 1, "action": "endpoint_flags", "node": "client", "id": 2,
                                   "flags": "laminar"})


def test_the_labs_refusals_still_hold_with_laminar(tmp_path: Path) -> None:
    for bad, why in (([{"address": "client:eth2", "flags": ["laminar", "laminar"]}], "listed twice"),
                     ([{"address": "client:eth2", "flags": ["laminar", "implicit"]}], "flags"),
                     ([{"address": "client:eth2", "flags": ["laminar"], "port": 10100}], "only a signal")):
        with pytest.raises(LabInputError, match=why) as e:
            load_lab(lab_with(tmp_path / why.replace(" ", "-"), bad))
        assert "\n" not in str(e.value)


def test_the_tool_sends_add_addr_with_the_flag_bits() -> None:
    p = upm_tool.parser()
    cmd, attrs = upm_tool.request_of(p.parse_args(["endpoint-add", "--address", "10.0.3.2", "--id", "4",
                                                   "--flags", "subflow,laminar"]))
    assert cmd == upm_tool.CMD_ADD_ADDR == 1
    addr = upm_tool._attrs(upm_tool._attrs(attrs)[upm_tool.ATTR_ADDR])
    assert addr[upm_tool.ADDR_ADDR4] == bytes([10, 0, 3, 2]) and addr[upm_tool.ADDR_ID] == b"\x04"
    assert struct.unpack("=I", addr[upm_tool.ADDR_FLAGS]) == ((1 << 1) | (1 << 5),)  # SUBFLOW | LAMINAR
    assert upm_tool.ADDR_IF_IDX not in addr and upm_tool.ADDR_PORT not in addr
    cmd, attrs = upm_tool.request_of(p.parse_args(["endpoint-add", "--address", "fd00::2", "--dev", "lo",
                                                   "--port", "10100", "--flags", "signal"]))
    addr = upm_tool._attrs(upm_tool._attrs(attrs)[upm_tool.ATTR_ADDR])
    assert len(addr[upm_tool.ADDR_ADDR6]) == 16 and struct.unpack("=H", addr[upm_tool.ADDR_PORT]) == (10100,)
    assert struct.unpack("=i", addr[upm_tool.ADDR_IF_IDX]) == (1,)  # lo
    with pytest.raises(SystemExit):
        p.parse_args(["endpoint-add", "--address", "10.0.3.2", "--flags", "implicit"])


@pytest.mark.parametrize(("release", "refused"), [("6.18.44-fc-v669", False), ("6.19.0", False), ("7.0", False),
                                                  ("6.17.9", True), ("6.1.0-27-amd64", True), ("weird", False)])
def test_a_kernel_before_6_18_is_refused_in_one_line(release: str, refused: bool) -> None:
    why = upm_tool.flag_problem("subflow,laminar", release)
    assert (why is not None) == refused
    if why is not None:
        assert "6.18" in why and release in why and "\n" not in why
    assert upm_tool.flag_problem("subflow,backup", release) is None


def test_the_tool_exits_1_with_its_reason_on_an_old_kernel(monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    class Uname:
        release = "6.12.1"

    monkeypatch.setattr(upm_tool.os, "uname", lambda: Uname)
    monkeypatch.setattr(upm_tool, "GenlSocket", lambda: pytest.fail("nothing is sent"))
    assert upm_tool.main(["endpoint-add", "--address", "10.0.3.2", "--flags", "laminar"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("endpoint-add: the laminar flag needs Linux 6.18") and "\n" not in err


def test_iproute2_6_1_shows_laminar_as_rawflags() -> None:
    eps = parse_endpoints("10.0.3.2 id 3 subflow rawflags 20 dev eth3 \n10.0.4.2 id 4 rawflags 60 \n"
                          "10.0.2.2 id 2 subflow fullmesh dev eth2 \n")
    assert [e.flags for e in eps] == [("subflow", "laminar"), ("laminar", "rawflags 40"), ("subflow", "fullmesh")]
