"""Benchmark: the share of one MPTCP connection (two subflows) against one TCP reno flow
through one shared bottleneck, with the subflows on reno (uncoupled, upstream's only
choice) and on mptcp_lia (RFC 6356 coupled, native/lia). RFC 6356's goal: the MPTCP
connection takes no more than one TCP flow would (a share of about 0.5 here); uncoupled
subflows take about 2/3.

Not a test: the numbers go into reports (docs/cc-lia.md). Runs the engine (root, netns).
Usage: .venv/bin/python bench/lia_shares.py [--reps 5] [--duration 6s] [--rate 20mbit] [--queue 50ms] [--capture]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml


def _run_lab(argv: list[str]) -> int:
    """``mptcplab run ...`` as a user types it, in its own process (the CLI's exit status)."""
    return subprocess.run([sys.executable, "-m", "mptcplab.cli", "run", *argv], check=False).returncode


#     client:eth1 - ra -+
#                       rm - server     the bottleneck: rm:eth3 (both flows cross it)
#     client:eth2 - rb -+
TOPO = {"name": "liabench", "topology": {
    "nodes": {n: {"kind": "linux", "image": f"mptcplab/{'router' if n.startswith('r') else 'host'}:latest"}
              for n in ("client", "server", "ra", "rb", "rm")},
    "links": [{"endpoints": list(e)} for e in (("client:eth1", "ra:eth1"), ("client:eth2", "rb:eth1"),
                                               ("ra:eth2", "rm:eth1"), ("rb:eth2", "rm:eth2"),
                                               ("rm:eth3", "server:eth1"))]}}


def experiment(a: argparse.Namespace) -> dict[str, Any]:
    flow = {"client": "client", "server": "server", "server_address": "server:eth1", "bind": "client:eth1",
            "duration": a.duration}
    return {
        "paths": {"A": "client:eth1", "B": "client:eth2"},
        "links": {"rm:eth3": {"rate": a.rate, **({"queue": a.queue} if a.queue else {})}},
        "nodes": {"client": {"role": "host", "mptcp": {"limits": {"subflows": 2}, "endpoints": [
                      {"address": "client:eth2", "flags": ["subflow"]}]}},
                  "server": {"role": "host", "mptcp": {"limits": {"subflows": 2}}},
                  "ra": {"role": "router"}, "rb": {"role": "router"}, "rm": {"role": "router"}},
        "traffic": {"flows": {"mp": {**flow, "mptcp": True, "cc": "mptcp_lia"},
                              "tcp": {**flow, "mptcp": False, "cc": "reno", "port": 5202}}},
        "calibration": {"enabled": False},
        **({"capture": [{"point": "client:eth1"}, {"point": "client:eth2"}]} if a.capture else {}),
        "repetitions": a.reps,
        "scenarios": [{"name": "mptcp_lia"},
                      {"name": "reno", "override": {"traffic": {"flows": {"mp": {"cc": "reno"}}}}}],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--duration", default="6s")
    ap.add_argument("--rate", default="20mbit")
    ap.add_argument("--queue", default=None, help="the bottleneck's queue (default: the engine's, 50 ms)")
    ap.add_argument("--capture", action="store_true", help="capture at the client (as the tests do)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        lab = Path(tmp) / "liabench"
        lab.mkdir()
        (lab / "topology.clab.yml").write_text(yaml.safe_dump(TOPO, sort_keys=False))
        (lab / "experiment.yml").write_text(yaml.safe_dump(experiment(a), sort_keys=False))
        rc = _run_lab([str(lab), "--results", str(Path(tmp) / "results")])
        if rc != 0:
            raise SystemExit(f"the run failed (exit {rc})")
        run = next((Path(tmp) / "results" / "liabench").glob("2*"))
        print(f"\nbottleneck {a.rate}, queue {a.queue or 'engine default (50 ms)'}, {a.duration} per run, "
              f"{a.reps} runs per variant, {'with' if a.capture else 'no'} capture")
        print(f"{'subflow cc':<10}  {'MPTCP share per run':<44}  median mean   sd     MPTCP/TCP Mbit/s (mean)")
        for sc in ("reno", "mptcp_lia"):
            recs = [json.loads(p.read_text()) for p in sorted((run / "scenarios" / sc).glob("rep*/rep.json"))]
            sh = [r["fairness"]["shares"]["mp"] for r in recs]
            g = {f: statistics.mean(next(x["goodput_mbps"] for x in r["flows"] if x["name"] == f) for r in recs)
                 for f in ("mp", "tcp")}
            print(f"{sc:<10}  {' '.join(f'{s:.3f}' for s in sh):<44}  {statistics.median(sh):.3f}  "
                  f"{statistics.mean(sh):.3f}  "
                  f"{statistics.stdev(sh) if len(sh) > 1 else 0:.3f}  {g['mp']:.2f} / {g['tcp']:.2f}")


if __name__ == "__main__":
    main()
