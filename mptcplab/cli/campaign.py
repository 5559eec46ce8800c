"""Commands across runs: run a campaign, compare labs across kernels and hosts."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import HostNotReady, LabInputError

if TYPE_CHECKING:
    from ..campaign.planner import WorkItem


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    cp = sub.add_parser("campaign", help="run a campaign: labs x targets x repetitions as resumable work items")
    cp.add_argument("campaign", type=Path, help="CAMPAIGN.yml (docs/campaigns.md)")
    cp.add_argument("--out", type=Path, help="campaign directory (default: results/campaigns/<name>)")
    cp.add_argument("--dry-run", action="store_true", help="list the work items and their exact commands; run none")
    cp.add_argument("--quick", action="store_true", help="every item runs --quick (other items than a full campaign's)")
    cp.add_argument("--scenario", action="append", help="only this scenario of each lab (repeatable)")
    cp.add_argument("--lab", action="append", help="only this lab (its name; repeatable)")
    cp.add_argument("--target", action="append", help="only this target (repeatable)")
    cp.add_argument("--reps", type=int, help="rounds per lab and target (default: the campaign's)")
    cp.add_argument("--seed", type=int, help="the shuffle's seed (default: the campaign's, else the recorded one)")
    cp.add_argument("--no-shuffle", action="store_true", help="run in campaign order (labs, targets, rounds)")
    cp.add_argument("--max-items", type=int, metavar="N",
                    help="run at most N unfinished items now, then stop; rerun the command for the rest")
    cp.add_argument("--records", type=Path, metavar="DIR",
                    help="keep finished items as records in DIR (captures left out, `mptcplab archive`): "
                         "restore those of items not finished here before running, pack each finished one after")
    cp.add_argument("--provision", action="store_true",
                    help="first provision every ansible target's host(s) with ansible/campaign-host.yml "
                         "(packages, kernel, sysctls, the engine; idempotent)")
    cp.set_defaults(handler=cmd_campaign)

    cm = sub.add_parser("compare", help="one report: the same lab on several kernels/hosts beside the paper")
    cm.add_argument("inputs", nargs="+", type=Path, metavar="RUN_OR_CAMPAIGN",
                    help="run directories (results/<lab>/<run-id>) or campaign directories")
    cm.add_argument("--out", type=Path, help="where compare.md and its figures go "
                                             "(default: <first campaign>/compare, else ./compare)")
    cm.add_argument("--no-figures", action="store_true", help="markdown only")
    cm.add_argument("--by", choices=["host"], help="split each campaign target into one column per host "
                                                   "that measured its rounds (host effects side by side)")
    cm.set_defaults(handler=cmd_compare)


def cmd_campaign(a: argparse.Namespace) -> int:
    from ..campaign import executor
    from ..campaign.planner import Overrides, new_seed, ordered, plan
    from ..campaign.schema import load_campaign
    from ..campaign.targets import KINDS

    if a.max_items is not None and a.max_items < 1:
        raise LabInputError("command line", "--max-items", f"{a.max_items}: must be 1 or more")
    c, base = load_campaign(a.campaign)
    items = plan(c, base, str(a.campaign), Overrides(quick=a.quick, scenarios=a.scenario, repetitions=a.reps,
                                                     targets=a.target, labs=a.lab or []))
    inventory = (base / c.inventory).resolve() if c.inventory else None
    if inventory is not None and any(i.target.kind == "ansible" for i in items) and not inventory.is_file():
        raise LabInputError(str(a.campaign), "inventory", f"{inventory} does not exist")
    out: Path = a.out or Path("results") / "campaigns" / c.name
    recorded = executor.read_state(out) or {}
    # the seed: given now, else the campaign's, else the one this directory recorded (a
    # resumed campaign keeps its order), else a new one, recorded before anything runs
    seed = next(s for s in (a.seed, c.seed, recorded.get("seed"), new_seed()) if s is not None)
    shuffle = c.shuffle and not a.no_shuffle
    order = ordered(items, int(seed), shuffle)
    # a --reps override below the campaign's bound lowers it: at most one extra round per planned one
    remeasure = min(c.remeasure, max((i.round for i in order), default=0))
    # the extra rounds an earlier part may have run: their records are restored and packed too
    extras = executor.extra_items(order, remeasure)
    if a.dry_run:
        from ..campaign.pool import local_hosts, slots

        hosts = slots(order, local_hosts(inventory) if any(i.target.kind == "ansible" for i in order) else frozenset())
        print(f"# campaign {c.name}: {len(order)} work item(s), "
              + (f"shuffled with seed {seed}" if shuffle else "in campaign order") + f"; directory {out}"
              + (f"; on {len(hosts)} hosts at once ({', '.join(hosts)}), longest expected item first"
                 if len(hosts) > 1 else "")
              + (f"; up to {remeasure} extra round(s) per lab x target where repetitions are dropped"
                 if remeasure else ""))
        for t, argv in _provisions(order, inventory) if a.provision else []:
            print(f"\n## provision {t}\n{shlex.join(argv)}")
        for n, i in enumerate(order, 1):
            print("\n".join(_dry_run_item(n, i, out, a.records, inventory)))
        return 0
    # what would make every item fail, said once before anything is created
    for k, cls in KINDS.items():
        mine = [i for i in order if i.target.kind == k]
        problem = cls(inventory).host_problem(mine) if mine else None
        if problem:
            raise HostNotReady(problem)
    from ..campaign import pool, records

    with executor.campaign_lock(out):
        for t, argv in _provisions(order, inventory) if a.provision else []:
            _provision(t, argv, out)
        executor.write_state(out, c, a.campaign, int(seed), shuffle, order, inventory, remeasure)
        if a.records:
            records.restore_unfinished(out, order + extras, a.records, c.name)
        try:
            local = pool.local_hosts(inventory) if any(i.target.kind == "ansible" for i in order) else frozenset()
            if pool.parallel(order, local):
                outcomes = pool.execute_pool(out, order, inventory, max_items=a.max_items, remeasure=remeasure,
                                             local=local)
            else:
                outcomes = executor.execute(out, order, inventory, max_items=a.max_items, remeasure=remeasure)
        except executor.Stopped as e:
            print(f"campaign stopped by {e}; the running item(s) were stopped (kept as incomplete, their "
                  f"hosts cleaned); "
                  f"rerun the same command to continue", file=sys.stderr)
            return 130
        finally:
            if a.records:
                records.pack_finished(out, order + extras, a.records, c.name)
        from ..campaign.merge import merge

        cols = merge(out)
    left = [o for o in outcomes if o.status == "incomplete"]
    later = sum(o.status == "left" for o in outcomes)
    print(f"campaign {c.name}: {sum(o.status == 'done' for o in outcomes)} item(s) run now, "
          f"{sum(o.status == 'skipped' for o in outcomes)} finished earlier, {len(left)} not finished"
          + (f", {later} left for a later run (--max-items): rerun the same command" if later else ""))
    print(f"merged: {len(cols)} lab x target column(s) in {out / 'merged'}; "
          f"compare them with: mptcplab compare {out}")
    return 1 if left else 0


def _provisions(order: list[WorkItem], inventory: Path | None) -> list[tuple[str, list[str]]]:
    """`--provision`: each ansible target of the items and its playbook command."""
    from ..campaign.targets import Ansible

    targets = {i.target.name: i.target for i in order if i.target.kind == "ansible"}
    return [(name, Ansible(inventory).provision_argv(t)) for name, t in targets.items()]


def _provision(target: str, argv: list[str], out: Path) -> None:
    """Run one target's provisioning, its output in <out>/provision-<target>.log; a failure
    stops the campaign before any item (a host that is not ready measures nothing)."""
    import subprocess

    log = out / f"provision-{target}.log"
    print(f"provisioning {target}: {shlex.join(argv)} (output: {log})", flush=True)
    with open(log, "ab") as f:
        rc = subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, check=False).returncode
    if rc != 0:
        raise HostNotReady(f"provisioning {target} failed (ansible-playbook exit {rc}); see {log}")


def _dry_run_item(n: int, i: WorkItem, out: Path, records: Path | None, inventory: Path | None) -> list[str]:
    """One work item as the dry run shows it: whether it runs, the files it is given and
    its exact command."""
    import json
    import shlex
    from dataclasses import replace

    from ..campaign import executor
    from ..campaign.targets import kind_of

    d = executor.item_dir(out, i)
    done = executor.finished(out, i)
    rec = records / f"{i.id}.tar.xz" if records else None
    lines = ["", f"## [{n}] {i.id}: lab {i.lab} round {i.round} on {i.target.name} ({i.target.kind})"
             + (f": finished earlier ({done}), skipped" if done
                else f": its record {rec} would be restored, skipped" if rec and rec.is_file() else ""),
             f"# runs {i.selection}"]
    kind = kind_of(i.target, inventory)
    if i.target.pool:
        lines.append(f"# pool {', '.join(i.target.pool)}: runs on whichever host is free "
                     f"(the command shown for {i.target.pool[0]})")
        i = replace(i, on_host=i.target.pool[0])
    about = kind.record(i.target)
    if about:
        lines.append("# target " + ", ".join(f"{k}: {v}" for k, v in about.items()))
    lines += [f"# {d / name}: {json.dumps(data, sort_keys=True)}" for name, data in kind.files(i, d).items()]
    stop = kind.stop_argv(i, d)
    if stop is not None:
        lines.append(f"# if the campaign is stopped while it runs, then: {shlex.join(stop)}")
    return [*lines, shlex.join(kind.argv(i, d))]


def cmd_compare(a: argparse.Namespace) -> int:
    from ..campaign.compare import write_compare
    from ..campaign.executor import STATE

    for p in a.inputs:
        if not p.exists():
            raise LabInputError("command line", "RUN_OR_CAMPAIGN", f"{p} does not exist")
    first_campaign = next((p for p in a.inputs if (p / STATE).is_file()), None)
    out = a.out or (first_campaign / "compare" if first_campaign else Path("compare"))
    print(write_compare(list(a.inputs), out, figures=not a.no_figures, by=a.by))
    return 0
