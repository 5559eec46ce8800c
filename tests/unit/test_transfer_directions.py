"""Kind transfer's direction (upload, download, both), rate and fastclose: the schema's one-line
errors, the argv both sides get (what the dry run prints), the reader's per-direction verdicts,
and the tool itself over loopback (each direction's bytes verified, the pace kept, a fast
close's reset the expected end: no error, what was sent and received said)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from ipaddress import IPv4Address, ip_address
from pathlib import Path
from typing import Any

import pytest
from labfiles import selftests_with_flow
from toolkit import free_port, listening

from mptcplab.cli import main
from mptcplab.traffic.base import KindContext
from mptcplab.traffic.kinds import KINDS
from mptcplab.traffic.transfer import TOOL, server_file
from mptcplab.traffic.transfer_metrics import _intact
from mptcplab.traffic.transfer_metrics import _received_fraction as _fraction
from mptcplab.traffic.transfer_result import TransferMetrics
from mptcplab.traffic.transfer_schema import TransferFlow, parse_pace
from mptcplab.traffic.transfer_tool import SERVER_SEED_OFFSET, stream
from mptcplab.units import UnitError

LAB = Path(__file__).resolve().parents[2] / "labs" / "selftests"
N = 200_000


def _flow(**fields: Any) -> TransferFlow:
    return TransferFlow.model_validate({"kind": "transfer", "client": "c", "server": "s", "bytes": "1MB",
                                        "server_address": "s:eth1", **fields})


class _Net:
    def address(self, ref: str, version: int | None = None) -> IPv4Address:
        return ip_address("10.0.1.1")  # type: ignore[return-value]


def _argv(role: str, **fields: Any) -> list[str]:
    ctx = KindContext(net=_Net(), duration_s=1.0)  # type: ignore[arg-type]
    kind, flow = KINDS["transfer"], _flow(**fields)
    return list(kind.server_argv(flow, "m", ctx) if role == "server" else kind.client_argv(flow, "m", ctx))


def _opt(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


@pytest.mark.parametrize("value, bps", [("50KB/s", 400_000), ("400kbit", 400_000), ("1MiB/s", 8 * 2**20),
                                        (1000, 1000), ("6kbps", 48_000)])
def test_pace_is_a_rate_or_a_size_per_second(value: Any, bps: int) -> None:
    assert parse_pace(value) == bps


@pytest.mark.parametrize("value", ["fast", "0KB/s", "50KB/h", "-3kbit"])
def test_bad_pace(value: str) -> None:
    with pytest.raises(UnitError):
        parse_pace(value)


def test_both_sides_get_direction_rate_and_fastclose() -> None:
    for role in ("client", "server"):
        plain = _argv(role)
        assert _opt(plain, "--direction") == "upload" and "--rate" not in plain and "--fastclose" not in plain
        argv = _argv(role, direction="both", rate="50KB/s", fastclose="client")
        assert (_opt(argv, "--direction"), _opt(argv, "--rate"), _opt(argv, "--fastclose")) == \
            ("both", "400000", "client")
    # a fast close by the server needs the client's data unread: upload is fine
    assert _opt(_argv("client", fastclose="server"), "--fastclose") == "server"


def _lab(tmp_path: Path, flow: dict[str, Any]) -> Path:
    return selftests_with_flow(tmp_path, flow)


@pytest.mark.parametrize("flow, field, problem", [
    ({"direction": "sideways"}, "direction", "'upload', 'download' or 'both'"),
    ({"rate": "fast"}, "rate", "expected a rate"),
    ({"direction": "upload", "fastclose": "client"}, "fastclose", "direction download or both"),
    ({"direction": "download", "fastclose": "server"}, "fastclose", "direction upload or both"),
])
def test_bad_values_are_one_line_naming_file_field_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           flow: dict[str, Any], field: str, problem: str) -> None:
    assert main(["validate", str(_lab(tmp_path, flow))]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "experiment.yml" in err[0] and f"traffic.flows.main.{field}" in err[0] and problem in err[0], err[0]


def test_dry_run_prints_the_tools_argv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lab = _lab(tmp_path, {"direction": "both", "rate": "50KB/s", "fastclose": "server"})
    assert main(["run", str(lab), "--dry-run", "--quick"]) == 0
    out = capsys.readouterr().out
    lines = [ln for ln in out.splitlines() if str(TOOL) in ln]
    assert any(" client " in ln for ln in lines) and any(" server " in ln for ln in lines), out[-2000:]
    for ln in lines:
        assert "--direction both" in ln and "--rate 400000" in ln and "--fastclose server" in ln, ln


# the reader: client and server reports -> per-direction legs and the flow's verdict

def _sha(seed: int, n: int) -> str:
    import hashlib
    return hashlib.sha256(b"".join(stream(seed, n))).hexdigest()


def _read(tmp: Path, client: dict[str, Any], server: dict[str, Any]) -> Any:
    c = tmp / "transfer-main.client.json"
    c.write_text(json.dumps(client))
    server_file(tmp, "main").write_text(json.dumps(server))
    return KINDS["transfer"].read(c)


def test_read_both_directions(tmp_path: Path) -> None:
    up, down = _sha(3, N), _sha(3 + SERVER_SEED_OFFSET, N)
    client = {"direction": "both", "size": N, "seed": 3, "sent_bytes": N, "sent_sha256": up, "received_bytes": N,
              "received_sha256": down, "seconds": 1.0}
    server = {"sent_bytes": N, "sent_sha256": down, "received_bytes": N, "received_sha256": up, "seconds": 1.0}
    o = _read(tmp_path, client, server)
    m = TransferMetrics.model_validate(o.metrics)
    assert o.error is None and m.verdict == "equal" and m.direction == "both"
    assert m.upload and m.download and (m.upload.sent_bytes, m.download.received_bytes) == (N, N)
    assert (m.bytes, m.received_bytes, m.size) == (2 * N, 2 * N, 2 * N)
    assert _intact(m) == 1.0 and _fraction(m) == 1.0
    # the download's bytes differ: the flow is not intact, and the error names that direction
    server["sent_sha256"] = "0" * 64
    o = _read(tmp_path, client, server)
    assert o.metrics["verdict"] == "differs" and o.metrics["upload"]["verdict"] == "equal"
    assert o.metrics["download"]["verdict"] == "differs" and _intact(TransferMetrics.model_validate(o.metrics)) == 0
    client["received_bytes"] = N - 10
    o = _read(tmp_path, client, server)
    assert o.metrics["verdict"] == "incomplete" and "download" in (o.error or "") and "upload" not in (o.error or "")


def test_read_download_only(tmp_path: Path) -> None:
    down = _sha(3 + SERVER_SEED_OFFSET, N)
    o = _read(tmp_path, {"direction": "download", "size": N, "seed": 3, "sent_bytes": 0, "received_bytes": N,
                         "received_sha256": down, "seconds": 1.0},
              {"sent_bytes": N, "sent_sha256": down, "received_bytes": 0, "seconds": 1.0})
    assert o.error is None and o.metrics["verdict"] == "equal" and "upload" not in o.metrics
    assert (o.metrics["bytes"], o.metrics["received_bytes"], o.metrics["sent_sha256"]) == (N, N, down)


def test_read_fastclose_truncation_is_no_failure(tmp_path: Path) -> None:
    """The server closed fast after N: the client had sent more until the reset (its hash covers
    N), the server read N. With fewer bytes arrived it says so, without an error."""
    up = _sha(3, N)
    client = {"direction": "upload", "fastclose_side": "server", "size": N, "seed": 3, "sent_bytes": 5 * N,
              "sent_sha256": up, "reset": True, "seconds": 1.0}
    server = {"received_bytes": N, "received_sha256": up, "fastclose": True, "seconds": 1.0}
    o = _read(tmp_path, client, server)
    assert o.error is None and o.metrics["verdict"] == "equal" and o.metrics["reset"] is True
    assert (o.metrics["upload"]["sent_bytes"], o.metrics["upload"]["received_bytes"]) == (5 * N, N)
    server["received_bytes"] = N // 2
    o = _read(tmp_path, client, server)
    assert o.error is None and o.metrics["verdict"] == "incomplete"
    assert o.metrics["upload"]["received_bytes"] == N // 2


# the tool over loopback (TCP: the loopback needs no MPTCP; the kind's MPTCP sockets are the
# integration test's)





@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Callable[..., tuple[dict[str, Any], dict[str, Any], int, int]]]:
    """Runs the tool's server and client with the same options; both killed whatever happened."""
    procs: list[subprocess.Popen[str]] = []

    def run(*opts: str) -> tuple[dict[str, Any], dict[str, Any], int, int]:
        port, out = free_port(), tmp_path / f"server-{len(procs)}.json"
        common = ["--port", str(port), "--seed", "5", "--bytes", str(N), *opts]
        procs.append(subprocess.Popen([sys.executable, "-I", str(TOOL), "server", "--address", "127.0.0.1",
                                       "--out", str(out), *common], text=True))
        listening(port)
        procs.append(subprocess.Popen([sys.executable, "-I", str(TOOL), "client", "--address", "127.0.0.1",
                                       *common], stdout=subprocess.PIPE, text=True))
        c_out, _ = procs[-1].communicate(timeout=30)
        s_rc = procs[-2].wait(timeout=30)
        return json.loads(c_out), json.loads(out.read_text()), procs[-1].returncode, s_rc

    yield run
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()


