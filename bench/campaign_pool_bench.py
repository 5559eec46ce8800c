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

With --docker IMAGE (``auto``: the newest mptcplab/campaign-host image, which
tests/appliance/test_campaign_pool_docker.py builds), the hosts are containers of that image
reached with ``ansible_connection=community.docker.docker`` (the pool test's transport), the
stand-in copied into each; with --item-seconds 0 it returns at once, so an item's time is the
transport's: the sync of this checkout and the lab over ``docker exec``, the engine's task,
the fetch back and the removal (bootstrap skipped, as in the pool test). Each item's time is
the campaign's own (Outcome.seconds), given per item with min and median; a host's first item
syncs the whole checkout, the later ones only what changed.

Usage: .venv/bin/python bench/campaign_pool_bench.py [--items 6] [--item-seconds 10] [--hosts 1 2 3]
       .venv/bin/python bench/campaign_pool_bench.py --docker auto --item-seconds 0 --items 9 --hosts 1 3
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import stat
import statistics
import subprocess
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


#: where the stand-in and its templates go in a --docker host
IN_CONTAINER = "/opt/mptcplab-bench"


def local_inventory(work: Path, names: list[str], stub: Path) -> str:
    return "".join(f"{h} ansible_connection=local ansible_python_interpreter={sys.executable} "
                   f"mptcplab_python={stub} mptcplab_bootstrap=false "
                   f"mptcplab_remote_root={work / ('remote-' + h)}\n" for h in names)


def docker_inventory(names: list[str]) -> str:
    return "".join(f"{h} ansible_connection=community.docker.docker ansible_python_interpreter=/usr/bin/python3 "
                   f"mptcplab_python={IN_CONTAINER}/engine-stub mptcplab_bootstrap=false\n" for h in names)


def newest_image() -> str:
    p = subprocess.run(["docker", "image", "ls", "--format", "{{.Repository}}:{{.Tag}}", "mptcplab/campaign-host"],
                       capture_output=True, text=True, check=True)
    tags = p.stdout.split()
    if not tags:
        raise SystemExit("no mptcplab/campaign-host image: run tests/appliance/test_campaign_pool_docker.py once")
    return tags[0]  # docker lists the newest first


def start_containers(image: str, n: int, stub_text: str, tpl: Path, work: Path) -> list[str]:
    """``n`` running containers of ``image``, each with the stand-in (its python: the image's)."""
    names = [f"mptcplab-poolbench-{os.getpid()}-{k}" for k in range(1, n + 1)]
    stub = work / "engine-stub-docker"
    stub.write_text(stub_text)
    stub.chmod(0o755)
    for h in names:
        subprocess.run(["docker", "run", "-d", "--name", h, "--hostname", h, "--tmpfs", "/run", "--tmpfs", "/tmp",
                        image], check=True, capture_output=True)
        subprocess.run(["docker", "exec", h, "mkdir", "-p", f"{IN_CONTAINER}/tpl"], check=True)
        subprocess.run(["docker", "cp", str(stub), f"{h}:{IN_CONTAINER}/engine-stub"], check=True)
        for name in ("summary.json", "manifest.json"):
            subprocess.run(["docker", "cp", str(tpl / name), f"{h}:{IN_CONTAINER}/tpl/{name}"], check=True)
    return names


def run(work: Path, names: list[str], inventory: str, items: int) -> tuple[float, list[float]]:
    """The campaign's wall time and each item's seconds (in the order they ended)."""
    hosts = len(names)
    inv = work / f"hosts{hosts}.ini"
    inv.write_text(inventory)
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
    done = [o for o in outcomes if o.status == "done"]
    if len(done) != items:
        raise SystemExit(f"{hosts} host(s): {len(done)} of {items} items finished; see {out}")
    return took, [o.seconds for o in done]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=6)
    ap.add_argument("--item-seconds", type=float, default=10.0)
    ap.add_argument("--hosts", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--docker", metavar="IMAGE",
                    help="hosts are containers of IMAGE over community.docker.docker (auto: the newest "
                         "mptcplab/campaign-host)")
    a = ap.parse_args()
    os.environ.setdefault("ANSIBLE_HOST_KEY_CHECKING", "False")
    os.environ.setdefault("ANSIBLE_NOCOLOR", "1")
    image = (newest_image() if a.docker == "auto" else a.docker) if a.docker else None
    containers: list[str] = []
    with tempfile.TemporaryDirectory(prefix="mptcplab-poolbench-") as tmp:
        work = Path(tmp)
        tpl = work / "tpl"
        tpl.mkdir()
        templates(tpl)
        stub = work / "engine-stub"
        stub.write_text(STUB.format(python=sys.executable, seconds=a.item_seconds, tpl=str(tpl)))
        stub.chmod(stub.stat().st_mode | stat.S_IXUSR)
        rows = []
        try:
            if image is not None:
                if shutil.which("docker") is None:
                    raise SystemExit("--docker needs docker (make appliance-dockerd)")
                containers = start_containers(image, max(a.hosts), STUB.format(
                    python="/usr/bin/python3", seconds=a.item_seconds, tpl=f"{IN_CONTAINER}/tpl"), tpl, work)
            for h in a.hosts:
                names = containers[:h] if image else [f"bench{k}" for k in range(1, h + 1)]
                inventory = docker_inventory(names) if image else local_inventory(work, names, stub)
                took, secs = run(work, names, inventory, a.items)
                rows.append({"hosts": h, "items": a.items, "item_seconds": a.item_seconds, "wall_s": round(took, 1),
                             "transport": "community.docker.docker" if image else "local",
                             "item_s": [round(x, 2) for x in secs], "item_s_min": round(min(secs), 2),
                             "item_s_median": round(statistics.median(secs), 2)})
                print(json.dumps(rows[-1]), flush=True)
        finally:
            if containers:
                subprocess.run(["docker", "rm", "-f", *containers], capture_output=True, check=False)
        one = next((r["wall_s"] for r in rows if r["hosts"] == 1), None)
        for r in rows:
            per_host = -(-a.items // r["hosts"])  # the items the busiest host runs
            r["overhead_per_item_s"] = round(r["wall_s"] / per_host - a.item_seconds, 1)
            if one:
                r["ratio_to_1_host"] = round(r["wall_s"] / one, 3)
        print(json.dumps({"rows": rows}, indent=1))


if __name__ == "__main__":
    main()
