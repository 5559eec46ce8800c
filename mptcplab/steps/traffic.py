"""The traffic step: servers, background clients, then the measured and other clients at
their start offsets; what each runs is its flow's kind's (mptcplab/traffic/)."""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from pathlib import Path

from ..commands import Cmd, cmd
from ..lab.schema import Flow
from ..traffic.base import ClientRun, KindContext
from ..traffic.control import ESTABLISHED_TIMEOUT_S, FlowControl, Zero, established_cmd, wait_established
from ..traffic.iperf3 import IPERF3_HELP, help_has_multipath
from ..traffic.kinds import kind_of
from ..units import parse_time
from ..warncodes import FLOW_NOT_RUN, FLOW_STOPPED_AT_LIMIT, PROCESS_DID_NOT_EXIT, TIMELINE_ZERO_FALLBACK
from .base import READY_TIMEOUT_S, UNTIL_READY, Planned, Rep, Step, answers, wait_for, waited
from .flows import StartOffsets, background_flows, event_started, event_started_flows, flow_duration, measured_flows

#: clients still running this long after their planned end fail the repetition
CLIENT_GRACE_S = 30.0
#: a background client (hold) must be ready within this (a thousand connections take
#: ~0.1 s; starting Python in a namespace on the loaded host up to several seconds)
BACKGROUND_READY_TIMEOUT_S = 60.0
#: how long a background client has to close its connections and report after SIGINT
BACKGROUND_STOP_S = 10.0


