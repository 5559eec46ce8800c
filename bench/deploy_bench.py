"""Benchmark: deploy + teardown of the mtu lab's network on the netns backend.

Target (issue 2): under 1 s. Not a test: these machines are shared and noisy.
Usage: .venv/bin/python bench/deploy_bench.py [--lab labs/mtu] [--scenario mptcp-bottleneck] [-n 10]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from mptcplab.backends.netns import NetnsBackend
from mptcplab.emulation.hostprobe import netem_available
from mptcplab.emulation.select import select_emulator
from mptcplab.lab.loader import load_lab
from mptcplab.net.plan import bring_up, build_plan
from mptcplab.supervise import Supervisor


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lab", default="labs/mtu")
    ap.add_argument("--scenario", default="mptcp-bottleneck")
    ap.add_argument("-n", type=int, default=10)
    a = ap.parse_args()
    lab = load_lab(a.lab)
    sc = {s.name: s for s in lab.scenarios}[a.scenario]
    em = select_emulator(None, netem_available())
    deploy, teardown = [], []
    with tempfile.TemporaryDirectory() as wd:
        for _ in range(a.n):
            be = NetnsBackend()
            plan = build_plan(lab.topology, sc, em, be, Path(wd))
            sup = Supervisor(be.node_argv, logdir=Path(wd))
            t0 = time.perf_counter()
            try:
                bring_up(be, plan, sup)
                t1 = time.perf_counter()
            finally:
                sup.close()
                be.destroy()
            t2 = time.perf_counter()
            deploy.append(t1 - t0)
            teardown.append(t2 - t1)
    total = [d + t for d, t in zip(deploy, teardown, strict=True)]
    print(f"{a.lab} {a.scenario}: emulation {em.name}, n={a.n}")
    for name, xs in (("deploy", deploy), ("teardown", teardown), ("total", total)):
        print(f"  {name:9} median {statistics.median(xs) * 1e3:7.1f} ms"
              f"   min {min(xs) * 1e3:7.1f}   max {max(xs) * 1e3:7.1f}")


if __name__ == "__main__":
    main()
