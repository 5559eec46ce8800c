#!/usr/bin/env python3
"""How many short MPTCP connections per second the churn kind's client reaches.

Two network namespaces joined by one veth pair (no shaping, no delay); the project's churn
server and client (mptcplab/traffic/churn_tool.py) over MPTCP, unpaced, for --seconds;
best of --repeat. Needs root. Namespaces are named mptbench<pid>{a,b} and removed on exit.

    sudo .venv/bin/python bench/churn_bench.py [--seconds 3] [--repeat 3] [--size 64]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

TOOL = Path(__file__).resolve().parents[1] / "mptcplab" / "traffic" / "churn_tool.py"


def sh(*argv: str) -> None:
    subprocess.run(list(argv), check=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--size", type=int, default=64)
    a = ap.parse_args()
    p = f"mptbench{os.getpid()}"
    ns_a, ns_b = p + "a", p + "b"
    sh("ip", "netns", "add", ns_a)
    try:
        sh("ip", "netns", "add", ns_b)
        sh("ip", "link", "add", "va", "netns", ns_a, "type", "veth", "peer", "name", "vb", "netns", ns_b)
        for ns, dev, addr in ((ns_a, "va", "10.77.0.1/24"), (ns_b, "vb", "10.77.0.2/24")):
            sh("ip", "-n", ns, "addr", "add", addr, "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "up")
        srv = subprocess.Popen(["ip", "netns", "exec", ns_b, sys.executable, "-I", str(TOOL), "server",
                                "--address", "10.77.0.2", "--port", "7000", "--mptcp"])
        try:
            time.sleep(0.5)
            rates = []
            for _ in range(a.repeat):
                out = subprocess.run(["ip", "netns", "exec", ns_a, sys.executable, "-I", str(TOOL), "client",
                                      "--address", "10.77.0.2", "--port", "7000", "--mptcp", "--size", str(a.size),
                                      "--duration", str(a.seconds)], capture_output=True, text=True, check=True)
                d = json.loads(out.stdout)
                rates.append(d["rate_per_s"])
                print(f"completed {d['completed']} failed {d['failed']} in {d['seconds']:.2f} s: "
                      f"{d['rate_per_s']:.0f} conn/s, connect p50 {d['connect_ms_p50']} ms "
                      f"p99 {d['connect_ms_p99']} ms")
            print(f"best {max(rates):.0f} conn/s over {a.repeat} runs of {a.seconds:g} s (MPTCP, {a.size} B each way)")
        finally:
            srv.terminate()
            srv.wait(timeout=5)
    finally:
        subprocess.run(["ip", "netns", "del", ns_a], check=False)
        subprocess.run(["ip", "netns", "del", ns_b], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
