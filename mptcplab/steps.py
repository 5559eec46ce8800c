"""The steps of one repetition, each with ``commands()`` (what it will run) and
``run()`` (running it). The run executes the steps in order; ``--dry-run`` walks the
same steps and prints their ``commands()``: the dry run is the run minus execution,
so the two cannot drift apart (tests/integration/test_dry_run_matches_run.py holds
them to it against a real run's commands.log).

Order (why: docs/architecture.md): engine congestion controls (cc/step.py), deploy,
link check, sysctl read-back, start probes (the capture first: probes/tcpdump.py),
traffic, stop probes (the capture last), stop daemons, firewall counters, teardown.
Teardown also runs when an earlier step fails (RepRunner), and releases what probes
hold host-wide (a tracefs instance) and, last, the engine congestion controls the
repetition holds (a BPF struct_ops registration). Timeline events and controllers will
be further steps.
"""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .backends.base import Backend
from .commands import Cmd, cmd
from .emulation.linkmodel import DirectedLink
from .lab.network import Link
from .lab.schema import ExperimentBody, Flow
from .linkcheck import Check, RateCheckCmds, judge_rate, ping_cmd, rate_check_cmds, rtt_checks
from .middlebox.nft import counter_cmd as mb_counter_cmd
from .netconfig import firewall_counter_cmd
from .plan import Plan, bring_up
from .traffic import IPERF3_HELP, KindContext, help_has_multipath, kind_of
from .traffic.control import FlowControl
from .units import parse_time

if TYPE_CHECKING:
    from .emulation.base import Emulator
    from .lab.model import Lab, ScenarioRun
    from .progress import TrafficProgress
    from .supervise import Supervisor

# An upper bound on waiting for a server or a capture to be ready, not a delay: each probe
# is a command in the node (a `docker exec` on containerlab), which under a software-emulated
# CPU takes seconds, and 5 s timed out there (make test-vm, iperf3 in a container).
READY_TIMEOUT_S = 30.0
#: clients still running this long after their planned end fail the repetition
CLIENT_GRACE_S = 30.0
#: a background client (hold) must be ready within this (a thousand connections take
#: ~0.1 s; starting Python in a namespace on the loaded host up to several seconds)
BACKGROUND_READY_TIMEOUT_S = 60.0
#: how long a background client has to close its connections and report after SIGINT
BACKGROUND_STOP_S = 10.0

#: read back on every node after configuration (plus the sysctls the lab sets): what
#: decides MPTCP, TCP and forwarding behaviour, recorded in the manifest
SYSCTL_READBACK: tuple[str, ...] = (
    "net.mptcp.enabled", "net.mptcp.scheduler", "net.mptcp.pm_type", "net.ipv4.tcp_congestion_control",
    "net.ipv4.tcp_mtu_probing", "net.ipv4.tcp_base_mss", "net.ipv4.tcp_wmem", "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_no_metrics_save", "net.ipv4.ip_forward", "net.ipv4.conf.all.rp_filter",
)


def _default_backend(log: Callable[[str], None]) -> Backend:
    from .backends.netns import NetnsBackend

    return NetnsBackend(log=log)


@dataclass
class RunContext:
    lab: Lab
    emulator: Emulator
    quick: bool
    log: Callable[[str], None] = print
    calibrate: bool = True
    #: rate checks already made in this run, by (link, direction, shape, mtu): a link configured
    #: identically in several scenarios is rate-checked once (RTT is checked every time)
    rate_cache: dict[tuple[str, str, str, int], Check] = field(default_factory=dict)
    #: the backend of each repetition, given the command-log writer
    make_backend: Callable[[Callable[[str], None]], Backend] = _default_backend
    #: told when a repetition's traffic starts and ends (the live status line; None: nobody)
    progress: TrafficProgress | None = None


