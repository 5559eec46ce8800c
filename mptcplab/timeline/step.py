"""The timeline and the controllers as steps of a repetition (run/sequence.py orders them).

``Timeline`` runs before the traffic: it resolves every event into commands, starts
the scheduler thread and the controller threads, which all wait for the measured
flow's start (``rep.traffic.t_zero_event``, set by the traffic step). ``TimelineEnd`` runs
after the traffic: it stops them and writes events.csv. Teardown stops them too
when an earlier step failed (``Rep.on_teardown``), and events.csv is still written.
With ``traffic.timeline_zero: connection`` events.csv's first row says where the zero
fell (action ``timeline_zero``, from rep.extra["timeline_zero"], the traffic step's).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..controllers import controller_class
from ..lab.events import FlowStart, FlowStop
from ..record.model import Event
from ..steps.base import Planned, Rep, Step
from ..steps.traffic import Traffic
from ..tools.ss import SsSampler, ss_cmd
from ..warncodes import EVENT_FAILED, EVENT_NOT_RUN
from .actions import resolve_timeline
from .controller import ControllerThread
from .env import ActionEnv, Resolved
from .listener import Listeners, listener_cmds
from .record import EVENTS_FILE, trace_file, write_events, write_trace
from .scheduler import Scheduler, backend_executor


def action_env(rep: Rep) -> ActionEnv:
    return ActionEnv(rep.plan.net, rep.ctx.emulator, frr_routers=rep.backend.router_routes == "frr",
                     flow_control=lambda: rep.traffic.flow_control, body=rep.body)


def zero_event(zero: dict[str, Any] | None) -> Event | None:
    """events.csv's row for a timeline zero put at the connection (traffic/control.Zero's
    record): ``target`` the zero used (``connection``, or ``spawn`` when it fell back),
    ``epoch_s`` its time, ``duration_ms`` the wait after the client's spawn. None when the
    lab keeps the spawn (every events.csv before this row existed) or nothing was started."""
    if not zero or zero.get("asked") != "connection":
        return None
    used = str(zero["used"])
    waited_s = float(zero["after_spawn_s"]) if used == "connection" else None
    result = (f"ESTABLISHED {waited_s:.3f} s after flow {zero['flow']}'s client was spawned ({zero['polls']} polls)"
              if waited_s is not None else f"fell back to the client's spawn: {zero['problem']}")
    return Event.model_validate({
        "planned_s": 0.0, "actual_s": 0.0, "action": "timeline_zero", "target": used, "rc": 0,
        "duration_ms": round(waited_s * 1000, 3) if waited_s is not None else None, "result": result,
        "epoch_s": zero["epoch"], "flow": zero["flow"],
        "commands": zero.get("command", "")})


@dataclass
class TimelineState:
    scheduler: Scheduler
    controllers: list[ControllerThread] = field(default_factory=list)
    records: list[Event] | None = None
    listeners: Listeners = field(default_factory=Listeners)
    stop_listeners: Callable[[Listeners], None] = lambda _: None
    #: where the zero fell (rep.extra["timeline_zero"]: read when events.csv is written)
    zero: Callable[[], dict[str, Any] | None] = lambda: None

    def finish(self, out: Path) -> list[Event]:
        """Stop the threads (idempotent), write events.csv and each controller's trace."""
        if self.records is None:
            for c in self.controllers:
                c.stop()
            row = zero_event(self.zero())
            self.records = ([row] if row is not None else []) + self.scheduler.stop()
            self.stop_listeners(self.listeners)
            write_events(out / EVENTS_FILE, self.records)
            for c in self.controllers:
                write_trace(out / trace_file(c.controller.spec), c.controller.trace())
        return self.records


def _when(item: Resolved, zero: str = "spawn") -> str:
    # the zero named when it is not the default: the traffic step's poll sets it (below)
    after = " after the connection" if zero == "connection" else ""
    return f"timeline at +{item.planned_s:g} s{after}: {item.action} {item.target}"


class Timeline(Step):
    title = "timeline and controllers (times after the measured flow's start; run by a thread)"

    def commands(self, rep: Rep) -> list[Planned]:
        out: list[Planned] = [Planned(c, background=True, note=c.why, stage="userspace path manager")
                              for c in listener_cmds(rep.body)]
        items = resolve_timeline(action_env(rep), list(rep.body.traffic.events), self._file(rep))
        flows = rep.body.traffic.flows
        zero = rep.body.traffic.timeline_zero
        events = {(ev.at_s, ev.flow): ev for ev in rep.body.traffic.events if isinstance(ev, FlowStart | FlowStop)}
        for item in items:
            if item.lookup is not None:
                out.append(Planned(item.lookup.cmd, note=f"{item.lookup.note}", stage=_when(item, zero)))
            for c in item.cmds:
                out.append(Planned(c, note=c.why, stage=_when(item, zero)))
            ev = events.get((item.planned_s, item.target))
            if isinstance(ev, FlowStart):
                out.append(Planned(Traffic().client_cmd(rep, ev.flow, flows[ev.flow]), background=True,
                                   note=item.call_text, stage=_when(item, zero)))
            elif isinstance(ev, FlowStop):
                out.append(Planned(Traffic().client_cmd(rep, ev.flow, flows[ev.flow]), background=True,
                                   note=f"SIGINT to this client of flow {ev.flow} (started earlier)",
                                   stage=_when(item, zero)))
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
                              stop_listeners=lambda ls: ls.stop(backend),
                              zero=lambda: rep.extra.get("timeline_zero"))
        rep.on_teardown.append(lambda: state.finish(rep.out))
        state.listeners.start(backend, rep.body, rep.out)
        state.scheduler.start(items, rep.traffic.t_zero_event, lambda: rep.traffic.t_zero)
        for spec in rep.body.controllers:
            sampler = SsSampler(spec.node, lambda c: backend.run([c])[0].stdout)
            ct = ControllerThread(controller_class(spec.name)(spec), sampler, env, state.scheduler,
                                  rep.traffic.t_zero_event, lambda: rep.traffic.t_zero)
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
