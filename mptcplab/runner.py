"""Running a lab: every scenario x repetition on a freshly built network.

Each repetition gets its own network (deploy takes well under a second), so no
PMTU exception, TCP metric or MPTCP state leaks from one repetition to the next.
Teardown runs on every exit path (normal end, error, Ctrl-C, SIGTERM).
"""

from __future__ import annotations

import json
import signal
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from .analysis import CaptureFile, analyze_flow
from .analysis import FlowSpec as AnalysisSpec
from .analysis.analyze import write_tables
from .analysis.labspec import backup_paths, path_rates, signal_paths
from .analysis.verdict import transfer_failure
from .capture import capture_file_name
from .lab.loader import ScenarioRun
from .lab.network import Network
from .lab.schema import ExperimentBody, Flow
from .linkcheck import RATE_CHECK_CC as LINK_CHECK_CC  # noqa: F401 - former name, kept importable
from .plan import build_plan
from .results.model import UNCLASSIFIED, Repetition
from .steps import READY_TIMEOUT_S, Rep, RunContext, Teardown, flow_duration, measurement_steps
from .supervise import Supervisor
from .traffic import read_iperf3

__all__ = ["READY_TIMEOUT_S", "AnalysisJob", "Interrupted", "Measured", "RepRunner", "RunContext", "analyse",
           "config_diagnostics", "expected_paths", "flow_duration", "install_signal_handlers",
           "restore_signal_handlers"]


class Interrupted(Exception):
    """SIGTERM/SIGINT during a run; teardown runs, the run is marked incomplete."""


_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def install_signal_handlers() -> dict[int, Any]:
    """Turn SIGTERM/SIGINT/SIGHUP into Interrupted; after the first one, further
    signals are ignored so the teardown it triggers is not itself interrupted.
    Returns the previous handlers (restore_signal_handlers)."""

    def handler(signum: int, _frame: Any) -> None:
        for s in _SIGNALS:
            signal.signal(s, signal.SIG_IGN)
        raise Interrupted(signal.Signals(signum).name)

    return {s: signal.signal(s, handler) for s in _SIGNALS}


def restore_signal_handlers(previous: dict[int, Any]) -> None:
    for s, h in previous.items():
        signal.signal(s, h)


@dataclass
class AnalysisJob:
    """Everything the analysis of one measured repetition needs (picklable: it runs
    in a worker process while the next repetition is measured)."""

    scenario: str
    rep: int
    sweep_point: dict[str, Any]
    out: Path
    body: ExperimentBody
    net: Network
    measured: str
    clients: dict[str, dict[str, Any]]
    calibration: list[dict[str, Any]]
    extra: dict[str, Any]
    warnings: list[str]
    workers: int | None = None


@dataclass
class Measured:
    """A repetition whose network is gone and whose captures wait for analysis."""

    job: AnalysisJob
    sysctls: dict[str, dict[str, str]]
    seconds: float


def expected_paths(body: ExperimentBody, net: Network, flow: Flow) -> tuple[str, ...]:
    """Paths that should carry a subflow: the bound path, plus, for MPTCP, paths
    whose client address is a subflow/fullmesh endpoint and paths that reach an address
    the server announces (analysis/labspec.signal_paths)."""
    by_ep = {ep: label for label, ep in body.paths.items()}
    out = []
    if flow.bind and flow.bind in by_ep:
        out.append(by_ep[flow.bind])
    spec = body.nodes[flow.client].mptcp
    if flow.mptcp and spec:
        for e in spec.endpoints:
            if e.address in by_ep and ({"subflow", "fullmesh"} & set(e.flags)) and by_ep[e.address] not in out:
                out.append(by_ep[e.address])
    # addresses the server announces (ADD_ADDR) draw a subflow on the path that reaches them
    out += [p for p in signal_paths(body, net, flow) if p not in out]
    return tuple(out)


def config_diagnostics(body: ExperimentBody, flow: Flow) -> list[str]:
    """What the configuration alone says about subflows that cannot form."""
    out = []
    spec = body.nodes[flow.client].mptcp
    if flow.mptcp and spec:
        n = sum(1 for e in spec.endpoints if {"subflow", "fullmesh"} & set(e.flags))
        if n > spec.limits.subflows:
            out.append(f"client limits allow {spec.limits.subflows} extra subflow(s) but {n} subflow endpoints "
                       "are configured")
        srv = body.nodes[flow.server].mptcp
        if srv is None or srv.limits.subflows < n:
            have = srv.limits.subflows if srv else "default"
            out.append(f"server subflow limit ({have}) is lower than the client's {n} subflow endpoint(s)")
    return out