class Traffic(Step):
    """Each flow's server (waited for until it listens), then the background flows' clients
    (hold), waited for until their kind says they are ready, then the other clients at their
    start offsets (counted from then; flows a timeline event starts wait for it); what runs
    is the flow's kind's (mptcplab/traffic/). Background clients are stopped when the others
    have ended. Sets rep.traffic.t_zero, the timeline's zero: when the first measured client starts,
    or (``traffic.timeline_zero: connection``) once a thread has seen its connection
    ESTABLISHED on the client; rep.extra["timeline_zero"] says which (traffic/control.Zero)."""

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
        mp = rep.traffic.multipath.get(node) if node else None
        return KindContext(rep.plan.net, flow_duration(rep.ctx, rep.body, flow), mp, rep.out)

    def _server(self, rep: Rep, name: str, flow: Flow, node: str | None = None) -> Cmd:
        return Cmd(kind_of(flow).server_argv(flow, name, self._ctx(rep, flow, node)), node=flow.server)

    def client_cmd(self, rep: Rep, name: str, flow: Flow, node: str | None = None) -> Cmd:
        return Cmd(kind_of(flow).client_argv(flow, name, self._ctx(rep, flow, node)), node=flow.client)

    def zero_cmd(self, rep: Rep, name: str) -> Cmd:
        """The poll for measured flow ``name``'s connection (``traffic.timeline_zero: connection``)."""
        flow = rep.body.traffic.flows[name]
        return established_cmd(flow.client, str(rep.plan.net.address(flow.server_address)), flow.port)

    def commands(self, rep: Rep) -> list[Planned]:
        flows = rep.body.traffic.flows
        measured = set(measured_flows(rep.body))
        polled = False  # the zero is the first measured client to start's
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
            if name in measured and not polled and rep.body.traffic.timeline_zero == "connection":
                polled = True
                out.append(Planned(self.zero_cmd(rep, name), note=(
                    f"repeated (a thread) until it answers, at most {ESTABLISHED_TIMEOUT_S:g} s: the timeline's zero "
                    "(traffic.timeline_zero: connection); else the client's spawn, with a warning")))
        return out

    def run(self, rep: Rep) -> None:
        backend, body = rep.backend, rep.body
        for n in self._iperf3_nodes(rep):
            helped = backend.run([self.help_cmd(n)])[0]
            rep.traffic.multipath[n] = help_has_multipath(helped.stdout + helped.stderr)
        for name, flow in body.traffic.flows.items():
            kind_of(flow).prepare(flow, name, self._ctx(rep, flow, flow.server))
        for name, flow in body.traffic.flows.items():
            c = self._server(rep, name, flow, flow.server)
            path = rep.out / kind_of(flow).server_output_name(name)
            rep.traffic.servers[name] = (backend.spawn(flow.server, c.argv, stdout=path.open("wb"),
                                               stderr=subprocess.STDOUT), path)
        for name, flow in body.traffic.flows.items():
            ready = kind_of(flow).ready_cmd(flow)
            wait_for(lambda c=ready: answers(backend, c), READY_TIMEOUT_S,  # type: ignore[misc]
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
        for name, (server, _) in rep.traffic.servers.items():
            signalled = False
            if not kind_of(flows[name]).server_exits and server.poll() is None:
                rep.backend.signal(server, signal.SIGTERM)  # a web or echo server runs until told
                signalled = True
            client = rep.traffic.clients.get(name)
            client_stopped = client is not None and client.stopped
            # a server whose client the run stopped ends within a round trip if the connection
            # still works (the client's close): no need to wait as long for it
            if not waited(server, 2 if client_stopped else 5):
                if client_stopped:
                    # its client was stopped mid-transfer (a stall at the duration limit): told
                    # in turn, a server that ends by itself writes what it got (transfer_tool)
                    rep.backend.signal(server, signal.SIGTERM)
                    signalled = True
                if not waited(server):
                    rep.warn(PROCESS_DID_NOT_EXIT, f"{flows[name].kind} server of flow {name} did not exit")
                    rep.backend.signal(server, signal.SIGKILL)
                    server.wait(timeout=5)
                    signalled = True
            if client is not None:
                # None: this run stopped the server or its client; its status says nothing
                client.server_rc = None if signalled or client.stopped else server.returncode

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
                rep.warn(PROCESS_DID_NOT_EXIT,
                         f"background flow {name} did not exit {BACKGROUND_STOP_S:g} s after SIGINT")

    def _run_clients(self, rep: Rep) -> None:
        flows = rep.body.traffic.flows
        by_event = event_started_flows(rep.body)
        measured = set(measured_flows(rep.body))

        asked = rep.body.traffic.timeline_zero
        ended = threading.Event()
        waiter: list[threading.Thread] = []

        def set_zero(z: Zero) -> None:
            rep.extra["timeline_zero"] = z.record()
            if z.problem:
                rep.warn(TIMELINE_ZERO_FALLBACK, f"flow {z.flow}'s connection: {z.problem} ({z.polls} polls); "
                         "the timeline ran from the client's spawn")
            rep.traffic.t_zero = z.epoch
            rep.traffic.t_zero_event.set()

        def wait_connection(name: str, at: float) -> None:
            proc = control.started[name].proc
            zero_cmd = self.zero_cmd(rep, name)
            epoch, polls, problem = wait_established(lambda: answers(rep.backend, zero_cmd),
                                                     lambda: proc.poll() is None, stop=ended)
            set_zero(Zero(asked, "connection" if epoch is not None else "spawn", name, at,
                          epoch if epoch is not None else at, polls, problem, rep.backend.render(zero_cmd)))

        def started(name: str, at: float) -> None:
            # the timeline's zero: the first measured client's spawn, or its connection
            # (docs/results-format.md); the wait runs on its own thread, so the clients'
            # schedule and limits go on meanwhile
            if name not in measured or rep.traffic.t_zero_event.is_set() or waiter:
                return
            if asked == "spawn":
                set_zero(Zero(asked, "spawn", name, at, at))
                return
            waiter.append(threading.Thread(target=wait_connection, args=(name, at), daemon=True,
                                           name="timeline-zero"))
            waiter[0].start()

        control = FlowControl(lambda n: self._spawn_client(rep, n), rep.backend.signal, started)
        rep.traffic.flow_control = control
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
                        rep.warn(FLOW_STOPPED_AT_LIMIT, f"flow {name} stopped at its duration limit "
                                 f"({limits[name]:g} s) before sending all its bytes")
                        control.stop(name)
                rep.running.check()
                if now > deadline:
                    raise RuntimeError(f"clients did not finish {CLIENT_GRACE_S:g} s after their duration")
                time.sleep(0.05)
            self._stop_background(rep, control, background)
        finally:
            ended.set()
            for w in waiter:  # it ends at its next poll, its zero recorded
                w.join(timeout=ESTABLISHED_TIMEOUT_S)
            if rep.ctx.progress is not None:
                rep.ctx.progress.traffic_ended()
            for name in control.running():
                rep.backend.signal(control.started[name].proc, signal.SIGKILL)
        for name in sorted(by_event - set(control.started)):
            rep.warn(FLOW_NOT_RUN, f"flow {name} waited for a flow_start event that never came: it did not run")
        rep.traffic.clients = {name: ClientRun(s.path, s.at, flows[name].kind, s.proc.returncode, s.stopped)
                               for name, s in control.started.items()}

