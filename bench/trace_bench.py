"""Benchmark of trace replay against the fixed-rate mode (issue 37; not a test: shared, noisy
machines). Root.

For each trace given, the delay line replays it under a saturating UDP flood on a throwaway
two-namespace line (tracecheck.measure, what `mptcplab calibrate --trace` runs) and the
capture's 100 ms delivery series is compared with the trace: the windows beyond their bounds,
the mean |error| per window as a share of the mean window's capacity, the total error. Then
the same flood through the delay line's fixed-rate stage at the trace's mean rate, judged
against the same trace (meaningful for a constant trace, where the two stages promise the same
series: ``--baseline``, default const-24mbit). Each row also has the delay lines' CPU time
per Mbit/s forwarded (utime + stime of both directions' delay lines, /proc/<pid>/stat, over
the run: start-up and the flood), the cost of each release stage.

Usage (root, from the checkout):
  .venv/bin/python bench/trace_bench.py [--seconds 20] [--repeat 3] [--json out.json]
      [--baseline const-24mbit] [TRACE ...]    (default: const-24mbit verizon-lte-down-60s
      tmobile-umts-down-60s; names in traces/ or files)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from mptcplab.emulation.base import delayline_binary
from mptcplab.emulation.trace import load_trace, resolve_trace
from mptcplab.tracecheck import ReplayReport, measure, replay_queue_bytes

REPO = Path(__file__).resolve().parents[1]
DEFAULT_TRACES = ["const-24mbit", "verizon-lte-down-60s", "tmobile-umts-down-60s"]


def row(mode: str, trace: str, rep: ReplayReport, seconds: float) -> dict[str, Any]:
    mbit = (rep.delayline_bytes or 0) * 8 / 1e6
    return {
        "mode": mode, "trace": trace, "seconds": seconds, "windows": len(rep.windows), "windows_out": len(rep.bad),
        "mean_abs_error_share": round(rep.mean_abs_error_share, 5), "total_error": round(rep.total_error, 5),
        "ok": rep.ok, "delayline_cpu_s": rep.delayline_cpu_s, "mbit_forwarded": round(mbit, 1),
        "cpu_pct_core_per_mbps": round(100 * (rep.delayline_cpu_s or 0) / mbit, 4) if mbit else None,
        "load": round(os.getloadavg()[0], 2),
    }


def fmt(r: dict[str, Any]) -> str:
    return (f"{r['mode']:<6} {r['trace']:<24} {r['windows_out']:>3}/{r['windows']:<4} "
            f"{r['mean_abs_error_share']:>8.2%} {r['total_error']:>+9.3%} {r['mbit_forwarded']:>8.1f} "
            f"{r['cpu_pct_core_per_mbps']!s:>8} {r['load']:>5}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("traces", nargs="*", default=DEFAULT_TRACES)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--baseline", default="const-24mbit", help="the trace the fixed-rate stage is run against")
    ap.add_argument("--delay", default="10ms")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("trace_bench: run as root (namespaces)", file=sys.stderr)
        return 2
    binary = delayline_binary()
    rows: list[dict[str, Any]] = []
    print("mode   trace                    out/win  |err|/cap  total      Mbit  %core/Mbps  load")
    plan = [("trace", t) for t in a.traces] + [("rate", a.baseline)]
    for i in range(a.repeat):
        for mode, name in plan:  # interleaved: a host's drift spreads over every mode
            trace = load_trace(resolve_trace(name, REPO))
            queue = replay_queue_bytes(trace, 150_000)
            with tempfile.TemporaryDirectory(prefix="mpl-tracebench-") as wd:
                rep = measure(trace, binary, Path(wd), a.seconds, delay=a.delay, queue=queue,
                              fixed_rate=mode == "rate")
            r = row(mode, trace.name, rep, a.seconds) | {"round": i + 1}
            rows.append(r)
            print(fmt(r), flush=True)
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
