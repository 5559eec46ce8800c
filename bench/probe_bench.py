"""Benchmark: what the probes cost. Goodput of one MPTCP flow over 2 x 100 Mbit/s
(the probes' two-path lab) with every probe on (tcp_probe, nstat, mptcp_monitor) and
with none, runs alternating so the shared host's load hits both alike.

Not a test: these machines are shared and noisy; the numbers go into the report.
Usage: .venv/bin/python bench/probe_bench.py [-n 4] [--duration 5s] [--rate 100mbit]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.integration.probelab import write  # noqa: E402 - after the path above

ALL = {"tcp_probe": True, "nstat": True, "mptcp_monitor": True}


def one(root: Path, name: str, probes: dict[str, bool], rate: str, duration: str) -> dict[str, float]:
    lab = write(root / "labs" / name, "probebench", rate=rate, duration=duration, probes=probes)
    results = root / "results" / name
    p = subprocess.run([sys.executable, "-m", "mptcplab.cli", "run", str(lab), "--quick", "--results", str(results)],
                       cwd=REPO, capture_output=True, text=True)
    rep = next((results / "probebench").glob("2*/scenarios/two-paths/rep1/rep.json"))
    r = json.loads(rep.read_text())
    tp = (r.get("probes") or {}).get("tcp_probe") or {}
    return {"goodput": r["goodput_mbps"], "rc": p.returncode, "samples": tp.get("samples", 0),
            "lost": tp.get("lost_events", 0),
            "cpu_client": (r.get("cpu") or {}).get("client") or 0.0}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=4, help="runs per setting")
    ap.add_argument("--duration", default="5s")
    ap.add_argument("--rate", default="100mbit")
    a = ap.parse_args()
    on: list[dict[str, float]] = []
    off: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as wd:
        for i in range(a.n):
            off.append(one(Path(wd), f"off{i}", {}, a.rate, a.duration))
            on.append(one(Path(wd), f"on{i}", ALL, a.rate, a.duration))
            print(f"pair {i + 1}: off {off[-1]['goodput']:.1f} Mbit/s, on {on[-1]['goodput']:.1f} Mbit/s "
                  f"({on[-1]['samples']:.0f} tcp_probe samples, {on[-1]['lost']:.0f} lost)", flush=True)
    print(f"2 x {a.rate}, {a.duration} per run, n={a.n} per setting (alternating)")
    for name, xs in (("probes off", off), ("probes on", on)):
        g = [x["goodput"] for x in xs]
        print(f"  {name:10} goodput median {statistics.median(g):6.1f} Mbit/s  min {min(g):6.1f}  max {max(g):6.1f}"
              f"  iperf3 client CPU median {statistics.median(x['cpu_client'] for x in xs):5.1f}%")
    d = statistics.median(x["goodput"] for x in on) / statistics.median(x["goodput"] for x in off) - 1
    print(f"  on vs off: {d * 100:+.1f}% (median goodput)")


if __name__ == "__main__":
    main()
