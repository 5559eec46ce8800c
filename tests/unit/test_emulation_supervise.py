"""Daemon supervision with fake daemons (small Python programs; no root needed)."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from mptcplab.emulation.base import Daemon
from mptcplab.supervise import DaemonDied, DaemonNotReady, Supervisor, proc_cpu_seconds

GOOD = """
import json, signal, sys, time
stats = sys.argv[1]
def stop(*_):
    json.dump({"packets": 42}, open(stats, "w")); sys.exit(0)
signal.signal(signal.SIGTERM, stop)
print("starting"); print("ready", flush=True)
while True: time.sleep(1)
"""
DIES_EARLY = "import sys; sys.stderr.write('binding queue 1 failed: Device or resource busy\\n'); sys.exit(1)"
NEVER_READY = "import time; time.sleep(30)"


def direct(node: str, argv: object) -> list[str]:
    return list(argv)  # type: ignore[call-overload]


def daemon(code: str, tmp: Path, name: str = "delayline ra:eth1<-client:eth1") -> Daemon:
    stats = tmp / f"{abs(hash(name))}.json"
    return Daemon(node="ra", argv=(sys.executable, "-c", code, str(stats)), name=name, stats_path=str(stats))


def test_start_ready_stop_reads_stats(tmp_path: Path) -> None:
    with Supervisor(direct, tmp_path) as sup:
        rd = sup.start(daemon(GOOD, tmp_path))
        assert rd.alive()
        sup.check()
        assert isinstance(proc_cpu_seconds(rd.pid), float)
        assert sup.stop(rd) == {"packets": 42}
        assert not rd.alive() and sup.running == []


def test_exit_before_ready_reports_stderr(tmp_path: Path) -> None:
    with Supervisor(direct, tmp_path) as sup, pytest.raises(DaemonDied) as ei:
        sup.start(daemon(DIES_EARLY, tmp_path))
    assert "delayline ra:eth1<-client:eth1" in str(ei.value)
    assert "Device or resource busy" in ei.value.stderr_tail


def test_not_ready_in_time_is_killed(tmp_path: Path) -> None:
    with Supervisor(direct, tmp_path, ready_timeout=0.5) as sup:
        t0 = time.monotonic()
        with pytest.raises(DaemonNotReady):
            sup.start(daemon(NEVER_READY, tmp_path))
        assert time.monotonic() - t0 < 5
        assert sup.running == []


def test_death_during_run_is_loud(tmp_path: Path) -> None:
    with Supervisor(direct, tmp_path) as sup:
        a = sup.start(daemon(GOOD, tmp_path, "delayline a"))
        b = sup.start(daemon(GOOD, tmp_path, "delayline b"))
        os.kill(a.pid, signal.SIGKILL)
        a.proc.wait()
        with pytest.raises(DaemonDied, match="delayline a.*died during the run"):
            sup.check()
        # stop_all still stops the healthy one, then reports the dead one
        with pytest.raises(DaemonDied, match="delayline a"):
            sup.stop_all()
        assert not b.alive()
        assert sup.running == []


def test_close_kills_everything(tmp_path: Path) -> None:
    sup = Supervisor(direct, tmp_path)
    rds = [sup.start(daemon(GOOD, tmp_path, f"d{i}")) for i in range(2)]
    sup.close()
    assert all(not rd.alive() for rd in rds)
    sup.close()  # idempotent
