"""The finished items of a campaign merged per lab and target: one Summary (the typed
result model) whose repetitions are the items' valid repetitions (per scenario the planned
n, in round order; the dropped ones listed with why: repvalid.py), with the aggregates and
the paper's findings recomputed over them, plus the target's fingerprint (the host facts of
every item's manifest: kernel, CPU, tool versions, calibration).

Written to <campaign>/merged/<lab>/<target>/summary.json, manifest.json (the runs'
manifests as one: what the report and the notebooks read of a run) and fingerprint.json.

Split by host (``merge(..., by_host=True)``, `mptcplab compare --by host`): one column per
lab, target and the host that measured the rounds (a pool's items land on any of its
hosts), each merged from that host's rounds alone, so a host effect shows as a difference
between columns rather than being averaged into one. Not written: the campaign's merged
column stays the one of all its rounds.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..lab.loader import load_lab
from ..lab.schema import Published
from ..record import store
from ..record.model import Manifest, Repetition, Summary, load_manifest
from ..results.read import load_summary
from ..results.summary import build_summary_model
from . import repvalid
from .executor import RESULTS, complete_runs, read_state

MERGED = "merged"


@dataclass
class ItemRun:
    item_id: str
    target: str
    lab: str
    round: int
    run_dir: Path
    summary: Summary
    manifest: Manifest
    #: the host that measured it: the inventory host of its item (item.json ``host``: a
    #: pool's host), else the manifest's host name (a local or qemu target)
    host: str | None = None


@dataclass
class Column:
    """One lab on one target: what `compare` puts in one column."""

    lab: str
    target: str
    summary: Summary
    fingerprint: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    manifest: Manifest = field(default_factory=Manifest)

    @property
    def kernel(self) -> str | None:
        return self.summary.kernel


def item_runs(out: Path) -> list[ItemRun]:
    """The complete run of every finished item (from its item.json and result directory)."""
    state = read_state(out) or {}
    runs = []
    for item_dir in sorted((out / "items").glob("*/")):
        rec = (state.get("items") or {}).get(item_dir.name)
        if rec is None:
            continue  # not an item of this campaign (a leftover of an earlier plan is still listed in it)
        done = complete_runs(item_dir / RESULTS)
        if not done:
            continue
        # absolute: a merged repetition's dir is read from the merged column's directory, where a
        # path relative to the working directory (`compare results/campaigns/X`) leads nowhere
        d = done[0].resolve()
        m = load_manifest(d)
        host = _item_host(item_dir) or m.hostname
        runs.append(ItemRun(item_dir.name, rec["target"], rec["lab"], int(rec["round"]), d,
                            load_summary(d), m, host))
    return runs


def _item_host(item_dir: Path) -> str | None:
    """The inventory host item.json names (the one that finished it), if any."""
    try:
        host = json.loads((item_dir / "item.json").read_text()).get("host")
    except (OSError, ValueError, AttributeError):
        return None
    return host if isinstance(host, str) and host else None


def fingerprint(target: str, target_rec: dict[str, Any], runs: list[ItemRun]) -> dict[str, Any]:
    """What the target was, from its runs' manifests; a fact that changed between its
    runs (a reboot into another kernel) is listed with every value seen."""
    def seen(get: Any) -> list[Any]:
        vals: list[Any] = []
        for r in runs:
            v = get(r.manifest)
            if v not in vals:
                vals.append(v)
        return vals

    tools = seen(lambda m: m.tools)
    return {
        "target": target, "kind": target_rec.get("kind"), "host": target_rec.get("host"),
        "description": target_rec.get("description"),
        # a qemu target: its packages directory and the release debs.sh read there
        "debs": target_rec.get("debs"), "release": target_rec.get("release"),
        "kernels": seen(lambda m: m.kernel),
        "kernel_patches": seen(lambda m: None if m.kernel_patches is None
                               else sorted(p.name for p in m.kernel_patches if p.present)),
        "hostnames": seen(lambda m: m.hostname),
        "cpu_count": seen(lambda m: m.cpu_count), "os_release": seen(lambda m: m.os_release),
        "platform": seen(lambda m: m.platform), "link_emulation": seen(lambda m: m.link_emulation),
        "tools": tools[0] if len(tools) == 1 else tools,
        "git": seen(lambda m: m.git.commit),
        "calibration_ok_reps": sum(1 for r in runs for rep in r.summary.scenarios if rep.calibration_ok),
        "runs": [{"item": r.item_id, "round": r.round, "run_dir": str(r.run_dir), "run_id": r.summary.run_id,
                  "wall_seconds": r.manifest.wall_seconds, "hostname": r.manifest.hostname, "host": r.host}
                 for r in runs],
    }


def merged_manifest(run_id: str, runs: list[ItemRun]) -> Manifest:
    """The runs' manifests as the manifest of one run of ``len(runs)`` repetitions (runs in
    round order): calibration per repetition under ``rep<round>`` as the merged summary
    numbers them; time and wall time spanning them all; the host, tools, git, lab files and
    per-scenario sysctls of the first run (the fingerprint lists every value seen, and
    ``merged_from`` names each run); complete when every run was."""
    first, last = runs[0].manifest, runs[-1].manifest
    calibration: dict[str, Any] = {}
    for r in runs:
        for scenario, reps in r.manifest.calibration.items():
            for rep, checks in (reps or {}).items():
                if rep == "rep1":  # an item measures each scenario once
                    calibration.setdefault(scenario, {})[f"rep{r.round}"] = checks
    walls = [r.manifest.wall_seconds for r in runs]
    traffic = [r.manifest.traffic_seconds for r in runs]
    return first.model_copy(update={
        "run_id": run_id, "complete": all(r.manifest.complete for r in runs), "incomplete_reason": None,
        "repetitions": len(runs), "command_line": None, "started": first.started, "finished": last.finished,
        "wall_seconds": None if None in walls else sum(w or 0.0 for w in walls),
        "traffic_seconds": None if None in traffic else sum(t or 0.0 for t in traffic),
        "calibration": calibration,
        "merged_from": [{"round": r.round, "item": r.item_id, "run_id": r.manifest.run_id, "run_dir": str(r.run_dir),
                         "git": r.manifest.git.commit} for r in runs]})


def _lab_facts(runs: list[ItemRun], lab_dirs: dict[str, str]) -> tuple[Published | None, set[str]]:
    """The lab's published findings and the scenarios it declares CPU-bound (``cpu_bound``),
    from the lab as it is now; (None, none) when it cannot be read."""
    lab_dir = lab_dirs.get(runs[0].lab)
    if not lab_dir:
        return None, set()
    try:
        lab = load_lab(lab_dir)
    except Exception:  # noqa: BLE001 - a lab moved since: the merge keeps the measurements, without the paper
        return None, set()
    return lab.published, {sc.name for sc in lab.scenarios if sc.body.cpu_bound}


def bound_text(rounds: Iterable[int], planned: int, remeasure: int) -> str:
    """Why no further round came for a short scenario, for its invalid reason."""
    got = set(rounds)
    missing = [k for k in range(1, planned + 1) if k not in got]
    if missing:
        return f"{planned - len(missing)} of {planned} planned rounds finished"
    extra = sum(1 for k in got if k > planned)
    if extra >= remeasure:
        return f"re-measure bound {remeasure} reached"
    return f"{extra} of {remeasure} re-measure round(s) run"


def merge_runs(campaign: str, lab: str, target: str, target_rec: dict[str, Any], runs: list[ItemRun],
               pub: Published | None, cpu_bound: set[str] | None = None, planned: int | None = None,
               remeasure: int = 0) -> Column:
    """``cpu_bound``: the scenarios the lab declares CPU-bound now; a round recorded before the
    declaration keeps its measurements, and its CPU-bound flag on them is not held against it.
    ``planned``: the repetitions the campaign planned per scenario (None: one per round, as a
    campaign recorded before the field ran); ``remeasure``: the extra rounds it allowed.
    A repetition with a problem of its own is dropped (repvalid.py); the merged run is valid
    when no problem names no repetition and every scenario has ``planned`` valid ones."""
    runs = sorted(runs, key=lambda r: r.round)
    n = planned if planned is not None else len(runs)
    sel = repvalid.select([(r.round, r.summary) for r in runs], n, cpu_bound)
    used = {(rnd, name, rep) for rnd, name, rep in sel.used}
    notes_exempt = [f"round {rnd}: {k} CPU-bound flag(s) on scenarios the lab declares CPU-bound "
                    "(cpu_bound: true) not held against it" for rnd, k in sorted(sel.exempted.items())]
    reps: list[Repetition] = []
    timing: list[str] = []
    for r in runs:
        for rep in r.summary.scenarios:
            if (r.round, rep.name, rep.rep) not in used:
                continue  # dropped or surplus: listed in the summary's ``dropped``
            # a repetition's number in the merged set is its round; its directory stays where it is
            reps.append(rep.model_copy(update={"rep": r.round, "dir": str(r.run_dir / rep.rel_dir())}))
        timing += [f"round {r.round}: {x}" for x in r.summary.timing_notes]
    invalid = [*sel.unattributed, *sel.shortfall(bound_text((r.round for r in runs), n, remeasure))]
    fp = fingerprint(target, target_rec, runs)
    notes = list(notes_exempt)
    notes += [f"round {d.rep}: `{d.scenario}` valid, beyond the planned {n}: left out" for d in sel.surplus]
    if len(fp["kernels"]) > 1:
        notes.append(f"{target} ran several kernels during the campaign: {', '.join(map(str, fp['kernels']))}")
    if fp["release"] and any(k != fp["release"] for k in fp["kernels"]):
        notes.append(f"{target}'s packages ({fp['debs']}) are release {fp['release']}, "
                     f"but its runs ran on {', '.join(map(str, fp['kernels']))}")
    # the patches of the first run's kernel, as its release; unknown when the runs disagree
    patches = fp["kernel_patches"][0] if len(fp["kernel_patches"]) == 1 else None
    # the symbols the findings require, as every round read them; unknown when they disagree
    symbols = runs[0].manifest.kernel_symbols
    if any(r.manifest.kernel_symbols != symbols for r in runs):
        symbols = None
    s = build_summary_model(lab, f"campaign:{campaign}:{target}", str(fp["kernels"][0]), True,
                            all(r.summary.quick for r in runs), reps, pub, invalid,
                            runs[0].manifest.platform or {}, timing, repetitions_per_scenario=n,
                            kernel_patches=patches, kernel_symbols=symbols)
    s = s.model_copy(update={"dropped": [*sel.dropped, *sel.surplus]})
    return Column(lab, target, s, fp, notes, merged_manifest(s.run_id, runs))


def merge(out: Path, write: bool = True, by_host: bool = False) -> list[Column]:
    """Every (lab, target) of the campaign with at least one finished item; ``by_host``: every
    (lab, target, host), named ``<target> @ <host>``, each judged on its own rounds (its
    planned n is the rounds that host measured), and not written."""
    state = read_state(out) or {}
    lab_dirs = {rec["lab"]: rec.get("lab_dir") for rec in (state.get("items") or {}).values()}
    groups: dict[tuple[str, str, str], list[ItemRun]] = {}
    for r in item_runs(out):
        groups.setdefault((r.lab, r.target, (r.host or "?") if by_host else ""), []).append(r)
    cols = []
    order = list((state.get("targets") or {}).keys())
    for (lab, target, host), runs in sorted(groups.items(),
                                            key=lambda kv: (kv[0][0], _pos(order, kv[0][1]), kv[0][2])):
        pub, cpu_bound = _lab_facts(runs, lab_dirs)
        rec = (state.get("targets") or {}).get(target, {})
        if by_host:
            col = merge_runs(str(state.get("name", out.name)), lab, f"{target} @ {host}", {**rec, "host": host},
                             runs, pub, cpu_bound)
            cols.append(col)
            continue
        col = merge_runs(str(state.get("name", out.name)), lab, target, rec, runs, pub, cpu_bound,
                         _int_or_none(state.get("repetitions")), int(state.get("remeasure") or 0))
        if write:
            d = out / MERGED / lab / target
            d.mkdir(parents=True, exist_ok=True)
            store.write_json(d / "summary.json", col.summary.to_json())
            store.write_json(d / "fingerprint.json", col.fingerprint)
            store.write_json(d / "manifest.json", col.manifest.model_dump(mode="json", by_alias=True))
        cols.append(col)
    return cols


def _int_or_none(v: Any) -> int | None:
    return None if v is None else int(v)


def _pos(order: list[str], name: str) -> int:
    return order.index(name) if name in order else len(order)