@dataclass
class Rep:
    """What the steps of one repetition share: inputs, and what they found."""

    ctx: RunContext
    sc: ScenarioRun
    out: Path
    backend: Backend
    plan: Plan
    supervisor: Supervisor | None = None  # None in a dry run
    warnings: list[str] = field(default_factory=list)
    calibration: list[dict[str, Any]] = field(default_factory=list)
    sysctls: dict[str, dict[str, str]] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    clients: dict[str, dict[str, Any]] = field(default_factory=dict)
    servers: dict[str, tuple[subprocess.Popen[bytes], Path]] = field(default_factory=dict)
    multipath: dict[str, bool] = field(default_factory=dict)
    #: time.time() when the (first) measured flow's client was spawned: the timeline's zero,
    #: on the capture clock (CONTRACT.md); t_zero_event is set at that moment
    t_zero: float | None = None
    t_zero_event: threading.Event = field(default_factory=threading.Event)
    #: start(name) / stop(name) of named flows, set by the Traffic step (traffic/control.py)
    flow_control: FlowControl | None = None
    #: the probes of this repetition (probes/step.py, which types them: probes/base.Probe), started
    #: before traffic; Any here, like timeline and cc_holds: the framework imports none of the
    #: packages that build on it
    probes: list[Any] = field(default_factory=list)
    #: the running timeline (timeline/step.py), and what teardown must stop first
    timeline: Any = None
    on_teardown: list[Callable[[], object]] = field(default_factory=list)
    #: engine congestion controls this repetition holds (cc/holds.py), released at teardown
    cc_holds: list[Any] = field(default_factory=list)

    @property
    def body(self) -> ExperimentBody:
        return self.sc.body

    @property
    def running(self) -> Supervisor:
        assert self.supervisor is not None, "a dry run executes no step"
        return self.supervisor


@dataclass(frozen=True)
class Planned:
    """One command a step runs: in the background (``&``) or to completion; ``note``
    is printed beside it by the dry run; ``stage`` heads a group of commands."""

    cmd: Cmd
    background: bool = False
    note: str = ""
    stage: str = ""
    #: done by the runner itself, not by a process (a tracefs file write): the dry run
    #: prints it as a comment, the command log has no line for it
    in_process: bool = False


class Step(ABC):
    title: str

    @abstractmethod
    def commands(self, rep: Rep) -> list[Planned]:
        """Every command run() will run, in order (a command repeated until a
        condition holds appears once, with a note)."""

    @abstractmethod
    def run(self, rep: Rep) -> None: ...


def wait_for(pred: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.02)
    raise RuntimeError(f"timed out after {timeout:g} s waiting for {what}")


def _answers(backend: Backend, c: Cmd) -> bool:
    return bool(backend.run([c])[0].stdout.strip())


def listening_cmd(node: str, port: int) -> Cmd:
    return cmd("ss", "-Hltn", f"sport = :{port}", node=node, check=False)


UNTIL_READY = "repeated until it answers"


# ------------------------------------------------------------------ deploy
class Deploy(Step):
    title = "deploy"

    def commands(self, rep: Rep) -> list[Planned]:
        plan = rep.plan
        out = [Planned(c, note=c.why, stage=t) for t, cmds in plan.stages_before_daemons() for c in cmds]
        out += [Planned(Cmd(d.argv, node=d.node), background=True, note=d.name,
                        stage="link-emulation daemons (started and waited for before packets are steered to them)")
                for d in plan.daemons]
        out += [Planned(c, note=c.why, stage=t) for t, cmds in plan.stages_after_daemons() for c in cmds]
        return out

    def run(self, rep: Rep) -> None:
        bring_up(rep.backend, rep.plan, rep.running)


# ------------------------------------------------------------------ link check
def _shape_dict(shape: Any, mtu: int, direction: str) -> dict[str, Any]:
    return {"direction": direction, "rate_bps": shape.rate_bps, "delay_s": shape.delay_s, "jitter_s": shape.jitter_s,
            "loss": shape.loss, "queue_bytes": shape.queue_bytes(mtu) if shape.rate_bps else None, "mtu": mtu}


def _direction_name(dl: DirectedLink) -> str:
    return f"{dl.src}->{dl.dst}"


