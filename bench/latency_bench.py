"""Benchmark of mptcplab-latency on an unshaped veth (not a test: shared, noisy machines).

Two namespaces joined by one veth pair, no shaping. For MPTCP and TCP:
  - bulk: the tool's highest rate (8 KB blocks back to back, autotuned buffers), next to
    iperf3 with the same 8 KB writes (mptcpize for MPTCP) run right after it, so a slow
    tool shows as a ratio and not as host load;
  - paced at --paced-mbit (default 100): the rate the tool achieved and its delay floor
    (p50/p99 per-block delay with no link delay: the tool's own latency, what a lab's
    delays are measured on top of);
with CPU seconds of the sender and the receiver (rusage of the processes) per run.
Each measurement is repeated --reps times; rows give the median and the best, and the
load average, because numbers from a busy host are not the tool's.

Usage (root): .venv/bin/python bench/latency_bench.py [--seconds 3] [--reps 3]
                  [--paced-mbit 100] [--offloads on|off] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mptcplab.emulation.testline import ADDR, TwoNodeLine
from mptcplab.tools.latency import LatencyFiles, LatencyParams, analyze, latency_binary
from mptcplab.tools.latency.run import run_pair


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def tool_run(line: TwoNodeLine, work: Path, tag: str, mptcp: bool, seconds: float,
             rate_bps: float | None) -> dict[str, Any]:
    p = LatencyParams(server_address=ADDR["b"], port=5501, mptcp=mptcp, duration_s=seconds, rate_bps=rate_bps)
    files = LatencyFiles.in_dir(work, tag)
    cpu0 = children_cpu()
    out = run_pair(p, files, lambda a: line.host_argv("b", a), lambda a: line.host_argv("a", a))
    cpu = children_cpu() - cpu0
    if not out.ok:
        raise RuntimeError(f"{tag}: {out.server_stderr.strip()} {out.client_stderr.strip()}")
    r = analyze(files)
    return {"goodput_mbps": r.rate.received_bps / 1e6, "app_mbps": r.rate.sent_bps / 1e6,
            "delay_p50_ms": r.delay.p50_ms, "delay_p99_ms": r.delay.p99_ms, "delay_max_ms": r.delay.max_ms,
            "blocked_share": r.blocked.share, "cpu_s_both_ends": cpu,
            "mptcp_active": r.client.mptcp_active, "subflows": r.client.subflow_count}


def iperf3_run(line: TwoNodeLine, mptcp: bool, seconds: float) -> dict[str, Any]:
    wrap = ["mptcpize", "run"] if mptcp else []
    server = subprocess.Popen(line.host_argv("b", [*wrap, "iperf3", "-s", "-1", "-B", ADDR["b"], "-p", "5502"]),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        p = line.sh("a", *wrap, "iperf3", "-c", ADDR["b"], "-p", "5502", "-t", f"{seconds:g}", "-l", "8192", "-J",
                    check=False, timeout=seconds + 30)
        data = json.loads(p.stdout)
        return {"goodput_mbps": data["end"]["sum_received"]["bits_per_second"] / 1e6}
    finally:
        if server.poll() is None:
            server.kill()
        server.wait(timeout=5)


def summarise(rows: Sequence[dict[str, Any]], key: str) -> dict[str, float]:
    vals = [float(r[key]) for r in rows]
    return {"median": statistics.median(vals), "best": max(vals), "worst": min(vals)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--paced-mbit", type=float, default=100.0)
    ap.add_argument("--offloads", choices=("on", "off"), default="off",
                    help="off as the labs run (MTU-sized segments), on for the veth's best")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("latency_bench: needs root (network namespaces)", file=sys.stderr)
        return 2
    latency_binary()  # built? (one line if not)
    results: dict[str, Any] = {"load_before": os.getloadavg(), "seconds": a.seconds, "offloads": a.offloads,
                               "rows": {}}
    with TwoNodeLine(mtu=1500, offloads_off=a.offloads == "off") as line, \
            tempfile.TemporaryDirectory(prefix="latbench") as tmp:
        work = Path(tmp)
        for proto, mptcp in (("mptcp", True), ("tcp", False)):
            bulk, ref, paced = [], [], []
            for i in range(a.reps):
                bulk.append(tool_run(line, work, f"{proto}-bulk-{i}", mptcp, a.seconds, None))
                ref.append(iperf3_run(line, mptcp, a.seconds))
                paced.append(tool_run(line, work, f"{proto}-paced-{i}", mptcp, a.seconds, a.paced_mbit * 1e6))
            results["rows"][proto] = {
                "bulk_goodput_mbps": summarise(bulk, "goodput_mbps"),
                "bulk_cpu_s_per_gbit": statistics.median(
                    r["cpu_s_both_ends"] / (r["goodput_mbps"] * a.seconds / 1000) for r in bulk),
                "iperf3_goodput_mbps": summarise(ref, "goodput_mbps"),
                "paced_target_mbps": a.paced_mbit,
                "paced_app_mbps": summarise(paced, "app_mbps"),
                "paced_goodput_mbps": summarise(paced, "goodput_mbps"),
                "paced_delay_p50_ms": summarise(paced, "delay_p50_ms"),
                "paced_delay_p99_ms": summarise(paced, "delay_p99_ms"),
                "mptcp_active": all(r["mptcp_active"] == mptcp for r in bulk + paced),
                "runs": {"bulk": bulk, "iperf3": ref, "paced": paced},
            }
    results["load_after"] = os.getloadavg()
    for proto, row in results["rows"].items():
        b, r = row["bulk_goodput_mbps"], row["iperf3_goodput_mbps"]
        print(f"{proto:5s} bulk {b['median']:7.1f} Mbit/s (best {b['best']:.1f}, worst {b['worst']:.1f}), "
              f"iperf3 8K writes {r['median']:7.1f} (best {r['best']:.1f}); "
              f"CPU {row['bulk_cpu_s_per_gbit']:.2f} s per Gbit (both ends)")
        print(f"      paced {a.paced_mbit:g} Mbit/s: app {row['paced_app_mbps']['median']:.2f}, goodput "
              f"{row['paced_goodput_mbps']['median']:.2f} Mbit/s, delay p50 {row['paced_delay_p50_ms']['median']:.3f}"
              f" ms, p99 {row['paced_delay_p99_ms']['median']:.3f} ms; MPTCP as asked: {row['mptcp_active']}")
    print(f"load average before {results['load_before'][0]:.1f}, after {results['load_after'][0]:.1f} "
          f"({os.cpu_count()} CPUs)")
    if a.json:
        a.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