@pytest.mark.parametrize("direction", ["upload", "download", "both"])
def test_tool_sends_each_direction_verified(pair: Callable[..., Any], direction: str) -> None:
    c, s, crc, src = pair("--direction", direction)
    assert (crc, src) == (0, 0) and "error" not in c and s["error"] is None, (c, s)
    up, down = direction in ("upload", "both"), direction in ("download", "both")
    assert (c["sent_bytes"], s["received_bytes"]) == ((N, N) if up else (0, 0))
    assert (s["sent_bytes"], c["received_bytes"]) == ((N, N) if down else (0, 0))
    if up:
        assert s["received_sha256"] == c["sent_sha256"] == _sha(5, N)
        assert s["differs"]["differing_bytes"] == 0
    if down:
        assert c["received_sha256"] == s["sent_sha256"] == _sha(5 + SERVER_SEED_OFFSET, N)
        assert c["differs"]["differing_bytes"] == 0


def test_tool_paces_the_sender(pair: Callable[..., Any]) -> None:
    # 200 kB at 1.6 Mbit/s: 1 s; unpaced on loopback: milliseconds
    c, s, crc, _ = pair("--rate", "1600000")
    assert crc == 0 and s["received_bytes"] == N and 0.9 <= c["seconds"] < 5, c


@pytest.mark.parametrize("closer, direction", [("client", "both"), ("server", "both"), ("server", "upload"),
                                               ("client", "download")])
def test_tool_fastclose_ends_with_a_reset_not_an_error(pair: Callable[..., Any], closer: str,
                                                       direction: str) -> None:
    c, s, crc, src = pair("--direction", direction, "--fastclose", closer)
    closing, peer = (c, s) if closer == "client" else (s, c)
    assert (crc, src) == (0, 0) and "error" not in c and s["error"] is None, (c, s)
    # the closing side read exactly N of the peer's stream, which sent more until the reset
    assert closing["fastclose"] is True and closing["received_bytes"] == N
    assert closing["differs"]["differing_bytes"] == 0
    assert peer["reset"] is True and peer["sent_bytes"] > N
    if (direction == "both") or (direction == "upload") == (closer == "client"):
        assert closing["sent_bytes"] == N and peer["received_bytes"] == N
        assert peer["received_sha256"] == closing["sent_sha256"]
