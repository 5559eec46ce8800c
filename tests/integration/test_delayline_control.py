"""A running delay line takes a new delay (timeline link_change on the nfqueue emulator):
the command NfqueueEmulator.change_cmds generates, run between two namespaces, moves
the ping RTT from the old delay to the new one without restarting the delay line."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from mptcplab.emulation.base import repo_root
from mptcplab.emulation.linkmodel import LinkShape
from mptcplab.emulation.nfqueue import NfqueueEmulator
from mptcplab.emulation.testline import TwoNodeLine
from mptcplab.supervise import Supervisor

pytestmark = [
    pytest.mark.netns,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root"),
    pytest.mark.skipif(any(shutil.which(t) is None for t in ("ip", "iptables", "ping", "make", "cc")),
                       reason="needs ip, iptables, ping, make, cc"),
]


@pytest.fixture
def line() -> Iterator[TwoNodeLine]:
    ln = TwoNodeLine(mtu=1500)
    try:
        yield ln
    finally:
        ln.close()


def test_delay_change_reaches_the_running_delay_line(line: TwoNodeLine, tmp_path: Path) -> None:
    p = subprocess.run(["make", "-C", str(repo_root() / "native")], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-300:]
    emu = NfqueueEmulator(binary=repo_root() / "native" / "build" / "mptcplab-delayline")
    shape = LinkShape.parse(delay="5ms")
    with Supervisor(line.host_argv, tmp_path / "logs") as sup:
        line.apply(emu, shape, shape, tmp_path, sup)
        before = line.ping("a", count=10, interval=0.05)
        assert before.received == 10 and 10.0 <= before.min_ms <= 12.0, before
        ab = line.directed("a", shape)
        cmds = emu.change_cmds(ab, LinkShape.parse(delay="30ms"))
        assert len(cmds) == 1 and cmds[0].argv[0].endswith("mptcplab-delayline-ctl")
        out = line.run(cmds[0])
        assert out.returncode == 0, out.stderr
        assert "5000 -> 30000 us" in out.stdout
        after = line.ping("a", count=10, interval=0.05)
        # 30 ms one way now, 5 ms back
        assert after.received == 10 and 35.0 <= after.min_ms <= 37.5, after
        stats = sup.stop_all()
    fwd = stats["delayline b:eth0<-a:eth0"]
    assert fwd is not None and fwd["delay_us"] == 30000 and fwd["ring_full_drops"] == 0
