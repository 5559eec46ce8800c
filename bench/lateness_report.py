"""Where a run's delay lines lost time: a table from the records, rerunnable on any run.

Not a benchmark: it reads a finished run (summary.json, each repetition's
``delay_line_stats``) and runs nothing. For every delay line of every repetition it
sorts the worst stall (``lateness_us.max``) into one of two places:

* ``verdict``: a verdict call lasted at least half of it (``verdict_max_us`` >=
  ``VERDICT_SHARE`` x (lateness max - slot)): the line was inside the kernel's
  receive path of the packets it released (on-CPU), or preempted there
  (``verdict_offcpu_max_us`` says how much, for verdicts of >= 32 packets only);
* ``wake``: no verdict call was that long, so the line was late out of its sleep:
  a timer wake-up that waited for a CPU (another task's kernel code on a
  PREEMPT_NONE kernel, the other delay lines at the same SCHED_FIFO priority,
  softirq work, or the hypervisor); lines with a handful of packets can only stall so.

The counters are per-daemon aggregates (max, p99), so the attribution is of the
worst stall only; with the delay line's ``wake_late_us`` (when present) the sleep's
own overshoot is shown too, and with its ``stalls`` log (the 8 longest verdict calls
and late wake-ups, with their CLOCK_MONOTONIC time) a last table says, per kind, how
many overlapped a stall of another line of the same repetition (host-wide) and how
much of the verdict calls was off-CPU (``--offcpu-min-batch 1`` measures every call).
"busy" lines carried >= ``--busy`` packets; a repetition's
"stalled" lines had a stall >= ``--stall-ms``: when they stall together, the stall was
host-wide (both CPUs unavailable), not one line's own work.

Usage:
  .venv/bin/python bench/lateness_report.py results/<lab>/<run-id> [--stall-ms 2] [--busy 1000]
"""

from __future__ import annotations

import argparse
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mptcplab.emulation.nfqueue import max_lateness_p99_us
from mptcplab.results.fmt import md_table
from mptcplab.results.read import load_summary

#: a verdict call at least this share of the worst stall explains it
VERDICT_SHARE = 0.5
FLOOD_PREFIX = "flood"


@dataclass(frozen=True)
class Line:
    """One delay line of one repetition, from its stats."""
    scenario: str
    rep: int
    name: str
    delay_us: float
    rate_bps: int
    packets: int
    p50: float
    p99: float
    late_max: float
    verdict_max: float
    offcpu_max: float | None
    wake_late_max: float | None
    slot_us: float
    stalls: tuple[dict[str, Any], ...] = ()

    @property
    def over(self) -> bool:
        return self.p99 > max_lateness_p99_us(self.delay_us)

    @property
    def where(self) -> str:
        return "verdict" if self.verdict_max >= VERDICT_SHARE * (self.late_max - self.slot_us) else "wake"


def line_of(scenario: str, rep: int, name: str, s: dict[str, Any]) -> Line:
    late, wake = s.get("lateness_us") or {}, s.get("wake_late_us") or {}
    return Line(scenario, rep, name, float(s.get("delay_us") or 0), int(s.get("rate_bps") or 0),
                int(s.get("packets") or 0), float(late.get("p50") or 0), float(late.get("p99") or 0),
                float(late.get("max") or 0), float(s.get("verdict_max_us") or 0),
                s.get("verdict_offcpu_max_us"), wake.get("max"), float(s.get("slot_us") or 0),
                tuple(s.get("stalls") or ()))


def read_lines(run_dir: Path) -> list[Line]:
    out = []
    for r in load_summary(run_dir).scenarios:
        for name, s in (r.delay_line_stats or {}).items():
            if s:
                out.append(line_of(r.name, r.rep, name, s))
    return out


def _med(xs: list[float]) -> str:
    return f"{statistics.median(xs):.0f}" if xs else "-"


def _max(xs: list[float]) -> str:
    return f"{max(xs):.0f}" if xs else "-"


def group_row(key: str, ls: list[Line]) -> list[Any]:
    where = Counter(x.where for x in ls if x.over)
    off = [x.offcpu_max for x in ls if x.offcpu_max]
    wake = [x.wake_late_max for x in ls if x.wake_late_max is not None]
    return [key, len(ls), sum(x.over for x in ls), where["verdict"], where["wake"],
            _med([x.p50 for x in ls]), _med([x.p99 for x in ls]), _max([x.p99 for x in ls]),
            _max([x.late_max for x in ls]), _med([x.verdict_max for x in ls]), _max([x.verdict_max for x in ls]),
            f"{len(off)}: {_max(off)}", _max(wake)]


GROUP_HEADER = ["", "lines", "over tol.", "worst in verdict", "worst in wake-up", "p50 med", "p99 med",
                "p99 max", "late max", "verdict_max med", "verdict_max max", "offcpu (n: max)", "wake_late max"]


