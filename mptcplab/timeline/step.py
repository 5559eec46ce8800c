"""The timeline and the controllers as steps of a repetition (run/sequence.py orders them).

``Timeline`` runs before the traffic: it resolves every event into commands, starts
the scheduler thread and the controller threads, which all wait for the measured
flow's start (``Rep.t_zero_event``, set by the traffic step). ``TimelineEnd`` runs
after the traffic: it stops them and writes events.csv. Teardown stops them too
when an earlier step failed (``Rep.on_teardown``), and events.csv is still written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..controllers import controller_class
from ..lab.events import FlowStart, FlowStop
from ..record.model import Event
from ..steps.base import Planned, Rep, Step
from ..steps.traffic import Traffic
from ..tools.ss import SsSampler, ss_cmd
from ..warncodes import EVENT_FAILED, EVENT_NOT_RUN
from .actions import ActionEnv, Resolved, resolve_timeline
from .controller import ControllerThread
from .listener import Listeners, listener_cmds
from .record import EVENTS_FILE, trace_file, write_events, write_trace
from .scheduler import Scheduler, backend_executor


def action_env(rep: Rep) -> ActionEnv:
    return ActionEnv(rep.plan.net, rep.ctx.emulator, frr_routers=rep.backend.router_routes == "frr",
                     flow_control=lambda: rep.flow_control, body=rep.body)


@dataclass
class TimelineState:
    scheduler: Scheduler
    controllers: list[ControllerThread] = field(default_factory=list)
    records: list[Event] | None = None
    listeners: Listeners = field(default_factory=Listeners)
    stop_listeners: Callable[[Listeners], None] = lambda _: None

    def finish(self, out: Path) -> list[Event]:
        """Stop the threads (idempotent), write events.csv and each controller's trace."""
        if self.records is None:
            for c in self.controllers:
                c.stop()
            self.records = self.scheduler.stop()
            self.stop_listeners(self.listeners)
            write_events(out / EVENTS_FILE, self.records)
            for c in self.controllers:
                write_trace(out / trace_file(c.controller.spec), c.controller.trace())
        return self.records


def _when(item: Resolved) -> str:
    return f"timeline at +{item.planned_s:g} s: {item.action} {item.target}"


class Timeline(Step):
    title = "timeline and controllers (times after the measured flow's start; run by a thread)"

    def commands(self, rep: Rep) -> list[Planned]:
        out: list[Planned] = [Planned(c, background=True, note=c.why, stage="userspace path manager")
                              for c in listener_cmds(rep.body)]
        items = resolve_timeline(action_env(rep), list(rep.body.traffic.events), self._file(rep))
        flows = rep.body.traffic.flows
        events = {(ev.at_s, ev.flow): ev for ev in rep.body.traffic.events if isinstance(ev, FlowStart | FlowStop)}
        for item in items:
            if item.lookup is not None:
                out.append(Planned(item.lookup.cmd, note=f"{item.lookup.note}", stage=_when(item)))
            for c in item.cmds:
                out.append(Planned(c, note=c.why, stage=_when(item)))
            ev = events.get((item.planned_s, item.target))
            if isinstance(ev, FlowStart):
                out.append(Planned(Traffic().client_cmd(rep, ev.flow, flows[ev.flow]), background=True,
                                   note=item.call_text, stage=_when(item)))
            elif isinstance(ev, FlowStop):
                out.append(Planned(Traffic().client_cmd(rep, ev.flow, flows[ev.flow]), background=True,
                                   note=f"SIGINT to this client of flow {ev.flow} (started earlier)",
                                   stage=_when(item)))
        for spec in rep.body.controllers:
            out.append(Planned(ss_cmd(spec.node), stage=f"controller {spec.name} on {spec.node}",
                               note=f"every {spec.interval_s:g} s; its actions run at once (events.csv)"))
        return out

    @staticmethod
    def _file(rep: Rep) -> str:
        return str(rep.ctx.lab.path / "experiment.yml")

    def run(self, rep: Rep) -> None:
        env = action_env(rep)
        items = resolve_timeline(env, list(rep.body.traffic.events), self._file(rep))
        backend = rep.backend
        state = TimelineState(Scheduler(backend_executor(backend.run, backend.render)),
                              stop_listeners=lambda ls: ls.stop(backend))
        rep.on_teardown.append(lambda: state.finish(rep.out))
        state.listeners.start(backend, rep.body, rep.out)
        state.scheduler.start(items, rep.t_zero_event, lambda: rep.t_zero)
        for spec in rep.body.controllers:
            sampler = SsSampler(spec.node, lambda c: backend.run([c])[0].stdout)
            ct = ControllerThread(controller_class(spec.name)(spec), sampler, env, state.scheduler,
                                  rep.t_zero_event, lambda: rep.t_zero)
            state.controllers.append(ct)
            ct.start()
        rep.timeline = state


class TimelineEnd(Step):
    title = "timeline end: stop the controllers, write events.csv"

    def commands(self, rep: Rep) -> list[Planned]:
        return []

    def run(self, rep: Rep) -> None:
        state = rep.timeline
        if not isinstance(state, TimelineState):
            return
        for r in state.finish(rep.out):
            if r.rc:
                rep.warn(EVENT_FAILED, f"event {r.action} {r.target} at +{r.planned_s:g} s ({r.source}) "
                         f"failed (exit status {r.rc}): {r.result}")
            elif r.actual_s is None:
                rep.warn(EVENT_NOT_RUN, f"event {r.action} {r.target} at +{r.planned_s:g} s did not run: "
                         "the traffic ended first")
