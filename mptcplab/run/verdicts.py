"""What makes a run's numbers wrong, and its summary: per repetition, the timing problems
(link calibration, CPU-bound tools, delay lines that did not keep time) and the broken
evidence (iperf3 errors, dead servers, dropped or dead captures, rewriting middleboxes that
rewrote nothing), turned into summary.json."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..analysis.verdict import exit_text
from ..emulation.nfqueue import delayline_losses, lateness_problem
from ..lab.model import Lab
from ..middlebox import rewrite
from ..probes.procstat import steal_clause
from ..record.model import Repetition
from ..record.validity import cpu_bound_reason
from ..results.summary import build_summary
from .options import RunOptions


def daemon_problems(rec: Repetition) -> tuple[list[str], list[str]]:
    """What a repetition's daemons' stats say is wrong: (delay lines that did not keep time or
    lost packets: timing; rewriting middleboxes that rewrote nothing or lost packets: invalid).
    A delay line that did not keep time is told with the hypervisor's steal over the traffic
    (``host_cpu``, when recorded), so a reader sees whether steal came with the stalls."""
    steal = f"; {steal_clause(rec.host_cpu)}" if rec.host_cpu else ""
    timing: list[str] = []
    for name, st in (rec.delay_line_stats or {}).items():
        timing += [f"{name}: {p}" for p in delayline_losses(st or {})]
        late = lateness_problem(st or {})
        if late:
            timing.append(f"{name}: {late}{steal}")
    invalid = [f"{name}: {problem}" for name, st in (rec.daemon_stats or {}).items()
               for problem in rewrite.problems(st or {})]
    return timing, invalid


def run_summary(lab: Lab, run_id: str, facts: dict[str, Any], complete: bool, opts: RunOptions,
                records: list[Repetition], reps: int | None, run_dir: Path | None = None) -> dict[str, Any]:
    timing: list[str] = []  # what makes timing numbers wrong: link calibration, CPU, delay line
    invalid: list[str] = []  # what makes the evidence itself wrong
    declared = {sc.name for sc in lab.scenarios if sc.body.cpu_bound}
    for r in records:
        tag = f"{r.name} rep {r.rep}"
        if not r.calibration_ok:
            timing.append(f"{tag}: emulated links out of tolerance")
        cpu = cpu_bound_reason(r.name, r.rep, r.cpu.values(), r.name in declared)
        if cpu:
            timing.append(cpu)
        late, broken = daemon_problems(r)
        timing += [f"{tag}: {p}" for p in late]
        invalid += [f"{tag}: {p}" for p in broken]
        if r.iperf3_error:
            invalid.append(f"{tag}: iperf3 error: {r.iperf3_error}")
        for flow, rc in (r.servers_died or {}).items():
            invalid.append(f"{tag}: the server of flow {flow} died before the run stopped it ({exit_text(rc)})")
        for pt, st in (r.capture_stats or {}).items():
            if st.dropped:
                invalid.append(f"{tag}: capture at {pt} dropped {st.dropped} packets")
            if st.died is not None:
                invalid.append(f"{tag}: capture at {pt} did not end as the run stopped it (exit status {st.died})")
    # build_summary takes the models as they are (results/summary.repetitions): no dicts in between
    return build_summary(lab.name, run_id, facts["kernel"], complete, opts.quick, records, lab.published, invalid,
                         facts["platform"], timing, repetitions_per_scenario=reps, scale=lab.scale,
                         run_warnings=opts.warnings, run_dir=run_dir,
                         kernel_patches=None if facts.get("kernel_patches") is None
                         else [p["name"] for p in facts["kernel_patches"] if p["present"]],
                         kernel_symbols=facts.get("kernel_symbols"))
