"""Benchmark: a campaign over a pool of 1, 2 and 3 hosts, through the real Ansible item playbook.

What it measures (issue 36): the campaign's wall time for the same items on a pool of 1, 2 and
3 hosts (the ratio to 1 host: how well the pool scheduler spreads them), and the per-item
overhead of the Ansible transport (the playbook's sync of this checkout and the lab, the
command, the fetch back, the removal), as wall time per item minus the item's own seconds.

The hosts are `ansible_connection=local` inventory hosts with their own remote roots, and the
engine there is a stand-in (`mptcplab_python`: a script that sleeps --item-seconds and writes
a complete run), so the numbers are the scheduler's and Ansible's, not a lab's: a real lab
on one machine would share its CPUs between the "hosts". Not a test: these machines are
shared and noisy.

Usage: .venv/bin/python bench/campaign_pool_bench.py [--items 6] [--item-seconds 10] [--hosts 1 2 3]
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys
import tempfile
import time
from pathlib import Path

from mptcplab.campaign import executor, pool
from mptcplab.campaign.planner import plan
from mptcplab.campaign.schema import load_campaign
from mptcplab.lab.loader import load_lab
from mptcplab.record import store
from mptcplab.record.model import MptcpVerdict, Repetition, Subflow
from mptcplab.results.summary import build_summary_model

REPO = Path(__file__).resolve().parents[1]
MTU = REPO / "labs" / "mtu"

#: the engine's stand-in: `python -m mptcplab.cli run LAB ... --results ROOT` -> a complete run
STUB = """#!{python}
import os, sys, time
args = sys.argv[1:]
root = args[args.index("--results") + 1]
time.sleep({seconds})
rid = "20261128T%06dZ-bench" % (int(time.time() * 1e6) % 1000000)
d = os.path.join(root, "mtu", rid)
os.makedirs(d)
for name in ("summary.json", "manifest.json"):
    text = open(os.path.join({tpl!r}, name)).read().replace("RUNID", rid)
    open(os.path.join(d, name), "w").write(text)
"""


def templates(d: Path) -> None:
    rep = Repetition(name="tcp-a", rep=1, goodput_mbps=90.0, calibration_ok=True, mptcp=MptcpVerdict(requested=False),
                     subflows=[Subflow(path="A", share=1.0, median_seg=1448, max_seg=1448, established=True)])
    s = build_summary_model("mtu", "RUNID", os.uname().release, True, False, [rep], load_lab(MTU).published, [],
                            {"emulated": False}, [], repetitions_per_scenario=1)
    store.write_json(d / "summary.json", s.to_json())
    store.write_json(d / "manifest.json", {"lab": "mtu", "run_id": "RUNID", "complete": True,
                                           "kernel": os.uname().release})


def run(work: Path, hosts: int, items: int, stub: Path) -> float:
    names = [f"bench{k}" for k in range(1, hosts + 1)]
    inv = work / f"hosts{hosts}.ini"
    inv.write_text("".join(f"{h} ansible_connection=local ansible_python_interpreter={sys.executable} "
                           f"mptcplab_python={stub} mptcplab_bootstrap=false "
                           f"mptcplab_remote_root={work / ('remote-' + h)}\n" for h in names))
    f = work / f"c{hosts}.yml"
    f.write_text(f"name: bench{hosts}\nlabs:\n  - lab: {MTU}\n    scenarios: [tcp-a]\n"
                 f"targets:\n  - {{name: pool, kind: ansible, pool: [{', '.join(names)}]}}\n"
                 f"inventory: {inv.name}\nrepetitions: {items}\nshuffle: false\n")
    c, base = load_campaign(f)
    order = plan(c, base, str(f))
    out = work / f"out{hosts}"
    executor.write_state(out, c, f, 1, False, order, inv)
    t0 = time.monotonic()
    outcomes = pool.execute_pool(out, order, inv, log=lambda _: None)
    took = time.monotonic() - t0
    done = sum(o.status == "done" for o in outcomes)
    if done != items:
        raise SystemExit(f"{hosts} host(s): {done} of {items} items finished; see {out}")
    return took


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=6)
    ap.add_argument("--item-seconds", type=float, default=10.0)
    ap.add_argument("--hosts", type=int, nargs="+", default=[1, 2, 3])
    a = ap.parse_args()
    os.environ.setdefault("ANSIBLE_HOST_KEY_CHECKING", "False")
    os.environ.setdefault("ANSIBLE_NOCOLOR", "1")
    with tempfile.TemporaryDirectory(prefix="mptcplab-poolbench-") as tmp:
        work = Path(tmp)
        tpl = work / "tpl"
        tpl.mkdir()
        templates(tpl)
        stub = work / "engine-stub"
        stub.write_text(STUB.format(python=sys.executable, seconds=a.item_seconds, tpl=str(tpl)))
        stub.chmod(stub.stat().st_mode | stat.S_IXUSR)
        rows = []
        for h in a.hosts:
            took = run(work, h, a.items, stub)
            rows.append({"hosts": h, "items": a.items, "item_seconds": a.item_seconds, "wall_s": round(took, 1)})
            print(json.dumps(rows[-1]), flush=True)
        one = next((r["wall_s"] for r in rows if r["hosts"] == 1), None)
        for r in rows:
            per_host = -(-a.items // r["hosts"])  # the items the busiest host runs
            r["overhead_per_item_s"] = round(r["wall_s"] / per_host - a.item_seconds, 1)
            if one:
                r["ratio_to_1_host"] = round(r["wall_s"] / one, 3)
        print(json.dumps({"rows": rows}, indent=1))


if __name__ == "__main__":
    main()