class RepRunner:
    """One repetition of one scenario, from deploy to teardown: the steps of
    steps.py in order, teardown on every exit path. Analysis comes after (analyse)."""

    def __init__(self, ctx: RunContext, scenario: ScenarioRun, rep: int, outdir: Path) -> None:
        self.ctx = ctx
        self.sc = scenario
        self.rep = rep
        self.out = outdir

    def measure(self) -> Measured:
        """Deploy, check links, capture, run traffic, tear down. No analysis."""
        t0 = time.monotonic()
        self.out.mkdir(parents=True, exist_ok=False)
        cmdlog = (self.out / "commands.log").open("w", buffering=1)  # line-buffered: a kill keeps the log
        try:
            backend = self.ctx.make_backend(lambda line: print(line, file=cmdlog))
            plan = build_plan(self.ctx.lab.topology, self.sc, self.ctx.emulator, backend, self.out,
                              file=str(self.ctx.lab.path / "experiment.yml"))
            rep = Rep(self.ctx, self.sc, self.out, backend, plan, Supervisor(backend.node_argv, logdir=self.out))
            try:
                for step in measurement_steps():
                    step.run(rep)
            finally:
                Teardown().run(rep)
        finally:
            cmdlog.close()
        flows = self.sc.body.traffic.flows
        measured_name = next(n for n, f in flows.items() if f.role == "measured")
        job = AnalysisJob(self.sc.name, self.rep, self.sc.sweep_point, self.out, self.sc.body, plan.net,
                          measured_name, rep.clients, rep.calibration, rep.extra, list(rep.warnings))
        return Measured(job, rep.sysctls, time.monotonic() - t0)


def analyse(job: AnalysisJob) -> dict[str, Any]:
    """Captures and iperf3 JSON of one repetition -> its record (also written to rep.json)."""
    body, net, out = job.body, job.net, job.out
    flow = body.traffic.flows[job.measured]
    clients = job.clients
    # coded warnings (docs/results-format.md): the steps' own are plain text (unclassified)
    warnings: list[dict[str, Any]] = [_coded(UNCLASSIFIED, w) for w in job.warnings]
    iperf = read_iperf3(clients[job.measured]["path"])
    if iperf.error:
        warnings.append(_coded("iperf3-error", f"iperf3 reported an error: {iperf.error}"))
    path_of_ip = {str(net.address(ep)): label for label, ep in body.paths.items()}
    spec = AnalysisSpec(server_ip=str(net.address(flow.server_address)), server_port=flow.port,
                        paths=path_of_ip, expected_paths=expected_paths(body, net, flow), mptcp=flow.mptcp,
                        direction=flow.direction, path_rates_bps=path_rates(body, net, flow.server),
                        backup_paths=backup_paths(body, flow))
    caps = [CaptureFile(out / capture_file_name(cp.point), cp.point) for cp in body.capture]
    fa = analyze_flow(caps, spec, workers=job.workers)
    write_tables(fa, out)     # timeseries.csv, icmp.csv, dsn.csv, mptcp_*.csv
    subflows = [asdict(s) for s in fa.subflows]
    pd.DataFrame(subflows).to_csv(out / "subflows.csv", index=False)
    if flow.mptcp:
        if not fa.mptcp_negotiated:
            warnings.append(_coded("mptcp-fallback",
                                   "MPTCP requested but NOT negotiated: this is a plain TCP result (fallback)"))
        elif fa.fallback:
            warnings.append(_coded("mptcp-fallback", "MPTCP fell back to TCP during the connection"))
    failed = transfer_failure(iperf.error, iperf.goodput_mbps, clients[job.measured].get("rc"))
    if failed is not None:
        # a transfer that failed verifies nothing, whatever the capture shows
        fa.verified = False
        fa.findings.insert(0, failed)
    # the verification rule's findings keep their codes (join-unreachable, weak-subflow, ...)
    warnings += [_coded(f.code, f.message, f.path) for f in fa.findings]
    warnings += [_coded(UNCLASSIFIED, w) for w in getattr(fa, "warnings", [])]
    if flow.mptcp and not fa.verified:
        warnings += [_coded("mptcp-limits", w) for w in config_diagnostics(body, flow)]
    others = {n: read_iperf3(c["path"]).goodput_mbps for n, c in clients.items() if n != job.measured}
    record = {
        "name": job.scenario, "rep": job.rep, "dir": None,
        "sweep": job.sweep_point,
        "goodput_mbps": round(iperf.goodput_mbps, 3),
        "sender_mbps": round(iperf.sender_mbps, 3),
        "retransmits": iperf.retransmits,
        "duration_s": iperf.seconds,
        "iperf3_error": iperf.error,
        "cpu": {"client": iperf.cpu_host, "server": iperf.cpu_remote},
        "mptcp": {"requested": flow.mptcp, "negotiated": fa.mptcp_negotiated, "fallback": fa.fallback,
                  "verified": fa.verified if flow.mptcp else False,
                  "subflows": sum(1 for s in fa.subflows if s.established),
                  "expected_paths": list(spec.expected_paths),
                  "data_retransmissions": fa.mptcp_retransmissions,
                  "data_retrans_bytes": fa.mptcp_retrans_bytes,
                  "dss_checksum": fa.dss_checksum, "checksum_required": fa.checksum_required},
        "subflows": subflows,
        "add_addrs": fa.add_addrs,
        "warnings": warnings,
        "findings": [f.to_dict() for f in fa.findings],
        "calibration_ok": all(c["ok"] for c in job.calibration),
        "other_flows_goodput_mbps": others,
        "analysis_seconds": round(fa.analysis_seconds, 3),
        "packets": fa.packets,
        **job.extra,
    }
    # the result model is the contract (docs/results-format.md): a record it cannot read fails here
    rep = Repetition.model_validate(record)
    (out / "rep.json").write_text(json.dumps(rep.model_dump(), indent=2, default=str))
    return record




def _coded(code: str, message: str, path: str | None = None) -> dict[str, Any]:
    """A warning as the result model holds it (results/model.py Warning)."""
    return {"code": code, "message": message, "path": path}
