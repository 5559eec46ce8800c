"""Running a lab: every scenario x repetition on a freshly built network.

Each repetition gets its own network (deploy takes well under a second), so no
PMTU exception, TCP metric or MPTCP state leaks from one repetition to the next.
Teardown runs on every exit path (normal end, error, Ctrl-C, SIGTERM).
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from .analysis import CaptureFile, analyze_flow
from .analysis import FlowSpec as AnalysisSpec
from .analysis.labspec import backup_paths, path_rates, signal_paths
from .analysis.verdict import transfer_failure
from .backends.base import Backend
from .backends.netns import NetnsBackend
from .capture import capture_command, capture_file_name, parse_tcpdump_stats
from .commands import cmd
from .emulation.backend import Emulator
from .emulation.supervise import Supervisor
from .lab.loader import Lab, ScenarioRun
from .lab.network import Link, Network
from .lab.schema import ExperimentBody, Flow
from .linkcheck import Check, ping_argv, rate_check, rtt_checks
from .netconfig import firewall_counter_cmd
from .plan import Plan, bring_up, build_plan
from .results.model import Repetition
from .traffic import IPERF3_HELP, flow_commands, help_has_multipath, read_iperf3
from .units import parse_time

# An upper bound on waiting for a server or a capture to be ready, not a delay: each probe
# is a command in the node (a `docker exec` on containerlab), which under a software-emulated
# CPU takes seconds, and 5 s timed out there (make test-vm, iperf3 in a container).
READY_TIMEOUT_S = 30.0
LINK_CHECK_CC = "cubic"


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


@dataclass
class RunContext:
    lab: Lab
    emulator: Emulator
    quick: bool
    log: Callable[[str], None] = print
    calibrate: bool = True
    #: rate checks already made in this run, by (link, shape, mtu): a link configured
    #: identically in several scenarios is rate-checked once (RTT is checked every time)
    rate_cache: dict[tuple[str, str, int], Check] = field(default_factory=dict)
    #: the backend of each repetition, given the command-log writer
    make_backend: Callable[[Callable[[str], None]], Backend] = lambda log: NetnsBackend(log=log)


def _wait_for(pred: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.02)
    raise RuntimeError(f"timed out after {timeout:g} s waiting for {what}")


def _file_has(path: Path, text: str) -> bool:
    try:
        return text in path.read_text(errors="replace")
    except OSError:
        return False


def flow_duration(ctx: RunContext, body: ExperimentBody, flow: Flow) -> float:
    return parse_time(body.quick.duration) if ctx.quick else parse_time(flow.duration)


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
            out.append(f"client limits allow {spec.limits.subflows} extra subflow(s) but {n} subflow endpoints are configured")
        srv = body.nodes[flow.server].mptcp
        if srv is None or srv.limits.subflows < n:
            have = srv.limits.subflows if srv else "default"
            out.append(f"server subflow limit ({have}) is lower than the client's {n} subflow endpoint(s)")
    return out


class RepRunner:
    """One repetition of one scenario, from deploy to analysis."""

    def __init__(self, ctx: RunContext, scenario: ScenarioRun, rep: int, outdir: Path) -> None:
        self.ctx = ctx
        self.sc = scenario
        self.rep = rep
        self.out = outdir
        self.warnings: list[str] = []

    def measure(self) -> Measured:
        """Deploy, check links, capture, run traffic, tear down. No analysis."""
        t0 = time.monotonic()
        self.out.mkdir(parents=True, exist_ok=False)
        cmdlog = (self.out / "commands.log").open("w", buffering=1)  # line-buffered: a kill keeps the log
        backend = self.ctx.make_backend(lambda line: print(line, file=cmdlog))
        body = self.sc.body
        plan = build_plan(self.ctx.lab.topology, self.sc, self.ctx.emulator, backend, self.out,
                          file=str(self.ctx.lab.path / "experiment.yml"))
        supervisor = Supervisor(backend.node_argv, logdir=self.out)
        flows = body.traffic.flows
        measured_name = next(n for n, f in flows.items() if f.role == "measured")
        calibration: list[dict[str, Any]] = []
        sysctls: dict[str, dict[str, str]] = {}
        extra: dict[str, Any] = {}
        try:
            bring_up(backend, plan, supervisor)
            if self.ctx.calibrate and body.calibration.enabled:
                calibration = self._calibrate(backend, plan)
            sysctls = self._read_sysctls(backend, plan)
            captures = self._start_captures(backend, body)
            servers = self._start_servers(backend, plan.net, body)
            clients = self._run_clients(backend, plan.net, body, supervisor)
            supervisor.check()  # a delay line that died invalidates the run: fail loudly
            for name, (p, path) in servers.items():
                try:
                    p.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self.warnings.append(f"iperf3 server of flow {name} did not exit")
            extra["capture_stats"] = self._stop_captures(backend, captures)
            extra["delay_line_stats"] = supervisor.stop_all()
            extra["firewall"] = self._firewall_counters(backend, plan, body)
        finally:
            supervisor.close()
            backend.destroy()
            cmdlog.close()
        job = AnalysisJob(self.sc.name, self.rep, self.sc.sweep_point, self.out, body, plan.net, measured_name,
                          clients, calibration, extra, list(self.warnings))
        return Measured(job, sysctls, time.monotonic() - t0)

    # ------------------------------------------------------------------ steps
    def _multipath(self, backend: Backend, node: str) -> bool:
        """Whether the iperf3 on this node has -m (in a container it is the image's)."""
        p = backend.run([cmd(*IPERF3_HELP, node=node, check=False)])[0]
        return help_has_multipath(p.stdout + p.stderr)

    def _calibrate(self, backend: Backend, plan: Plan) -> list[dict[str, Any]]:
        results = []
        for link in plan.net.links:
            if not link.shape.impaired:
                continue
            a, b = link.a, link.b
            src, dst = str(link.addr(a).ip), str(link.addr(b).ip)
            interval = 0.01 if link.shape.delay_s < 0.05 else 0.05
            p = backend.run([cmd(*ping_argv(dst, src, 10, interval), node=a.node, check=False)])[0]
            checks: list[Check] = rtt_checks(link.shape, p.stdout)
            rate_measured_here = False
            if self.sc.body.calibration.rate_check and link.shape.rate_bps:
                key = (link.name, repr(link.shape), link.mtu)
                if key not in self.ctx.rate_cache:
                    self.ctx.rate_cache[key] = rate_check(link.shape, self._link_rate(backend, link, src, dst))
                    rate_measured_here = True
                checks.append(self.ctx.rate_cache[key])
            entry = {"link": link.name, "configured": _shape_dict(link.shape, link.mtu),
                     "checks": [c.as_dict() for c in checks], "ok": all(c.ok for c in checks),
                     "rate_measured_in_this_rep": rate_measured_here}
            if not entry["ok"]:
                bad = "; ".join(f"{c.quantity} {c.measured} vs {c.configured} ({c.tolerance})" for c in checks if not c.ok)
                self.warnings.append(f"link {link.name} out of tolerance: {bad}")
            results.append(entry)
        return results

    def _link_rate(self, backend: Backend, link: Link, src: str, dst: str) -> float | None:
        a, b = link.a, link.b
        port = 5299
        secs = parse_time(self.sc.body.calibration.rate_seconds)
        srv = backend.spawn(b.node, ["iperf3", "-s", "-1", "-p", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
        try:
            _wait_for(lambda: _listening(backend, b.node, port), READY_TIMEOUT_S, f"iperf3 on {b.node}")
            # -O 1: slow start is not the link's rate; the seconds after it are.
            # -C cubic: the check must not depend on the host's default algorithm
            # (namespaces inherit it; BBR under-fills a tbf link with jumbo frames)
            p = backend.run([cmd("iperf3", "-c", dst, "-B", src, "-p", port, "-t", f"{secs:g}", "-O", "1",
                                 "-C", LINK_CHECK_CC, "-J", node=a.node, check=False)])[0]
            try:
                return json.loads(p.stdout)["end"]["sum_received"]["bits_per_second"] / 1e6
            except (ValueError, KeyError):
                return None
        finally:
            backend.signal(srv, signal.SIGTERM)
            srv.wait(timeout=5)

    def _read_sysctls(self, backend: Backend, plan: Plan) -> dict[str, dict[str, str]]:
        keys = ["net.mptcp.enabled", "net.mptcp.scheduler", "net.mptcp.pm_type", "net.ipv4.tcp_congestion_control",
                "net.ipv4.tcp_mtu_probing", "net.ipv4.tcp_base_mss", "net.ipv4.tcp_wmem", "net.ipv4.tcp_rmem",
                "net.ipv4.tcp_no_metrics_save", "net.ipv4.ip_forward", "net.ipv4.conf.all.rp_filter"]
        out: dict[str, dict[str, str]] = {}
        for name, node in plan.net.nodes.items():
            wanted = list(dict.fromkeys([*node.sysctls, *keys]))
            p = backend.run([cmd("sysctl", "-e", *wanted, node=name, check=False)])[0]
            vals = {}
            for line in p.stdout.splitlines():
                k, _, v = line.partition(" = ")
                vals[k.strip()] = " ".join(v.split())
            out[name] = vals
            for k, v in node.sysctls.items():
                if " ".join(str(v).split()) != vals.get(k):
                    self.warnings.append(f"{name}: sysctl {k} set to {v!r} but reads back {vals.get(k)!r}")
        return out

    def _start_captures(self, backend: Backend, body: ExperimentBody) -> list[tuple[Any, subprocess.Popen[bytes], Path]]:
        caps = []
        for cp in body.capture:
            cc = capture_command(cp, self.out)
            err = self.out / (cc.path.stem + ".tcpdump.log")
            p = backend.spawn(cc.node, cc.argv, stdout=subprocess.DEVNULL, stderr=err.open("wb"))
            caps.append((cc, p, err))
        for cc, p, err in caps:
            _wait_for(lambda: _file_has(err, "listening on") or p.poll() is not None, READY_TIMEOUT_S,
                      f"tcpdump on {cc.node}:{cc.iface}")
            if p.poll() is not None:
                raise RuntimeError(f"tcpdump on {cc.node}:{cc.iface} failed: {err.read_text().strip()}")
        return caps

    def _stop_captures(self, backend: Backend,
                       caps: list[tuple[Any, subprocess.Popen[bytes], Path]]) -> dict[str, dict[str, int]]:
        stats = {}
        # a capture that ended before we stop it (killed, crashed) holds part of the run
        # only: it must not pass as evidence (issue 12: tests/faults found it did)
        died = {cc.path: p.poll() for cc, p, err in caps}
        for cc, p, err in caps:
            backend.signal(p, signal.SIGINT)  # SIGINT: tcpdump flushes and prints its counters
        for cc, p, err in caps:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                backend.signal(p, signal.SIGKILL)
                p.wait(timeout=5)
            s = parse_tcpdump_stats(err.read_text(errors="replace"))
            if died[cc.path] is not None:
                s["died"] = died[cc.path]
                self.warnings.append(f"capture {cc.node}:{cc.iface} ended before the run stopped it "
                                     f"(exit status {died[cc.path]}): the capture is incomplete")
            stats[f"{cc.node}:{cc.iface}"] = s
            if s.get("dropped"):
                self.warnings.append(f"capture {cc.node}:{cc.iface} dropped {s['dropped']} packets: segment statistics are incomplete")
        return stats

    def _start_servers(self, backend: Backend, net: Network, body: ExperimentBody) -> dict[str, tuple[subprocess.Popen[bytes], Path]]:
        servers = {}
        for name, flow in body.traffic.flows.items():
            fc = flow_commands(flow, net, flow_duration(self.ctx, body, flow), self._multipath(backend, flow.server))
            path = self.out / f"iperf3-server-{name}.json"
            servers[name] = (backend.spawn(fc.server_node, fc.server_argv, stdout=path.open("wb"),
                                           stderr=subprocess.STDOUT), path)
        for name, flow in body.traffic.flows.items():
            _wait_for(lambda: _listening(backend, flow.server, flow.port), READY_TIMEOUT_S, f"iperf3 server of flow {name}")
        return servers

    def _run_clients(self, backend: Backend, net: Network, body: ExperimentBody,
                     supervisor: Supervisor) -> dict[str, dict[str, Any]]:
        flows = body.traffic.flows
        started: dict[str, tuple[subprocess.Popen[bytes], Path, float]] = {}
        t0 = time.monotonic()
        pending = sorted(flows.items(), key=lambda kv: parse_time(kv[1].start))
        longest = max(parse_time(f.start) + flow_duration(self.ctx, body, f) for f in flows.values())
        deadline = t0 + longest + 30
        while pending or any(p.poll() is None for p, _, _ in started.values()):
            now = time.monotonic()
            while pending and now - t0 >= parse_time(pending[0][1].start):
                name, flow = pending.pop(0)
                fc = flow_commands(flow, net, flow_duration(self.ctx, body, flow),
                                   self._multipath(backend, flow.client))
                path = self.out / ("iperf3.json" if flow.role == "measured" else f"iperf3-{name}.json")
                err = self.out / f"iperf3-{name}.stderr"
                started[name] = (backend.spawn(fc.client_node, fc.client_argv, stdout=path.open("wb"),
                                               stderr=err.open("wb")), path, time.time())
            supervisor.check()
            if now > deadline:
                raise RuntimeError("iperf3 clients did not finish 30 s after their duration")
            time.sleep(0.05)
        return {name: {"path": path, "started": ts, "rc": p.returncode} for name, (p, path, ts) in started.items()}

    def _firewall_counters(self, backend: Backend, plan: Plan, body: ExperimentBody) -> dict[str, int]:
        out = {}
        for name, spec in body.nodes.items():
            if not spec.drop_icmp_frag_needed:
                continue
            p = backend.run([firewall_counter_cmd(name)])[0]
            try:
                rules = [x["rule"] for x in json.loads(p.stdout)["nftables"] if "rule" in x]
                out[name] = sum(e["counter"]["packets"] for r in rules for e in r["expr"] if "counter" in e)
            except (ValueError, KeyError):
                out[name] = -1
        return out


def analyse(job: AnalysisJob) -> dict[str, Any]:
    """Captures and iperf3 JSON of one repetition -> its record (also written to rep.json)."""
    body, net, out = job.body, job.net, job.out
    flow = body.traffic.flows[job.measured]
    clients = job.clients
    warnings = list(job.warnings)
    iperf = read_iperf3(clients[job.measured]["path"])
    if iperf.error:
        warnings.append(f"iperf3 reported an error: {iperf.error}")
    path_of_ip = {str(net.address(ep)): label for label, ep in body.paths.items()}
    spec = AnalysisSpec(server_ip=str(net.address(flow.server_address)), server_port=flow.port,
                        paths=path_of_ip, expected_paths=expected_paths(body, net, flow), mptcp=flow.mptcp,
                        direction=flow.direction, path_rates_bps=path_rates(body, net, flow.server),
                        backup_paths=backup_paths(body, flow))
    caps = [CaptureFile(out / capture_file_name(cp.point), cp.point) for cp in body.capture]
    fa = analyze_flow(caps, spec, workers=job.workers)
    fa.timeseries.to_csv(out / "timeseries.csv", index=False)
    fa.icmp_events.to_csv(out / "icmp.csv", index=False)
    subflows = [asdict(s) for s in fa.subflows]
    pd.DataFrame(subflows).to_csv(out / "subflows.csv", index=False)
    if flow.mptcp:
        if not fa.mptcp_negotiated:
            warnings.append("MPTCP requested but NOT negotiated: this is a plain TCP result (fallback)")
        elif fa.fallback:
            warnings.append("MPTCP fell back to TCP during the connection")
    failed = transfer_failure(iperf.error, iperf.goodput_mbps, clients[job.measured].get("rc"))
    if failed is not None:
        # a transfer that failed verifies nothing, whatever the capture shows
        fa.verified = False
        fa.findings.insert(0, failed)
        warnings.append(failed.message)
    warnings += fa.diagnostics
    warnings += getattr(fa, "warnings", [])
    if flow.mptcp and not fa.verified:
        warnings += config_diagnostics(body, flow)
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
                  "expected_paths": list(spec.expected_paths)},
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


def _shape_dict(shape: Any, mtu: int) -> dict[str, Any]:
    return {"rate_bps": shape.rate_bps, "delay_s": shape.delay_s, "jitter_s": shape.jitter_s, "loss": shape.loss,
            "queue_bytes": shape.queue_bytes(mtu) if shape.rate_bps else None, "mtu": mtu}


def _listening(backend: Backend, node: str, port: int) -> bool:
    p = backend.run([cmd("ss", "-Hltn", f"sport = :{port}", node=node, check=False)])[0]
    return bool(p.stdout.strip())
