"""From a typed action (lab/events.py) to what runs: the exact commands, generated
here and executed elsewhere (timeline/scheduler.py), so ``--dry-run`` prints what a
run executes.

Each action kind has its command maker in ``COMMANDS`` (link_actions.py, endpoint_actions.py,
the sysctl write below); flows and the userspace path manager resolve apart (an in-process
call; a command whose token is read when it runs: upm.py). What an action acts on and its
typed columns are the event's own (``Event.target``, ``Event.columns``). A new action kind:
its model in lab/events.py, its command maker registered here.

Actions are resolved in time order against the links' *current* shapes (a link
changed twice is changed from its second state), kept in ``ActionEnv.shapes``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..commands import Cmd, cmd
from ..errors import LabInputError
from ..lab.events import (
    EndpointAdd,
    EndpointDelete,
    EndpointFlags,
    EndpointFlush,
    FlowStart,
    FlowStop,
    LimitsSet,
    LinkChange,
    LinkDown,
    LinkUp,
    SysctlWrite,
    UpmAnnounce,
    UpmRemove,
    UpmSubflowCreate,
    UpmSubflowDestroy,
)
from ..lab.network import build_network
from .endpoint_actions import endpoint_cmds, endpoint_lookup, limits_cmds
from .env import ActionEnv, Lookup, Resolved
from .link_actions import link_change_cmds, link_down_cmds, link_up_cmds

if TYPE_CHECKING:
    from ..emulation.base import Emulator
    from ..lab.events import Event
    from ..lab.model import ScenarioRun
    from ..lab.schema import ClabTopology


def _sysctl_cmds(env: ActionEnv, ev: SysctlWrite) -> list[Cmd]:
    return [cmd("sysctl", "-q", "-w", f"{ev.key}={ev.value}", node=ev.node, check=False)]


def _limits(env: ActionEnv, ev: LimitsSet) -> list[Cmd]:
    return limits_cmds(ev)


#: action kind -> its commands (may raise ValueError: a change the emulator cannot make)
COMMANDS: dict[type, Callable[[ActionEnv, Any], list[Cmd]]] = {
    LinkDown: link_down_cmds, LinkUp: link_up_cmds, LinkChange: link_change_cmds,
    SysctlWrite: _sysctl_cmds, LimitsSet: _limits,
    EndpointAdd: endpoint_cmds, EndpointDelete: endpoint_cmds, EndpointFlags: endpoint_cmds,
    EndpointFlush: endpoint_cmds,
}


def subject(ev: Event | None) -> dict[str, Any]:
    """The typed columns of an action (record.model.Event: node, link, address, ...),
    from the lab's typed action (``Resolved.event``); none for a decision or an error."""
    return ev.columns() if ev is not None else {}


def upm_resolved(env: ActionEnv, ev: UpmAnnounce | UpmRemove | UpmSubflowCreate | UpmSubflowDestroy,
                 at: float, source: str) -> Resolved:
    from .upm import upm_plan

    if env.body is None:
        raise ValueError(f"{ev.action} needs the lab's flows (ActionEnv.body)")
    plan = upm_plan(env.body, env.net, ev)
    return Resolved(at, ev.action, ev.target(), (plan.cmd,), source=source, event=ev,
                    lookup=Lookup(plan.lookup, plan.values, plan.note))


def _flow_call(env: ActionEnv, ev: FlowStart | FlowStop) -> Callable[[], str]:
    def call() -> str:
        fc = env.flow_control()
        if fc is None:
            raise RuntimeError("no traffic is running")
        (fc.start if isinstance(ev, FlowStart) else fc.stop)(ev.flow)
        return "started" if isinstance(ev, FlowStart) else "stopped (SIGINT)"

    return call


def resolve(env: ActionEnv, ev: Event, source: str = "timeline", planned_s: float | None = None) -> Resolved:
    """``ev`` as commands (or a call). ``planned_s`` defaults to the event's ``at``."""
    at = ev.at_s if planned_s is None else planned_s
    if isinstance(ev, FlowStart | FlowStop):
        verb = "start" if isinstance(ev, FlowStart) else "stop (SIGINT to the client)"
        return Resolved(at, ev.action, ev.target(), call=_flow_call(env, ev), source=source, event=ev,
                        call_text=f"{verb} flow {ev.flow}: its client command is listed under the traffic step")
    if isinstance(ev, UpmAnnounce | UpmRemove | UpmSubflowCreate | UpmSubflowDestroy):
        return upm_resolved(env, ev, at, source)
    cmds = COMMANDS[type(ev)](env, ev)
    lookup = endpoint_lookup(env, ev) if isinstance(ev, EndpointDelete) else None
    return Resolved(at, ev.action, ev.target(), tuple(cmds), source=source, event=ev, lookup=lookup)


def resolve_timeline(env: ActionEnv, events: list[Event], file: str = "experiment.yml") -> list[Resolved]:
    """Every event of the timeline, in time order (ties in file order). A change the
    emulator cannot make is the lab's error, named by its field, before anything runs."""
    order = sorted(range(len(events)), key=lambda i: (events[i].at_s, i))
    out = []
    for i in order:
        try:
            out.append(resolve(env, events[i]))
        except ValueError as e:
            raise LabInputError(file, f"traffic.events[{i}]", f"{e} ({env.emulator.name} emulator)") from None
    return out


def check_timelines(topo: ClabTopology, scenarios: Sequence[ScenarioRun], emulator: Emulator,
                    file: str = "experiment.yml") -> None:
    """Resolve every scenario's timeline against the chosen emulator, before anything
    runs: a change it cannot make on a running link is a LabInputError naming the event."""
    for sc in scenarios:
        if sc.body.traffic.events:
            resolve_timeline(ActionEnv(build_network(topo, sc.body, file), emulator, body=sc.body),
                             list(sc.body.traffic.events), file)
