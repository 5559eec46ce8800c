"""Each flow of a repetition analyzed on its own: its client's report (the kind's
parser) and its proof from the capture, as the kind asks (TrafficKind.capture_analysis):

* ``connection``: analysis.analyze_flow on the flow's own server address and port (bulk);
* ``connections``: every connection to the server port checked for MPTCP, with its
  SYN -> SYN/ACK time (traffic/connections.py; http, churn);
* ``none``: UDP has no connection to prove; its result is iperf3's.

What the lab says each flow should show (its expected paths, rates, join ports, ...) comes
built once per repetition (analysis/labspec.LabFacts); run/record.analyze assembles the
repetition from these parts.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..analysis import CaptureFile, FlowAnalysis, aggregation, analyze_flow
from ..analysis import FlowSpec as AnalysisSpec
from ..analysis.analyze import write_tables
from ..analysis.delivery import HOL_KEYS
from ..analysis.labspec import FlowFacts, LabFacts
from ..analysis.verdict import transfer_failure
from ..record.events import read_events
from ..record.model import EVENTS_FILE, ConnectionsCheck, FlowResult, MptcpVerdict, Subflow
from ..warncodes import FLOW_NOT_RUN, coded
from .base import ClientRun, Outcome
from .connections import check_connections
from .kinds import kind_of


@dataclass
class FlowParts:
    """One flow's analysis: its record (``result``: its client's numbers from the start, the
    capture's proof added by the kind's analysis, its ``share`` by run/record.analyze), its
    coded warnings and findings, and for a ``connection`` flow the capture analysis itself
    (time series, ICMP, ...)."""

    name: str
    outcome: Outcome
    result: FlowResult
    warnings: list[dict[str, Any]] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)
    fa: FlowAnalysis | None = None
    spec: AnalysisSpec | None = None


def flow_dir(out: Path, name: str) -> Path:
    """Per-flow files of flows other than the primary one, whose files are in ``out`` itself
    (docs/results-format.md)."""
    return out / "flows" / name


def analyze_one(facts: FlowFacts, lab: LabFacts, out: Path, client: ClientRun | None,
                captures: list[CaptureFile], workers: int | None, primary: bool) -> FlowParts:
    """Flow ``facts.name`` of the repetition in ``out``: its client's report (None: it never
    started) and its proof from the captures, as its kind asks."""
    name, flow = facts.name, facts.flow
    kind = kind_of(flow)
    server = f"{facts.server_ip}:{flow.port}"
    label = "" if primary else f"flow {name}: "
    if client is None:
        # never started (a flow_start event that did not come): nothing to analyze
        return FlowParts(name, Outcome(error="did not run"),
                         FlowResult(name=name, kind=flow.kind, role=flow.role, server=server, verified=False,
                                    mptcp=MptcpVerdict(requested=flow.mptcp)),
                         [coded(FLOW_NOT_RUN, f"{label}the flow did not run")])
    o = kind.read(client.path)
    if client.stopped and o.error and "terminated" in o.error:
        # stopped by the run (SIGINT): iperf3 reports "interrupt - the client has terminated"
        # with the results so far; that is the stop working, not a failure
        o.error = None
    if client.stopped:
        o = kind.stopped_outcome(flow, name, o, client.path, out)
    # the kind's own numbers: its report's dict parsed into its result model, the field it names
    metrics: dict[str, Any] = {} if kind.result_field is None else {kind.result_field: dict(o.metrics)}
    result = FlowResult(
        name=name, kind=flow.kind, role=flow.role, server=server, stopped=client.stopped,
        goodput_mbps=None if o.goodput_mbps is None else round(o.goodput_mbps, 3),
        sender_mbps=None if o.sender_mbps is None else round(o.sender_mbps, 3),
        retransmits=o.retransmits, duration_s=o.seconds, iperf3_error=o.error,
        cpu={"client": o.cpu_host, "server": o.cpu_remote},
        mptcp=MptcpVerdict(requested=flow.mptcp), **metrics)
    parts = FlowParts(name, o, result)
    if o.error:
        parts.warnings.append(coded(kind.error_code, f"{label}{flow.kind} reported an error: {o.error}"))
    parts.warnings += [coded(code, f"{label}{message}") for code, message in o.notes]
    if kind.capture_analysis == "connection":
        _connection(parts, facts, lab, out, client, captures, workers, label, primary)
    elif kind.capture_analysis == "connections":
        _connections(parts, facts, out, client, captures, workers, label)
    else:
        result.verified = None if o.error is None else False
    return parts


def _connection(parts: FlowParts, facts: FlowFacts, lab: LabFacts, out: Path, client: ClientRun,
                captures: list[CaptureFile], workers: int | None, label: str, primary: bool) -> None:
    o, flow = parts.outcome, facts.flow
    # the paths the timeline or a controller took out of use (events.csv: written before the
    # analysis, with epoch times; the analysis puts them on its own axis)
    retired, retired_why = lab.retired(facts.name, read_events(out / EVENTS_FILE))
    # the spec's dicts are its own copies: the facts are shared by every flow of the repetition
    spec = AnalysisSpec(server_ip=facts.server_ip, server_port=flow.port,
                        paths=dict(lab.path_of_address), expected_paths=facts.expected_paths, mptcp=flow.mptcp,
                        direction=flow.data_direction(), path_rates_bps=dict(facts.path_rates_bps),
                        backup_paths=facts.backup_paths,
                        # both backends (netns, containerlab) capture on one host kernel clock
                        same_clock=True,
                        receiver_node=flow.server if flow.data_direction() == "upload" else flow.client,
                        join_ports=facts.join_ports, retired_paths=retired, retired_why=retired_why)
    fa = analyze_flow(captures, spec, workers=workers)
    parts.fa, parts.spec = fa, spec
    # the primary flow's tables at the repetition's top level (format 1), the others' beside
    # their flow: the same files either way
    d = out if primary else flow_dir(out, parts.name)
    d.mkdir(parents=True, exist_ok=True)
    write_tables(fa, d)
    if flow.mptcp:
        if not fa.mptcp_negotiated:
            parts.warnings.append(coded("mptcp-fallback", f"{label}MPTCP requested but NOT negotiated: "
                                        "this is a plain TCP result (fallback)"))
        elif fa.fallback:
            parts.warnings.append(coded("mptcp-fallback", f"{label}MPTCP fell back to TCP during the connection"))
    failed = transfer_failure(o.error, o.goodput_mbps or 0.0, client.rc, client.server_rc)
    if failed is not None and not client.stopped:
        # a transfer that failed verifies nothing, whatever the capture shows
        fa.verified = False
        fa.findings.insert(0, failed)
    parts.warnings += [coded(f.code, label + f.message, f.path) for f in fa.findings]
    parts.warnings += [coded(w.code, label + w) for w in fa.warnings]
    if flow.mptcp and not fa.verified:
        parts.warnings += [coded("mptcp-limits", label + w) for w in facts.diagnostics]
    parts.findings = [f.to_dict() for f in fa.findings]
    r = parts.result
    r.verified = fa.verified
    r.mptcp = MptcpVerdict(
        requested=flow.mptcp, negotiated=fa.mptcp_negotiated, fallback=fa.fallback,
        verified=fa.verified if flow.mptcp else False,
        subflows=sum(1 for s in fa.subflows if s.established),
        expected_paths=list(spec.expected_paths),
        # MPTCP depth of the capture (analysis/depth.py)
        data_retransmissions=fa.mptcp_retransmissions, data_retrans_bytes=fa.mptcp_retrans_bytes,
        data_window_probes=fa.mptcp_window_probes, data_late_originals=fa.mptcp_late_originals,
        dss_checksum=fa.dss_checksum, checksum_required=fa.checksum_required,
        # receiver reordering and head-of-line delay (analysis/delivery.py)
        **{k: fa.hol_connection.get(k) for k in HOL_KEYS}, hol_unavailable=fa.hol_unavailable)
    # the analysis' dataclasses become the record's models here, once
    r.subflows = [Subflow.model_validate(asdict(s)) for s in fa.subflows]
    r.add_addrs = list(fa.add_addrs)
    # Kaspar et al.'s aggregation benefit (analysis/aggregation.py): goodput vs the paths' rates
    caps = aggregation.capacities_mbps(spec)
    r.path_capacity_mbps = caps
    r.aggregation_benefit = _round(aggregation.benefit(o.goodput_mbps, caps))


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 4)


def _connections(parts: FlowParts, facts: FlowFacts, out: Path, client: ClientRun,
                 captures: list[CaptureFile], workers: int | None, label: str) -> None:
    o, flow = parts.outcome, facts.flow
    rep = check_connections(captures, facts.server_ip, flow.port, flow.server, workers, facts.join_ports)
    d = flow_dir(out, parts.name)
    d.mkdir(parents=True, exist_ok=True)
    rep.frame().to_csv(d / "connections.csv", index=False)
    check = ConnectionsCheck.model_validate(rep.summary())
    seen, mp = rep.seen, rep.mptcp
    if kind_of(flow).proves_nothing(flow):
        # the flow asked for nothing to prove (e.g. a hold of none)
        parts.result.verified, parts.result.connections = None, check
        parts.result.mptcp = MptcpVerdict(requested=flow.mptcp, negotiated=False, fallback=False, verified=False,
                                          subflows=None, expected_paths=[])
        return
    if seen == 0:
        parts.warnings.append(coded("no-connection", f"{label}no connection to {flow.server_address} port "
                                    f"{flow.port} in the captures: nothing proves this flow"))
    elif flow.mptcp and mp < seen:
        parts.warnings.append(coded("mptcp-fallback", f"{label}{seen - mp} of {seen} connections were NOT MPTCP "
                                    "(no MP_CAPABLE in SYN, SYN/ACK and third ACK): fallback"))
    parts.warnings += [coded(w.code, label + w) for w in rep.warnings]
    ok = seen > 0 and (mp == seen if flow.mptcp else True) and o.error is None and client.rc in (0, None) \
        and client.server_rc in (0, None)
    parts.result.verified, parts.result.connections = ok, check
    parts.result.mptcp = MptcpVerdict(
        requested=flow.mptcp, negotiated=(mp == seen and seen > 0) if flow.mptcp else False,
        fallback=bool(flow.mptcp and mp < seen), verified=ok if flow.mptcp else False,
        subflows=None, expected_paths=[])
