"""The packet capture as a probe (probes/tcpdump.py) without tcpdump: it waits until
tcpdump listens, its files sit beside probes/ and not in it, its counters go into
capture_stats, and a tcpdump that died before the stop is recorded as such ("died").
Its place in every repetition and its dry-run lines: test_plan_commands.py."""

from __future__ import annotations

import signal
from ipaddress import ip_address
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from mptcplab.capture import capture_command
from mptcplab.lab.schema import CapturePoint
from mptcplab.probes.tcpdump import TcpdumpCapture, log_name
from mptcplab.warncodes import CAPTURE_INCOMPLETE, coded

STATS = "12 packets captured\n14 packets received by filter\n{dropped} packets dropped by kernel\n"


class _Proc:
    def __init__(self, status: int | None) -> None:
        self.status = status
        self.pid = 1

    def poll(self) -> int | None:
        return self.status

    def wait(self, timeout: float | None = None) -> int:
        self.status = 0 if self.status is None else self.status  # tcpdump exits 0 on SIGINT
        return self.status

    @property
    def returncode(self) -> int | None:
        return self.status


class _Backend:
    """Spawns nothing: a tcpdump that says it listens, or (dead) exits at once."""

    def __init__(self, dead: bool = False) -> None:
        self.dead = dead
        self.signals: list[int] = []

    def spawn(self, node: str, argv: Any, stdout: Any, stderr: Any) -> _Proc:
        stderr.write(b"tcpdump: cannot open\n" if self.dead else b"listening on eth1\n")
        stderr.close()
        return _Proc(1 if self.dead else None)

    def signal(self, proc: _Proc, sig: int) -> None:
        self.signals.append(sig)


def _rep(tmp_path: Path, backend: _Backend) -> Any:
    body = SimpleNamespace(capture=[CapturePoint(point="client:eth1"), CapturePoint(point="server:eth1")])
    warnings: list[Any] = []
    net = SimpleNamespace(addresses=lambda ref: [ip_address("10.0.1.2")])  # an IPv4 lab
    return SimpleNamespace(out=tmp_path, body=body, plan=SimpleNamespace(net=net), backend=backend, warnings=warnings,
                           extra={},
                           warn=lambda code, message, path=None: warnings.append(coded(code, message, path)))


def test_start_waits_for_listening_writes_beside_probes_and_stop_records_counters(tmp_path: Path) -> None:
    be = _Backend()
    rep, cap = _rep(tmp_path, be), TcpdumpCapture()
    cap.start(rep)
    assert cap.artifacts() == ["capture-client-eth1.pcap", "capture-client-eth1.tcpdump.log",
                               "capture-server-eth1.pcap", "capture-server-eth1.tcpdump.log"]
    assert cap.artifacts_dir == ""  # the analysis reads the captures at the repetition's top
    for name in ("client", "server"):
        (tmp_path / f"capture-{name}-eth1.tcpdump.log").write_text(STATS.format(dropped=3 if name == "server" else 0))
    cap.stop(rep)
    assert be.signals == [signal.SIGINT, signal.SIGINT]
    assert rep.extra["capture_stats"] == {"client:eth1": {"captured": 12, "received": 14, "dropped": 0},
                                          "server:eth1": {"captured": 12, "received": 14, "dropped": 3}}
    assert rep.warnings == [coded(CAPTURE_INCOMPLETE,
                                  "capture server:eth1 dropped 3 packets: segment statistics are incomplete")]
    table = TcpdumpCapture.analyze(tmp_path)
    assert list(table["file"]) == ["capture-client-eth1.pcap", "capture-server-eth1.pcap"]
    assert list(table["dropped"]) == [0, 3]


def test_a_tcpdump_that_ended_before_the_stop_is_recorded_as_died(tmp_path: Path) -> None:
    rep, cap = _rep(tmp_path, _Backend()), TcpdumpCapture()
    cap.start(rep)
    cap._running[0][1].status = -9  # type: ignore[attr-defined]  # killed from outside mid-run
    cap.stop(rep)
    assert rep.extra["capture_stats"]["client:eth1"] == {"died": -9}
    assert "died" not in rep.extra["capture_stats"]["server:eth1"]
    assert rep.warnings == [coded(CAPTURE_INCOMPLETE, "capture client:eth1 did not end as the run stopped it "
                                  "(exit status -9): the capture is incomplete")]


def test_a_tcpdump_that_cannot_start_fails_the_start_with_its_message(tmp_path: Path) -> None:
    rep, cap = _rep(tmp_path, _Backend(dead=True)), TcpdumpCapture()
    with pytest.raises(RuntimeError, match="tcpdump on client:eth1 failed: tcpdump: cannot open"):
        cap.start(rep)


def test_the_log_sits_beside_its_capture_file(tmp_path: Path) -> None:
    cc = capture_command(CapturePoint(point="client:eth2"), tmp_path)
    assert log_name(cc) == "capture-client-eth2.tcpdump.log" and cc.path.name == "capture-client-eth2.pcap"
