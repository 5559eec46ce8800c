"""The packet capture as a probe: tcpdump at each of the lab's capture points.

Unlike the other probes it is **mandatory**: every repetition of every lab runs it, and no
key of experiment.yml turns it off, because MPTCP is proven from the capture (the
analysis' verdict, docs/architecture.md). So it has no key under ``probes:``; the
registry (registry.py ``MANDATORY_FIRST``) puts it first in every repetition's probes: it
starts before the others and, stopped newest first, stops after them, so the capture covers
everything they see.

Its files stay at the top of the repetition's directory (``capture-<node>-<iface>.pcap``
and tcpdump's ``.tcpdump.log``; docs/results-format.md), where the analysis reads them, not
under ``probes/``; its counters go into the record as ``capture_stats``. The tcpdump
command lines come from capture.py, which also serves the calibration: this module runs
them.
"""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import pandas as pd

from ..capture import CaptureCommand, capture_command, parse_tcpdump_stats
from ..commands import Cmd
from ..steps.base import READY_TIMEOUT_S, Planned, wait_for
from ..warncodes import CAPTURE_INCOMPLETE
from .base import Probe

if TYPE_CHECKING:
    from ..steps.base import Rep

LOG_SUFFIX = ".tcpdump.log"


def log_name(cc: CaptureCommand) -> str:
    """tcpdump's stderr ("listening on", its counters at exit) beside the capture file."""
    return cc.path.stem + LOG_SUFFIX


def _file_has(path: Path, text: str) -> bool:
    try:
        return text in path.read_text(errors="replace")
    except OSError:
        return False


def capture_died(before_stop: int | None, after_stop: int | None, killed_by_us: bool) -> int | None:
    """The exit status of a capture that did not end as told, else None: ended before the
    run stopped it, or ended with a failure after SIGINT (tcpdump exits 0 on SIGINT, so a
    kill from outside that lands between the poll before the stop and tcpdump's handling of
    the signal shows here); a capture this run had to SIGKILL itself is not counted."""
    if before_stop is not None:
        return before_stop
    if after_stop not in (0, None) and not killed_by_us:
        return after_stop
    return None


class TcpdumpCapture(Probe):
    """tcpdump per capture point (``capture:`` of experiment.yml): started in the background
    and waited for until it is listening; stopped with SIGINT (it flushes and prints its
    counters). A tcpdump that ended before the stop (killed, crashed) holds part of the run
    only: ``capture_stats`` says ``died`` and the repetition warns, and run/verdicts.run_summary
    judges the run invalid (issue 12: tests/faults found it passed as evidence)."""

    name = "capture"
    artifacts_dir: ClassVar[str] = ""

    def __init__(self) -> None:
        self._running: list[tuple[CaptureCommand, subprocess.Popen[bytes], Path]] = []

    @staticmethod
    def _cmds(rep: Rep) -> list[CaptureCommand]:
        net = rep.plan.net
        return [capture_command(cp, rep.out, ipv6=any(a.version == 6 for a in net.addresses(cp.point)))
                for cp in rep.body.capture]

    def commands(self, rep: Rep) -> list[Planned]:
        # SIGINT at stop: a signal, no command to list
        return [Planned(Cmd(cc.argv, node=cc.node), background=True) for cc in self._cmds(rep)]

    def artifacts(self) -> list[str]:
        return [n for cc, _, _ in self._running for n in (cc.path.name, log_name(cc))]

    def start(self, rep: Rep) -> None:
        for cc in self._cmds(rep):
            err = rep.out / log_name(cc)
            p = rep.backend.spawn(cc.node, cc.argv, stdout=subprocess.DEVNULL, stderr=err.open("wb"))
            self._running.append((cc, p, err))
        for cc, p, err in self._running:
            wait_for(lambda err=err, p=p: _file_has(err, "listening on") or p.poll() is not None,  # type: ignore[misc]
                     READY_TIMEOUT_S, f"tcpdump on {cc.node}:{cc.iface}")
            if p.poll() is not None:
                raise RuntimeError(f"tcpdump on {cc.node}:{cc.iface} failed: {err.read_text().strip()}")

    def stop(self, rep: Rep) -> None:
        stats = {}
        # a capture that ended before we stop it (killed, crashed) holds part of the run
        # only: it must not pass as evidence (issue 12: tests/faults found it did)
        died = {cc.path: p.poll() for cc, p, _ in self._running}
        for _, p, _ in self._running:
            rep.backend.signal(p, signal.SIGINT)
        for cc, p, err in self._running:
            killed = False
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                rep.backend.signal(p, signal.SIGKILL)
                p.wait(timeout=5)
                killed = True
            s = parse_tcpdump_stats(err.read_text(errors="replace"))
            exit_status = capture_died(died[cc.path], p.returncode, killed)
            if exit_status is not None:
                s["died"] = exit_status
                rep.warn(CAPTURE_INCOMPLETE, f"capture {cc.node}:{cc.iface} did not end as the run stopped it "
                         f"(exit status {exit_status}): the capture is incomplete")
            stats[f"{cc.node}:{cc.iface}"] = s
            if s.get("dropped"):
                rep.warn(CAPTURE_INCOMPLETE, f"capture {cc.node}:{cc.iface} dropped {s['dropped']} packets: "
                         "segment statistics are incomplete")
        rep.extra["capture_stats"] = stats

    @classmethod
    def analyze(cls, rep_dir: Path) -> pd.DataFrame:
        """tcpdump's counters per capture file, read back from its logs (``file``, ``captured``,
        ``received``, ``dropped``). The packets themselves are the analysis' (mptcplab/analysis,
        runner.analyze), which reads the capture files by their points."""
        rows = [{"file": log.name.removesuffix(LOG_SUFFIX) + ".pcap",
                 **parse_tcpdump_stats(log.read_text(errors="replace"))}
                for log in sorted(rep_dir.glob("capture-*" + LOG_SUFFIX))]
        return pd.DataFrame(rows, columns=["file", "captured", "received", "dropped"])
