"""Benchmark of the reachability estimate (mptcplab/emulation/capacity.py) against
`mptcplab calibrate` (not a test: shared, noisy machines).

For each configuration (default: the papers' links, issue 13, and each scaled by the
factor the estimate suggests), the estimate's verdict before measuring, then calibrate
with tcpdump on both ends: does "fits" come out within tolerance and "beyond" out of it?
Rows carry the host's load average: numbers from a busy host are not the emulator's.

Usage (root):
  .venv/bin/python bench/reachability_bench.py [--config 400mbit:100ms ...] [--no-scaled] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from mptcplab.calibrate import CalibrateRequest, calibrate
from mptcplab.emulation.capacity import estimate
from mptcplab.emulation.hostprobe import netem_available
from mptcplab.emulation.linkmodel import DirectedLink, Endpoint, LinkShape
from mptcplab.emulation.select import select_emulator
from mptcplab.lab.machinefit import PAPER_CONFIGS
from mptcplab.lab.scale import nice_factor_at_most
from mptcplab.units import fmt_rate

A, B = Endpoint("a", "eth1"), Endpoint("b", "eth1")


def verdict(rate: str, delay: str, emulator: str) -> tuple[str, float]:
    s = LinkShape.parse(rate=rate, delay=delay)
    e = estimate([("line", DirectedLink(A, B, s, 1500), DirectedLink(B, A, s, 1500))], emulator)
    return e.verdict, e.fit_factor


def measure(rate: str, delay: str, emulator_name: str) -> dict[str, Any]:
    emulator = select_emulator(emulator_name, emulator_name == "netem")
    with tempfile.TemporaryDirectory(prefix="mplreach") as wd:
        ok, checks = calibrate(CalibrateRequest(rate=rate, delay=delay, capture=True), emulator, Path(wd),
                               log=lambda _: None)
    return {"within": ok, "out": [f"{c.quantity} {c.measured}" for c in checks if not c.ok],
            "goodput_mbps": next((c.measured for c in checks if c.quantity == "goodput_mbps"), None)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", action="append", help="rate:delay, e.g. 400mbit:100ms (default: the papers')")
    p.add_argument("--no-scaled", action="store_true", help="do not also measure each at its suggested scale")
    p.add_argument("--json", type=Path)
    a = p.parse_args()
    if os.geteuid() != 0:
        print("needs root (network namespaces)", file=sys.stderr)
        return 3
    emulator = "netem" if netem_available() else "nfqueue"
    configs = [tuple(c.split(":", 1)) for c in a.config] if a.config else [(r, d) for _, r, d in PAPER_CONFIGS]
    rows = []
    for rate, delay in configs:
        todo = [(rate, delay, 1.0)]
        v, fit = verdict(rate, delay, emulator)
        if fit < 1 and not a.no_scaled:
            f = nice_factor_at_most(fit)
            todo.append((fmt_rate(round(LinkShape.parse(rate=rate).rate_bps * f)), delay, f))  # type: ignore[operator]
        for r, d, f in todo:
            v, _ = verdict(r, d, emulator)
            load = os.getloadavg()[0]
            m = measure(r, d, emulator)
            row = {"rate": r, "delay": d, "scale": f, "estimate": v, "load": round(load, 1), **m}
            rows.append(row)
            print(f"{r:>9} {d:>6} (x{f:g}): estimate {v:<8} measured {'within' if m['within'] else 'OUT':<6} "
                  f"goodput {m['goodput_mbps'] or 0:7.1f} Mbit/s  load {load:4.1f}  {'; '.join(m['out'])}",
                  flush=True)
    if a.json:
        a.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
