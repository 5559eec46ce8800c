#!/usr/bin/env python3
"""Scheduler precision: actual - planned over N no-op events (issue 11 acceptance).

The events go through the real scheduler thread (mptcplab/timeline/scheduler.py) with
an executor that does nothing, so what is measured is the wake-up: when the thread
starts an event relative to its planned time, on time.time() as events.csv records it.
Run as root to get the SCHED_FIFO thread a run gets (else it says it ran unprivileged).

    sudo .venv/bin/python bench/timeline_bench.py                    # 1000 events, 5 ms apart
    .venv/bin/python bench/timeline_bench.py --events 200 --spacing 0.01 --no-spin
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mptcplab.timeline.env import Resolved  # noqa: E402
from mptcplab.timeline.scheduler import DEFAULT_LEAD_S, RT_PRIO, Outcome, Scheduler  # noqa: E402


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1000)
    ap.add_argument("--spacing", type=float, default=0.005, help="seconds between events")
    ap.add_argument("--no-spin", action="store_true", help="sleep only (lead 0): what spinning buys")
    ap.add_argument("--no-rt", action="store_true", help="normal scheduling: what SCHED_FIFO buys")
    a = ap.parse_args()
    sched = Scheduler(lambda item: Outcome(0, "", ""), lead_s=0.0 if a.no_spin else DEFAULT_LEAD_S,
                      rt_prio=0 if a.no_rt else RT_PRIO)
    items = [Resolved(0.05 + i * a.spacing, "noop", str(i)) for i in range(a.events)]
    zero = threading.Event()
    t0 = time.time()
    sched.start(items, zero, lambda: t0)
    zero.set()
    time.sleep(0.05 + a.events * a.spacing + 0.5)
    records = sched.stop()
    late = [(r.actual_s - r.planned_s) * 1000 for r in records if r.actual_s is not None]
    print(f"{len(late)} of {a.events} events, {a.spacing * 1000:g} ms apart, "
          f"{'sleep + spin' if sched.realtime and not a.no_spin else 'sleep only'}, "
          f"thread {'SCHED_FIFO' if sched.realtime else 'normal priority'}")
    print(f"actual - planned (ms): min {min(late):.3f}  p50 {statistics.median(late):.3f}  "
          f"p90 {pct(late, 90):.3f}  p99 {pct(late, 99):.3f}  max {max(late):.3f}")
    print(f"early (< 0): {sum(1 for x in late if x < 0)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
