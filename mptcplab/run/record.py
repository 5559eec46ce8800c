"""A measured repetition's captures and client reports turned into its record (rep.json),
validated against the result model (docs/results-format.md). Runs in a worker process while
the next repetition is measured."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..analysis import CaptureFile
from ..analysis.labspec import lab_facts
from ..capture import capture_file_name
from ..probes.analysis import OtherFlow, analyze_probes
from ..probes.nstat import NstatProbe, blackholes
from ..record.model import UNCLASSIFIED, Fairness, Repetition, Warning
from ..timeline.record import EVENTS_FILE, add_capture_time
from ..traffic.fairness import jain_index, shares
from ..traffic.flowresult import analyze_one
from ..warncodes import PROBE_DEGRADED, coded
from .measure import AnalysisJob

#: a node's kernel turned MPTCP off for new connections (docs/results-format.md)
MPTCP_BLACKHOLE = "mptcp-blackhole"


def analyze(job: AnalysisJob) -> Repetition:
    """Captures and client reports of one repetition -> its record, validated by the result
    model and written to rep.json.

    What the lab says each flow should show is built once (analysis/labspec.lab_facts); every
    flow is analyzed on its own (traffic/flowresult.py); the primary measured flow's numbers are
    also the record's top-level fields (format 1), the others are in ``flows`` with the
    fairness across the measured ones.
    """
    body, out = job.body, job.out
    facts = lab_facts(body, job.net)
    # coded warnings (docs/results-format.md, warncodes.py); a plain string reads as unclassified
    warnings: list[dict[str, Any]] = [w if isinstance(w, dict) else coded(UNCLASSIFIED, w) for w in job.warnings]
    caps = [CaptureFile(out / capture_file_name(cp.point), cp.point) for cp in body.capture]
    parts = {name: analyze_one(ff, facts, out, job.clients.get(name), caps, job.workers, primary=name == job.measured)
             for name, ff in facts.flows.items()}
    main = parts[job.measured]
    for p in parts.values():
        warnings += p.warnings
    if any(f.mptcp for f in body.traffic.flows.values()):
        warnings += blackhole_warnings(out)
    fa = main.fa
    if fa is not None:
        # its tables (timeseries.csv, dsn.csv, ...) are written by analyze_one, each flow's
        add_capture_time(out / EVENTS_FILE, fa.t0_epoch)  # events on the time series' axis
        for trace in sorted(out.glob("controller-*.csv")):  # and the controllers' steps
            add_capture_time(trace, fa.t0_epoch)
    probes: dict[str, Any] = {}
    if fa is not None:
        primary = facts.flows[job.measured]
        beside = [OtherFlow(n, p.fa, facts.flows[n].flow.data_direction() == "upload")
                  for n, p in parts.items() if n != job.measured and p.fa is not None]
        probes, probe_warnings = analyze_probes(out, body, fa, primary.flow.data_direction() == "upload",
                                                primary.backup_paths, flow=job.measured, others=beside)
        warnings += [coded(PROBE_DEGRADED, w) for w in probe_warnings]
    measured = [n for n, f in body.traffic.flows.items() if f.role == "measured"]
    goodputs = {n: parts[n].outcome.goodput_mbps or 0.0 for n in measured
                if parts[n].outcome.goodput_mbps is not None}
    share_of = shares(goodputs)
    for n, p in parts.items():
        p.result.share = share_of.get(n)
    fairness = Fairness(flows=len(goodputs), jain_index=jain_index(list(goodputs.values())), shares=share_of)
    others = {n: p.outcome.goodput_mbps for n, p in parts.items() if n != job.measured}
    m = main.result
    # what the model has no field for stays as the record's extras: the findings (dicts, as the
    # analysis writes them), the probes' tables, the runner's facts (job.extra)
    extras: dict[str, Any] = {"findings": [f for p in parts.values() for f in p.findings],
                              **({"probes": probes} if probes else {}), **job.extra}
    # the result model is the contract (docs/results-format.md): a record it cannot read fails here
    rep = Repetition(
        name=job.scenario, rep=job.rep, dir=None, sweep=job.sweep_point,
        goodput_mbps=m.goodput_mbps or 0.0, sender_mbps=m.sender_mbps, retransmits=m.retransmits,
        duration_s=m.duration_s, iperf3_error=m.iperf3_error, cpu=m.cpu,
        mptcp=m.mptcp, subflows=m.subflows, add_addrs=m.add_addrs,
        warnings=[Warning.model_validate(w) for w in warnings],
        calibration_ok=all(c.ok for c in job.calibration),
        other_flows_goodput_mbps=others,
        analysis_seconds=round(fa.analysis_seconds, 3) if fa is not None else None,
        packets=fa.packets if fa is not None else None,
        flows=[p.result for p in parts.values()],
        fairness=fairness,
        # servers that ended by themselves with a failure (a crash, a kill from outside):
        # their side of the record is lost, the run is invalid (run/verdicts.run_summary)
        servers_died={n: c.server_rc for n, c in sorted(job.clients.items()) if c.server_rc not in (0, None)},
        **extras)
    (out / "rep.json").write_text(json.dumps(rep.model_dump(), indent=2, default=str))
    return rep


def blackhole_warnings(out: Path) -> list[dict[str, Any]]:
    """The kernel's own reason for plain-TCP connections of an MPTCP run, from the nstat probe's
    counters (none without the probe): labs/http at scale 0.03 had 106 such connections after 6
    MP_CAPABLE SYNs were lost in a full queue."""
    try:
        table = NstatProbe.analyze(out)
    except (OSError, ValueError):
        return []
    return [coded(MPTCP_BLACKHOLE, b.message()) for b in blackholes(table)]
