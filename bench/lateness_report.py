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

With the repetitions' ``host_cpu`` (the host's /proc/stat and PSI over the traffic, since
2026-11-24) a table puts each repetition's worst lateness beside the CPU time the hypervisor
stole (steal), softirq and CPU pressure, and a Spearman rank correlation across the run's
repetitions says whether the repetitions with more steal were the late ones. A line is over
tolerance as the run judges it (``nfqueue.lateness_problem``: p99, or p50 for a line of
<= 100 packets).

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

import pandas as pd

from mptcplab.emulation.nfqueue import lateness_problem
from mptcplab.record.model import HostCpu
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
    #: over tolerance, as the run judges it
    over: bool = False

    @property
    def where(self) -> str:
        return "verdict" if self.verdict_max >= VERDICT_SHARE * (self.late_max - self.slot_us) else "wake"


def line_of(scenario: str, rep: int, name: str, s: dict[str, Any]) -> Line:
    late, wake = s.get("lateness_us") or {}, s.get("wake_late_us") or {}
    return Line(scenario, rep, name, float(s.get("delay_us") or 0), int(s.get("rate_bps") or 0),
                int(s.get("packets") or 0), float(late.get("p50") or 0), float(late.get("p99") or 0),
                float(late.get("max") or 0), float(s.get("verdict_max_us") or 0),
                s.get("verdict_offcpu_max_us"), wake.get("max"), float(s.get("slot_us") or 0),
                tuple(s.get("stalls") or ()), lateness_problem(s) is not None)


def rep_key(scenario: str, rep: int) -> str:
    return f"{scenario}#{rep}"


def read_run(run_dir: Path) -> tuple[list[Line], dict[str, HostCpu | None]]:
    """The run's delay lines, and each repetition's host CPU accounting (None: not recorded)."""
    lines: list[Line] = []
    host: dict[str, HostCpu | None] = {}
    for r in load_summary(run_dir).scenarios:
        host[rep_key(r.name, r.rep)] = r.host_cpu
        for name, s in (r.delay_line_stats or {}).items():
            if s:
                lines.append(line_of(r.name, r.rep, name, s))
    return lines, host


def read_lines(run_dir: Path) -> list[Line]:
    return read_run(run_dir)[0]


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
    reps = by(lines, lambda x: rep_key(x.scenario, x.rep))
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
    for ls in by(lines, lambda x: rep_key(x.scenario, x.rep)).values():
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


def host_frame(lines: list[Line], host: dict[str, HostCpu | None]) -> pd.DataFrame:
    """One row per repetition with delay lines: its worst p99 and stall (us), lines over
    tolerance, and over its traffic the stolen, softirq and CPU-pressure milliseconds
    (NaN where the record has no ``host_cpu``)."""
    rows: list[dict[str, Any]] = []
    for key, ls in by(lines, lambda x: rep_key(x.scenario, x.rep), sort=False).items():
        hc = host.get(key)
        share = hc.steal_share if hc is not None else None
        rows.append({"rep": key, "lines": len(ls), "over": sum(x.over for x in ls),
                     "p99_max_us": max(x.p99 for x in ls), "stall_max_us": max(x.late_max for x in ls),
                     "steal_ms": hc.total.steal_ms if hc else None,
                     "steal_pct": share * 100 if share is not None else None,
                     "softirq_ms": hc.total.softirq_ms if hc else None,
                     "psi_some_ms": hc.psi_cpu_some_us / 1000 if hc and hc.psi_cpu_some_us is not None else None,
                     "interval_s": hc.interval_s if hc else None})
    return pd.DataFrame(rows, columns=["rep", "lines", "over", "p99_max_us", "stall_max_us", "steal_ms",
                                       "steal_pct", "softirq_ms", "psi_some_ms", "interval_s"], dtype=object)


def spearman(x: pd.Series, y: pd.Series) -> float | None:
    """Spearman's rank correlation (Pearson's on average ranks) of the pairs where both are
    known; None with fewer than 3 pairs or a constant side (steal in 10 ms ticks is often 0)."""
    both = pd.DataFrame({"x": pd.to_numeric(x), "y": pd.to_numeric(y)}).dropna()
    if len(both) < 3 or both["x"].nunique() < 2 or both["y"].nunique() < 2:
        return None
    ranks = both.rank()
    return float(ranks["x"].corr(ranks["y"]))


def _num(v: Any, fmt: str) -> str:
    return "-" if v is None or pd.isna(v) else format(v, fmt)


def host_cpu_table(lines: list[Line], host: dict[str, HostCpu | None]) -> str | None:
    """Per repetition, in run order: its lateness beside the host's CPU accounting over its
    traffic; then the rank correlations across repetitions. None: no record has ``host_cpu``."""
    df = host_frame(lines, host)
    known = df[df["steal_ms"].notna()]
    if known.empty:
        return None
    table = md_table(["repetition", "lines", "over tol.", "p99 max us", "worst stall us", "steal ms",
                      "steal % of CPUs", "softirq ms", "PSI cpu some ms", "traffic s"],
                     [[r.rep, r.lines, r.over, _num(r.p99_max_us, ".0f"), _num(r.stall_max_us, ".0f"),
                       _num(r.steal_ms, ".0f"), _num(r.steal_pct, ".2f"), _num(r.softirq_ms, ".0f"),
                       _num(r.psi_some_ms, ".0f"), _num(r.interval_s, ".1f")] for r in df.itertuples()])

    def rho(a: str, b: str) -> str:
        v = spearman(known[a], known[b])
        return "undefined (fewer than 3 repetitions, or one side constant)" if v is None else f"{v:+.2f}"

    return "\n".join([table, "", f"Spearman rank correlation over the {len(known)} repetitions with host_cpu: "
                      f"steal vs p99 max {rho('steal_ms', 'p99_max_us')}; steal vs worst stall "
                      f"{rho('steal_ms', 'stall_max_us')}; PSI cpu some vs worst stall "
                      f"{rho('psi_some_ms', 'stall_max_us')}"])


def report(lines: list[Line], stall_us: float, busy: int, host: dict[str, HostCpu | None] | None = None) -> str:
    reps = by(lines, lambda x: rep_key(x.scenario, x.rep))
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
    cpu = host_cpu_table(lines, host or {})
    if cpu:
        parts += ["", "Per repetition, in run order: lateness and the host's CPU over the traffic "
                  "(/proc/stat steal and softirq, summed over CPUs; PSI):", cpu]
    return "\n".join(parts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--stall-ms", type=float, default=2.0, help="a lateness max at least this is a stall")
    ap.add_argument("--busy", type=int, default=1000, help="packets that make a line busy")
    a = ap.parse_args()
    lines, host = read_run(a.run_dir)
    print(report(lines, a.stall_ms * 1000, a.busy, host))


if __name__ == "__main__":
    main()