def by(lines: list[Line], key: Any, sort: bool = True) -> dict[str, list[Line]]:
    """Lines grouped by ``key``, sorted by it, or in first-seen order (a lab runs its
    scenarios one after the other, so the records' order is the run's time axis)."""
    out: dict[str, list[Line]] = defaultdict(list)
    for x in lines:
        out[key(x)].append(x)
    return dict(sorted(out.items())) if sort else dict(out)


def rep_table(lines: list[Line], stall_us: float, busy: int) -> str:
    """Per repetition: busy lines, stalled lines; then how stalls co-occur."""
    reps = by(lines, lambda x: f"{x.scenario}#{x.rep}")
    rows: dict[tuple[int, int], list[int]] = defaultdict(lambda: [0, 0])
    for ls in reps.values():
        k = (sum(x.packets >= busy for x in ls), sum(x.late_max >= stall_us for x in ls))
        rows[k][0] += 1
        rows[k][1] += any(x.over for x in ls)
    return md_table(["busy lines", "lines with a stall", "repetitions", "of them invalid (lateness)"],
                    [[b, s, n, inv] for (b, s), (n, inv) in sorted(rows.items())])


def _overlaps(a: dict[str, Any], b: dict[str, Any]) -> bool:
    a0, b0 = float(a["at_ms"]), float(b["at_ms"])
    return a0 <= b0 + float(b["us"]) / 1000 and b0 <= a0 + float(a["us"]) / 1000


def stall_log_table(lines: list[Line], stall_us: float) -> str | None:
    """From the delay lines' stall logs: per kind, the stalls >= stall_us, how many
    overlapped one of another line of the same repetition, and their off-CPU share."""
    if not any(x.stalls for x in lines):
        return None
    rows: dict[str, list[Any]] = {}
    for ls in by(lines, lambda x: f"{x.scenario}#{x.rep}").values():
        for x in ls:
            for s in x.stalls:
                if float(s["us"]) < stall_us:
                    continue
                others = [o for y in ls if y is not x for o in y.stalls if float(o["us"]) >= stall_us]
                shared = any(_overlaps(s, o) for o in others)
                r = rows.setdefault(str(s["kind"]), [[], 0, []])
                r[0].append(float(s["us"]))
                r[1] += shared
                if s.get("offcpu_us") is not None and float(s["us"]) > 0:
                    r[2].append(float(s["offcpu_us"]) / float(s["us"]))
    return md_table(["kind", "stalls", "median us", "max us", "with another line's", "off-CPU share (n: median)"],
                    [[k, len(us), _med(us), _max(us), shared,
                      f"{len(off)}: {statistics.median(off):.2f}" if off else "-"]
                     for k, (us, shared, off) in sorted(rows.items())])


def report(lines: list[Line], stall_us: float, busy: int) -> str:
    reps = by(lines, lambda x: f"{x.scenario}#{x.rep}")
    bad = sum(any(x.over for x in ls) for ls in reps.values())
    parts = [f"{len(lines)} delay lines in {len(reps)} repetitions; {sum(x.over for x in lines)} over "
             f"tolerance in {bad} repetitions; lateness in us",
             "", "By link (one-way delay, rate):",
             md_table(GROUP_HEADER, [group_row(k, v) for k, v in by(
                 lines, lambda x: f"{x.delay_us / 1000:g} ms, {x.rate_bps / 1e6:g} Mbit/s").items()]),
             "", f"By load of the line (busy: >= {busy} packets):",
             md_table(GROUP_HEADER, [group_row(k, v) for k, v in by(
                 lines, lambda x: "busy" if x.packets >= busy else "idle").items()]),
             "", "By scenario, in run order:",
             md_table(GROUP_HEADER, [group_row(k, v) for k, v in by(lines, lambda x: x.scenario, sort=False).items()]),
             "", "UDP flood scenarios against the others:",
             md_table(GROUP_HEADER, [group_row(k, v) for k, v in by(
                 lines, lambda x: "flood" if x.scenario.startswith(FLOOD_PREFIX) else "no flood").items()]),
             "", f"Repetitions by busy lines and by lines with a stall >= {stall_us / 1000:g} ms "
             "(stalls together: host-wide):",
             rep_table(lines, stall_us, busy)]
    log = stall_log_table(lines, stall_us)
    if log:
        parts += ["", f"Stall logs (stalls >= {stall_us / 1000:g} ms):", log]
    return "\n".join(parts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--stall-ms", type=float, default=2.0, help="a lateness max at least this is a stall")
    ap.add_argument("--busy", type=int, default=1000, help="packets that make a line busy")
    a = ap.parse_args()
    print(report(read_lines(a.run_dir), a.stall_ms * 1000, a.busy))


if __name__ == "__main__":
    main()
