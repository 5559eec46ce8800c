#!/usr/bin/env python3
"""The dynamic-threshold controllers (Algorithms 3 and 4) against the default scheduler,
and how fast a decision takes effect (issue 14).

A two-path lab (path A 40 Mbit/s 1 ms each way, path B 2 Mbit/s 50 ms each way; MPTCP
upload bound to A, the join from client:eth2 on B, cubic) run with ``mptcplab run``
(the real engine: namespaces, delay lines, capture, analysis), captured at the sender's
two interfaces so MP_PRIO is timed where it leaves. Scenarios: no controller,
dynamic_threshold, dynamic_threshold_ext. Prints per scenario the goodput over the
repetitions, and per controller repetition: the first demotion's time, how long the
step took to sample and decide before its command started, how long the command ran
(events.csv), when MP_PRIO left on B after the command started, and when B's last data
segment left (Algorithm 3).

    sudo .venv/bin/python bench/dynthresh_bench.py               # 3 repetitions of 8 s
    sudo .venv/bin/python bench/dynthresh_bench.py --reps 5 --duration 10
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd
import yaml


def _run_lab(argv: list[str]) -> int:
    """``mptcplab run ...`` as a user types it, in its own process (the CLI's exit status)."""
    return subprocess.run([sys.executable, "-m", "mptcplab.cli", "run", *argv], check=False).returncode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


TOPO = {
    "nodes": {n: {"kind": "linux", "image": f"mptcplab/{'router' if n.startswith('r') else 'host'}:latest"}
              for n in ("client", "server", "ra", "rb")},
    "links": [{"endpoints": ["client:eth1", "ra:eth1"]}, {"endpoints": ["client:eth2", "rb:eth1"]},
              {"endpoints": ["rb:eth2", "ra:eth3"]}, {"endpoints": ["ra:eth2", "server:eth1"]}],
}


def experiment(duration: float, reps: int) -> dict[str, Any]:
    ctl = {"node": "client", "interval": "100ms"}
    return {
        "paths": {"A": "client:eth1", "B": "client:eth2"},
        "nodes": {
            "client": {"role": "host", "mptcp": {"limits": {"subflows": 2, "add_addr_accepted": 0},
                                                 "endpoints": [{"address": "client:eth2", "flags": ["subflow"]}]}},
            "server": {"role": "host", "mptcp": {"limits": {"subflows": 2, "add_addr_accepted": 0}}},
            "ra": {"role": "router"}, "rb": {"role": "router"},
        },
        "links": {"client:eth1": {"rate": "40mbit", "delay": "1ms"},
                  "client:eth2": {"rate": "2mbit", "delay": "50ms"}},
        "traffic": {"flows": {"main": {"client": "client", "server": "server", "server_address": "server:eth1",
                                       "bind": "client:eth1", "mptcp": True, "duration": f"{duration}s",
                                       "cc": "cubic"}}},
        "capture": [{"point": "client:eth1"}, {"point": "client:eth2"}],
        "calibration": {"enabled": False},
        "repetitions": reps,
        "scenarios": [
            {"name": "default"},
            {"name": "dt", "override": {"controllers": [{"name": "dynamic_threshold", **ctl}]}},
            {"name": "dt-ext", "override": {"controllers": [{"name": "dynamic_threshold_ext", **ctl}]}},
        ],
    }


def fmt(xs: list[float], unit: str = "") -> str:
    if not xs:
        return "-"
    if len(xs) == 1:
        return f"{xs[0]:.3f}{unit}"
    return f"median {statistics.median(xs):.3f}{unit} (min {min(xs):.3f}, max {max(xs):.3f}, n={len(xs)})"


def decisions(rep: Path) -> list[dict[str, str]]:
    with (rep / "events.csv").open() as f:
        return [r for r in csv.DictReader(f) if r["source"].startswith("controller:")]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--duration", type=float, default=8.0, help="seconds per transfer")
    ap.add_argument("--keep", type=Path, help="write the lab and results here (default: a temporary directory)")
    a = ap.parse_args()
    work = a.keep or Path(tempfile.mkdtemp(prefix="dynthresh-bench-"))
    lab = work / "dynthresh_bench"
    lab.mkdir(parents=True, exist_ok=True)
    (lab / "topology.clab.yml").write_text(yaml.safe_dump({"name": lab.name, "topology": TOPO}, sort_keys=False))
    (lab / "experiment.yml").write_text(yaml.safe_dump(experiment(a.duration, a.reps), sort_keys=False))
    rc = _run_lab([str(lab), "--results", str(work / "results")])
    run = (work / "results" / lab.name / "latest").resolve()
    summary = json.loads((run / "summary.json").read_text())
    print(f"\nrun {run} (exit {rc}; valid: {summary['valid']} {summary['invalid_reasons'] or ''})")
    good: dict[str, list[float]] = {}
    for s in summary["scenarios"]:
        if s.get("goodput_mbps") is not None:
            good.setdefault(s["name"], []).append(s["goodput_mbps"])
    for name, xs in good.items():
        print(f"{name:8s} goodput Mbit/s: {fmt(xs)}")
    for name in ("dt", "dt-ext"):
        first_at, late, took, prio, last_b, nrows = [], [], [], [], [], []
        for s in (x for x in summary["scenarios"] if x["name"] == name):
            rep = run / s["dir"]
            rows = decisions(rep)
            nrows.append(float(len(rows)))
            demote = next((r for r in rows if "decision=demote" in r["detail"]), None)
            if demote is None or not demote["actual_s"]:
                continue
            first_at.append(float(demote["planned_s"]))
            late.append((float(demote["actual_s"]) - float(demote["planned_s"])) * 1000)
            took.append(float(demote["duration_ms"]))
            at = float(demote["capture_s"])
            ev = pd.read_csv(rep / "mptcp_events.csv")
            p = ev[(ev["event"] == "MP_PRIO") & (ev["path"].astype(str) == "B") & (ev["detail"] == "backup=1")]
            if not p.empty:
                prio.append((float(p["t"].min()) - at) * 1000)
            if name == "dt":
                sub = pd.read_csv(rep / "subflows.csv")
                b = sub[sub["path"].astype(str) == "B"]
                if not b.empty:
                    last_b.append((float(b["last_data_t"].max()) - at) * 1000)
        print(f"\n{name}: decisions per repetition {fmt(nrows)}")
        print(f"  first demotion at (s after the flow's start): {fmt(first_at)}")
        print(f"  from the step's start to its command (ss in the namespace + decision, ms): {fmt(late)}")
        print(f"  the command ran for (ms): {fmt(took)}")
        print(f"  MP_PRIO backup=1 left on B after the command started (ms): {fmt(prio)}")
        if last_b:
            print(f"  B's last data segment left after the command started (ms): {fmt(last_b)}")
    ext = [r for s in summary["scenarios"] if s["name"] == "dt-ext" for r in decisions(run / s["dir"])]
    verbs = [m.group(1) for r in ext if (m := re.search(r"decision=(\S+)", r["detail"]))]
    counts = ", ".join(f"{v} {verbs.count(v)}" for v in dict.fromkeys(verbs))
    print(f"\ndt-ext decisions over all repetitions: {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
