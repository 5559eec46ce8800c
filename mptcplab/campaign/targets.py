"""The exact command that runs one work item on its target (generation only; executor.py
runs it, `campaign --dry-run` prints it).

local: `mptcplab run` as a child process with the item's own results root.
ansible: ansible-playbook with ansible/campaign-item.yml limited to the target's host; the
playbook syncs this checkout and the lab there, runs the same `mptcplab run` argument list
with ansible.builtin.command (no shell), and pulls the item's results root back.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from .planner import WorkItem

REPO = Path(__file__).resolve().parents[2]
PLAYBOOK = REPO / "ansible" / "campaign-item.yml"
#: under each item directory: the engine's --results root (results/<lab>/<run-id>/)
RESULTS = "results"


def engine_args(item: WorkItem, lab_arg: str, results_arg: str) -> list[str]:
    """`mptcplab run` arguments of an item (after the program)."""
    args = ["run", lab_arg, "--reps", "1", "--backend", "netns", "--results", results_arg]
    if item.subset is not None:
        # the engine selects the subset's scenarios itself and records the subset (manifest
        # `subset`); --reps 1 overrides its repetitions: the campaign's rounds repeat it
        args += ["--subset", item.subset]
    for s in item.scenarios if item.subset is None else ():
        args += ["--scenario", s]
    if item.run.quick:
        args.append("--quick")
    if item.run.no_calibrate:
        args.append("--no-calibrate")
    if item.run.emulation:
        args += ["--emulation", item.run.emulation]
    return args


def local_argv(item: WorkItem, item_dir: Path) -> list[str]:
    return [sys.executable, "-m", "mptcplab.cli", *engine_args(item, str(item.lab_dir), str(item_dir / RESULTS))]


def ansible_vars(item: WorkItem, item_dir: Path) -> dict[str, Any]:
    """The playbook's extra variables (written to ansible-vars.json in the item directory)."""
    return {
        "campaign_target": item.target.name,
        "campaign_item": item.id,
        "campaign_checkout": str(REPO),
        "campaign_lab_src": str(item.lab_dir),
        "campaign_lab_name": item.lab,
        "campaign_local_results": str((item_dir / RESULTS).resolve()),
        # where the lab and results live on the target is the playbook's business: the
        # engine's arguments name them by the placeholders it fills in
        "campaign_engine_args": engine_args(item, "@LAB@", "@RESULTS@"),
    }


def ansible_argv(item: WorkItem, item_dir: Path, inventory: Path) -> list[str]:
    return ["ansible-playbook", "-i", str(inventory), str(PLAYBOOK), "--limit", item.target.inventory_host,
            "-e", f"@{item_dir / 'ansible-vars.json'}"]


def item_argv(item: WorkItem, item_dir: Path, inventory: Path | None) -> list[str]:
    if item.target.kind == "local":
        return local_argv(item, item_dir)
    assert inventory is not None  # the schema requires an inventory with ansible targets
    return ansible_argv(item, item_dir, inventory)
