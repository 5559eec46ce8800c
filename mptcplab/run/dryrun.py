"""``run --dry-run``: every command a repetition of each scenario runs, printed; the run's
own steps asked for their commands instead of run. Creates nothing, needs no root."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .. import backends
from ..emulation.base import Emulator
from ..lab.model import Lab
from ..net.plan import build_plan
from ..steps.base import Rep, RunContext
from ..steps.base import render as render_steps
from .options import RunOptions, repetitions, run_scenarios, uniform_repetitions
from .rundir import run_dir_form
from .sequence import Teardown, measurement_steps


def dry_run(lab: Lab, emulator: Emulator, opts: RunOptions, out: Callable[[str], None] = print,
            emulation_forced: bool = True, notes: Sequence[str] = ()) -> None:
    """Print, for each scenario, the exact commands a repetition runs: the run's own
    steps (run/sequence.py), asked for their commands instead of run. Runs none, creates
    nothing, needs no root. ``notes`` (the reachability estimate) follow the header
    line as comments."""
    backend_cls = backends.get(opts.backend)
    ctx = RunContext(lab, emulator, opts.quick, calibrate=opts.calibrate)
    selected = run_scenarios(lab, opts)
    same = uniform_repetitions(lab, opts, selected)
    reps = f"{same}" if same is not None else "{" + ", ".join(
        f"{sc.name}: {repetitions(lab, opts, sc)}" for sc in selected) + "}"
    run_dir = run_dir_form(opts.results_root / lab.name / "<run-id>", backend_cls)
    backend, naming = backend_cls.for_dry_run(lab, run_dir)
    how = "" if emulation_forced else \
        f" (not probed: a dry run creates nothing; a run picks {backend_cls.emulator_rule()})"
    scaled = f"; rates scaled ×{lab.scale:g} ({lab.scale_source})" if lab.scale != 1 else ""
    subset = f" (subset {opts.subset.name}: {' '.join(opts.subset.scenarios)})" if opts.subset else ""
    out(f"# lab {lab.name}: {len(selected)} scenario(s){subset} x {reps} repetition(s); "
        f"backend: {backend.name}; link emulation: {emulator.name}{how}; {naming}{scaled}")
    for line in notes:
        out(f"# {line}")
    for sc in selected:
        wd = run_dir / "scenarios" / sc.name / "rep1"
        plan = build_plan(lab.topology, sc, emulator, backend, wd, file=str(lab.path / "experiment.yml"))
        out(f"\n## scenario {sc.name}" + (f": {sc.description}" if sc.description else ""))
        for line in backend.dry_run_notes(plan.net):
            out(line)
        rep = Rep(ctx, sc, wd, backend, plan)
        for line in render_steps(rep, [*measurement_steps(), Teardown()]):
            out(line)