class LinkCheck(Step):
    """RTT on every repetition (both directions at once: a round trip); rate (one TCP flow, or
    UDP above the rate where the queue holds less than a round trip: linkcheck.rate_check_cmds,
    judge_rate) once per run for each distinct link configuration, the result
    shared by every scenario. A symmetric link's rate is checked a -> b only (b -> a is the
    same shape on the same emulator); an asymmetric link's in each direction against its
    own shape, the sender at that direction's source."""

    title = "link checks (RTT on every repetition; rate once per run per distinct link configuration)"

    @staticmethod
    def _enabled(rep: Rep) -> bool:
        return rep.ctx.calibrate and rep.body.calibration.enabled

    @staticmethod
    def _links(rep: Rep) -> list[Link]:
        return [link for link in rep.plan.net.links if link.impaired]

    @staticmethod
    def _ends(link: Link) -> tuple[str, str]:
        return str(link.addr(link.a).ip), str(link.addr(link.b).ip)

    def _rate_cmds(self, rep: Rep, link: Link, dl: DirectedLink) -> Any:
        # the client sends: it runs at the direction's source, the server at its end
        return rate_check_cmds(dl.dst.node, dl.src.node, str(link.addr(dl.src).ip), str(link.addr(dl.dst).ip),
                               parse_time(rep.body.calibration.rate_seconds), shape=dl.shape, mtu=link.mtu)

    def _rated(self, rep: Rep, link: Link) -> list[DirectedLink]:
        """The directions whose rate is checked."""
        if not rep.body.calibration.rate_check:
            return []
        dirs = link.directions()[:1] if link.symmetric else link.directions()
        return [dl for dl in dirs if dl.shape.rate_bps]

    @staticmethod
    def _ping(link: Link) -> Cmd:
        src, dst = LinkCheck._ends(link)
        return ping_cmd(link.a.node, dst, src, link.shape_ab, back=link.shape_ba)

    def commands(self, rep: Rep) -> list[Planned]:
        out: list[Planned] = []
        if not self._enabled(rep):
            return out
        for link in self._links(rep):
            out.append(Planned(self._ping(link), note=f"link {link.name}: RTT"))
            for dl in self._rated(rep, link):
                rc = self._rate_cmds(rep, link, dl)
                out += [Planned(rc.server, background=True,
                                note=f"link {link.name}: rate {_direction_name(dl)} (once per run)"),
                        Planned(rc.listening, note=UNTIL_READY), Planned(rc.client)]
        return out

    def run(self, rep: Rep) -> None:
        if not self._enabled(rep):
            return
        for link in self._links(rep):
            p = rep.backend.run([self._ping(link)])[0]
            checks: list[Check] = rtt_checks(link.shape_ab, p.stdout, back=link.shape_ba)
            rate_measured_here = False
            for dl in self._rated(rep, link):
                key = (link.name, _direction_name(dl), repr(dl.shape), link.mtu)
                if key not in rep.ctx.rate_cache:
                    rc = self._rate_cmds(rep, link, dl)
                    rep.ctx.rate_cache[key] = judge_rate(rc, dl.shape, link.mtu, self._rate(rep, rc),
                                                         _direction_name(dl))
                    rate_measured_here = True
                checks.append(rep.ctx.rate_cache[key])
            ab, ba = link.directions()
            entry = {"link": link.name, "configured": _shape_dict(ab.shape, link.mtu, _direction_name(ab)),
                     "configured_reverse": _shape_dict(ba.shape, link.mtu, _direction_name(ba)),
                     "checks": [c.as_dict() for c in checks], "ok": all(c.ok for c in checks),
                     "rate_measured_in_this_rep": rate_measured_here}
            if not entry["ok"]:
                bad = "; ".join(f"{c.quantity}{f' {c.direction}' if c.direction not in (None, 'both') else ''} "
                                f"{c.measured} vs {c.configured} ({c.tolerance})"
                                for c in checks if not c.ok)
                rep.warnings.append(f"link {link.name} out of tolerance: {bad}")
            rep.calibration.append(entry)

    def _rate(self, rep: Rep, rc: RateCheckCmds) -> str:
        """The rate check's client output (iperf3's JSON)."""
        backend = rep.backend
        assert rc.server.node is not None
        srv = backend.spawn(rc.server.node, rc.server.argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for(lambda: _answers(backend, rc.listening), READY_TIMEOUT_S, f"iperf3 on {rc.server.node}")
            return backend.run([rc.client])[0].stdout
        finally:
            backend.signal(srv, signal.SIGTERM)
            srv.wait(timeout=5)


# ------------------------------------------------------------------ sysctl read-back
class SysctlReadback(Step):
    title = "sysctl read-back"

    @staticmethod
    def _cmds(rep: Rep) -> list[Cmd]:
        return [cmd("sysctl", "-e", *dict.fromkeys([*node.sysctls, *SYSCTL_READBACK]), node=name, check=False)
                for name, node in rep.plan.net.nodes.items()]

    def commands(self, rep: Rep) -> list[Planned]:
        return [Planned(c) for c in self._cmds(rep)]

    def run(self, rep: Rep) -> None:
        for c in self._cmds(rep):
            assert c.node is not None
            p = rep.backend.run([c])[0]
            vals = {}
            for line in p.stdout.splitlines():
                k, _, v = line.partition(" = ")
                vals[k.strip()] = " ".join(v.split())
            rep.sysctls[c.node] = vals
            for k, v in rep.plan.net.nodes[c.node].sysctls.items():
                if " ".join(str(v).split()) != vals.get(k):
                    rep.warnings.append(f"{c.node}: sysctl {k} set to {v!r} but reads back {vals.get(k)!r}")


# ------------------------------------------------------------------ traffic
def flow_duration(ctx: RunContext, body: ExperimentBody, flow: Flow) -> float:
    return flow_seconds(body, flow, ctx.quick)


def flow_seconds(body: ExperimentBody, flow: Flow, quick: bool) -> float:
    """How long a flow runs: the quick duration in a quick run, else its own. A byte-count
    flow ends when its bytes are sent; its duration is the limit, kept in quick runs too
    (the byte count is the experiment)."""
    if getattr(flow, "bytes", None) is not None:
        return parse_time(flow.duration)
    return parse_time(body.quick.duration) if quick else parse_time(flow.duration)


def event_started(body: ExperimentBody) -> dict[str, float]:
    """Flows a timeline ``flow_start`` event starts (CONTRACT.md), with the event's time
    (after the measured flow's start): their own start offset does not start them."""
    from .lab.events import FlowStart

    return {ev.flow: ev.at_s for ev in body.traffic.events if isinstance(ev, FlowStart)}


def event_started_flows(body: ExperimentBody) -> set[str]:
    return set(event_started(body))


def background_flows(body: ExperimentBody) -> list[str]:
    """Flows of a background kind (hold) that no timeline event starts: started before the
    others, stopped after them."""
    started_by_event = event_started_flows(body)
    return [n for n, f in body.traffic.flows.items() if kind_of(f).background and n not in started_by_event]


def measured_flows(body: ExperimentBody) -> list[str]:
    """Names of the measured flows in the lab's order; the first is the primary one (the
    repetition's top-level fields, iperf3.json)."""
    return [n for n, f in body.traffic.flows.items() if f.role == "measured"]


class StartOffsets:
    """When each flow starts, relative to the first: a start-offset scheduler the
    timeline of typed events will replace."""

    def __init__(self, flows: dict[str, Flow]) -> None:
        self.pending = sorted(((parse_time(f.start), name) for name, f in flows.items()))

    def due(self, elapsed_s: float) -> list[str]:
        out = []
        while self.pending and elapsed_s >= self.pending[0][0]:
            out.append(self.pending.pop(0)[1])
        return out

    @property
    def done(self) -> bool:
        return not self.pending


class Traffic(Step):
    """Each flow's server (waited for until it listens), then the background flows' clients
    (hold), waited for until their kind says they are ready, then the other clients at their
    start offsets (counted from then; flows a timeline event starts wait for it); what runs
    is the flow's kind's (mptcplab/traffic/). Background clients are stopped when the others
    have ended. Sets rep.t_zero when the first measured client starts."""

    title = "traffic"

    @staticmethod
    def _iperf3_nodes(rep: Rep) -> list[str]:
        flows = [f for f in rep.body.traffic.flows.values() if kind_of(f).uses_iperf3]
        return list(dict.fromkeys(n for f in flows for n in (f.server, f.client)))

    @staticmethod
    def help_cmd(node: str) -> Cmd:
        return cmd(*IPERF3_HELP, node=node, check=False, why="does this iperf3 have -m (else mptcpize)?")

    def _ctx(self, rep: Rep, flow: Flow, node: str | None = None) -> KindContext:
        # the dry run asks the host's iperf3 (node None), the run each node's
        mp = rep.multipath.get(node) if node else None
        return KindContext(rep.plan.net, flow_duration(rep.ctx, rep.body, flow), mp, rep.out)

    def _server(self, rep: Rep, name: str, flow: Flow, node: str | None = None) -> Cmd:
        return Cmd(kind_of(flow).server_argv(flow, name, self._ctx(rep, flow, node)), node=flow.server)

    def client_cmd(self, rep: Rep, name: str, flow: Flow, node: str | None = None) -> Cmd:
        return Cmd(kind_of(flow).client_argv(flow, name, self._ctx(rep, flow, node)), node=flow.client)

    def commands(self, rep: Rep) -> list[Planned]:
        flows = rep.body.traffic.flows
        by_event = event_started_flows(rep.body)
        out = [Planned(self.help_cmd(n), note="does this iperf3 have -m (else mptcpize)?")
               for n in self._iperf3_nodes(rep)]
        for name, flow in flows.items():
            out.append(Planned(self._server(rep, name, flow), background=True, note=f"flow {name}: {flow.kind} server"))
        out += [Planned(kind_of(f).ready_cmd(f), note=UNTIL_READY) for f in flows.values()]
        background = background_flows(rep.body)
        for name in background:
            f = flows[name]
            out.append(Planned(self.client_cmd(rep, name, f), background=True,
                               note=f"flow {name} ({f.kind}, background: before the others, stopped after them)"))
            ready = kind_of(f).client_ready_cmd(f)
            if ready is not None:
                out.append(Planned(ready, note=f"repeated until flow {name}'s client is ready"))
        for name, flow in sorted(flows.items(), key=lambda kv: parse_time(kv[1].start)):
            if name in by_event or name in background:
                continue  # printed by the timeline step, at its event's time; or above
            out.append(Planned(self.client_cmd(rep, name, flow), background=True,
                               note=f"flow {name} ({flow.kind}, {flow.role}), at +{parse_time(flow.start):g} s"))
        return out

    def run(self, rep: Rep) -> None:
        backend, body = rep.backend, rep.body
        for n in self._iperf3_nodes(rep):
            helped = backend.run([self.help_cmd(n)])[0]
            rep.multipath[n] = help_has_multipath(helped.stdout + helped.stderr)
        for name, flow in body.traffic.flows.items():
            kind_of(flow).prepare(flow, name, self._ctx(rep, flow, flow.server))
        for name, flow in body.traffic.flows.items():
            c = self._server(rep, name, flow, flow.server)
            suffix = ".json" if kind_of(flow).uses_iperf3 else ".log"
            path = rep.out / f"{'iperf3' if kind_of(flow).uses_iperf3 else flow.kind}-server-{name}{suffix}"
            rep.servers[name] = (backend.spawn(flow.server, c.argv, stdout=path.open("wb"),
                                               stderr=subprocess.STDOUT), path)
        for name, flow in body.traffic.flows.items():
            ready = kind_of(flow).ready_cmd(flow)
            wait_for(lambda c=ready: _answers(backend, c), READY_TIMEOUT_S,  # type: ignore[misc]
                     f"{flow.kind} server of flow {name}")
        try:
            self._run_clients(rep)
        finally:
            self._stop_servers(rep)
        rep.running.check()  # a delay line that died invalidates the run: fail loudly

    def _stop_servers(self, rep: Rep) -> None:
        """Each server stopped (SIGTERM when its kind runs until told, or when it runs to its
        client's end and that client was stopped mid-flow) and its exit status put
        beside its client's: a server that died by itself (a crash, a kill from outside)
        fails its flow even when the client finished, since its side of the record is lost."""
        flows = rep.body.traffic.flows
        for name, (server, _) in rep.servers.items():
            signalled = False
            if not kind_of(flows[name]).server_exits and server.poll() is None:
                rep.backend.signal(server, signal.SIGTERM)  # a web or echo server runs until told
                signalled = True
            client_stopped = bool(rep.clients.get(name, {}).get("stopped"))
            # a server whose client the run stopped ends within a round trip if the connection
            # still works (the client's close): no need to wait as long for it
            if not _waited(server, 2 if client_stopped else 5):
                if client_stopped:
                    # its client was stopped mid-transfer (a stall at the duration limit): told
                    # in turn, a server that ends by itself writes what it got (transfer_tool)
                    rep.backend.signal(server, signal.SIGTERM)
                    signalled = True
                if not _waited(server):
                    rep.warnings.append(f"{flows[name].kind} server of flow {name} did not exit")
                    rep.backend.signal(server, signal.SIGKILL)
                    server.wait(timeout=5)
                    signalled = True
            if name in rep.clients:
                # None: this run stopped the server or its client; its status says nothing
                stopped = signalled or rep.clients[name].get("stopped")
                rep.clients[name]["server_rc"] = None if stopped else server.returncode

    def _spawn_client(self, rep: Rep, name: str) -> tuple[subprocess.Popen[bytes], Path]:
        flow = rep.body.traffic.flows[name]
        measured = measured_flows(rep.body)
        path = rep.out / kind_of(flow).output_name(name, primary=bool(measured) and name == measured[0])
        err = rep.out / f"{flow.kind}-{name}.stderr"
        c = self.client_cmd(rep, name, flow, flow.client)
        return rep.backend.spawn(flow.client, c.argv, stdout=path.open("wb"), stderr=err.open("wb")), path

    def _start_background(self, rep: Rep, control: FlowControl, name: str) -> None:
        """Start a background client and wait until its kind's readiness check accepts;
        a client that exits first fails the repetition at once (it will not get ready)."""
        flow = rep.body.traffic.flows[name]
        kind = kind_of(flow)
        control.start(name)
        proc = control.started[name].proc
        ready = kind.client_ready_cmd(flow)

        def is_ready() -> bool:
            if proc.poll() is not None:
                raise RuntimeError(f"the {flow.kind} client of flow {name} exited (rc {proc.returncode}) "
                                   "before it was ready")
            return ready is None or kind.client_ready(flow, rep.backend.run([ready])[0].stdout)

        wait_for(is_ready, BACKGROUND_READY_TIMEOUT_S, f"{flow.kind} client of flow {name}")

    def _stop_background(self, rep: Rep, control: FlowControl, background: list[str]) -> None:
        """SIGINT to the background clients (they report and exit), waited for briefly; one
        still running is killed by the caller's ``finally``."""
        for name in background:
            control.stop(name)
        for name in background:
            try:
                control.started[name].proc.wait(timeout=BACKGROUND_STOP_S)
            except subprocess.TimeoutExpired:
                rep.warnings.append(f"background flow {name} did not exit {BACKGROUND_STOP_S:g} s after SIGINT")

    def _run_clients(self, rep: Rep) -> None:
        flows = rep.body.traffic.flows
        by_event = event_started_flows(rep.body)
        measured = set(measured_flows(rep.body))

        def started(name: str, at: float) -> None:
            # the timeline's zero: the first measured client's spawn (CONTRACT.md)
            if name in measured and rep.t_zero is None:
                rep.t_zero = at
                rep.t_zero_event.set()

        control = FlowControl(lambda n: self._spawn_client(rep, n), rep.backend.signal, started)
        rep.flow_control = control
        background = background_flows(rep.body)
        schedule = StartOffsets({n: f for n, f in flows.items() if n not in by_event and n not in background})
        measured_start = min(parse_time(flows[n].start) for n in measured)
        at = event_started(rep.body)
        # a flow a timeline event starts counts its duration from that event
        limits = {n: (measured_start + at[n] if n in at else parse_time(f.start)) + flow_duration(rep.ctx, rep.body, f)
                  for n, f in flows.items() if n not in background}
        longest = max(limits.values())

        def foreground() -> list[str]:
            return [n for n in control.running() if n not in background]

        try:
            for name in background:
                self._start_background(rep, control, name)
            t0 = time.monotonic()
            deadline = t0 + longest + CLIENT_GRACE_S
            if rep.ctx.progress is not None:
                rep.ctx.progress.traffic_started(longest)
            while not schedule.done or foreground():
                now = time.monotonic()
                for name in schedule.due(now - t0):
                    control.start(name)
                for name in control.running():
                    # a byte-count flow runs until its bytes are sent; its duration is the limit
                    if getattr(flows[name], "bytes", None) is not None and now - t0 > limits[name]:
                        rep.warnings.append(f"flow {name} stopped at its duration limit "
                                            f"({limits[name]:g} s) before sending all its bytes")
                        control.stop(name)
                rep.running.check()
                if now > deadline:
                    raise RuntimeError(f"clients did not finish {CLIENT_GRACE_S:g} s after their duration")
                time.sleep(0.05)
            self._stop_background(rep, control, background)
        finally:
            if rep.ctx.progress is not None:
                rep.ctx.progress.traffic_ended()
            for name in control.running():
                rep.backend.signal(control.started[name].proc, signal.SIGKILL)
        for name in sorted(by_event - set(control.started)):
            rep.warnings.append(f"flow {name} waited for a flow_start event that never came: it did not run")
        rep.clients = {name: {"path": s.path, "started": s.at, "rc": s.proc.returncode, "kind": flows[name].kind,
                              "stopped": s.stopped}
                       for name, s in control.started.items()}


# ------------------------------------------------------------------ after traffic
class StopDaemons(Step):
    title = "stop link-emulation daemons (SIGTERM: they write their statistics)"

    def commands(self, rep: Rep) -> list[Planned]:
        return []

    def run(self, rep: Rep) -> None:
        lines = {rd.daemon.name for rd in rep.running.running if rd.daemon.delay_line}
        stats = rep.running.stop_all()
        rep.extra["delay_line_stats"] = {n: s for n, s in stats.items() if n in lines}
        rep.extra["daemon_stats"] = {n: s for n, s in stats.items() if n not in lines}


def nft_counted(stdout: str) -> int:
    """Packets the counters of a table counted (``nft -j list table``); -1: unreadable."""
    try:
        rules = [x["rule"] for x in json.loads(stdout)["nftables"] if "rule" in x]
        return sum(e["counter"]["packets"] for r in rules for e in r["expr"] if "counter" in e)
    except (ValueError, KeyError, TypeError):
        return -1


class FirewallCounters(Step):
    title = "firewall counters (packets the PMTUD black hole dropped, the middleboxes matched)"

    @staticmethod
    def _cmds(rep: Rep) -> list[tuple[str, Cmd]]:
        nodes = rep.body.nodes.items()
        return ([("firewall", firewall_counter_cmd(n)) for n, spec in nodes if spec.drop_icmp_frag_needed]
                + [("middlebox", mb_counter_cmd(n)) for n, spec in nodes if spec.middlebox])

    def commands(self, rep: Rep) -> list[Planned]:
        return [Planned(c) for _, c in self._cmds(rep)]

    def run(self, rep: Rep) -> None:
        out: dict[str, dict[str, int]] = {}
        for what, c in self._cmds(rep):
            assert c.node is not None
            out.setdefault(what, {})[c.node] = nft_counted(rep.backend.run([c])[0].stdout)
        rep.extra["firewall"] = out.get("firewall", {})
        if "middlebox" in out:
            rep.extra["middlebox"] = out["middlebox"]


def render(rep: Rep, steps: list[Step]) -> list[str]:
    """The dry run's lines for these steps: the exact host command of each, ``&`` for
    background ones, notes as comments."""
    lines: list[str] = []
    for step in steps:
        lines.append(f"# step: {step.title}")
        stage = ""
        for p in step.commands(rep):
            if p.stage and p.stage != stage:
                stage = p.stage
                lines.append(f"#   {stage}")
            line = rep.backend.render(p.cmd) + (" &" if p.background else "")
            if p.in_process:
                line = f"#   (runner) {shlex.join(p.cmd.argv)}" + (" &" if p.background else "")
            lines.append(line + (f"    # {p.note}" if p.note else ""))
    return lines


def _waited(p: subprocess.Popen[bytes], timeout: float = 5) -> bool:
    """Whether ``p`` exited within ``timeout`` seconds."""
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return False
    return True
