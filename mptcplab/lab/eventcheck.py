"""Reference checks of the timeline and the controllers against the lab: every node,
link, flow and controller an event or controller names must exist, and a
controller's params must satisfy its own model. Called by loader.check_references,
so an error is one line naming the field (``traffic.events[k].<field>``)."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import ValidationError

from .. import plugins
from ..values.fields import is_endpoint_ref
from .events import (
    UPM_ACTIONS,
    EndpointAdd,
    EndpointDelete,
    EndpointFlags,
    FlowStart,
    FlowStop,
    LinkChange,
    LinkDown,
    LinkUp,
    UpmEvent,
    UpmSubflowCreate,
    UpmSubflowDestroy,
)
from .schema import ExperimentBody

Fail = Callable[[str, str], None]


def check_events(body: ExperimentBody, eps: set[str], fail: Fail) -> None:
    flows = body.traffic.flows
    for k, ev in enumerate(body.traffic.events):
        where = f"traffic.events[{k}]"
        if isinstance(ev, LinkDown | LinkUp | LinkChange) and ev.link not in eps:
            fail(f"{where}.link", f"{ev.link!r} is not an endpoint of topology.clab.yml")
        node = getattr(ev, "node", None)
        if node is not None and node not in body.nodes:
            fail(f"{where}.node", f"no such node {node!r}")
        if isinstance(ev, EndpointAdd | EndpointFlags | EndpointDelete) and ev.address is not None \
                and is_endpoint_ref(ev.address) and (ev.address not in eps or not ev.address.startswith(ev.node + ":")):
            fail(f"{where}.address", f"{ev.address!r} is not an interface of {ev.node}")
        if isinstance(ev, FlowStart | FlowStop) and ev.flow not in flows:
            fail(f"{where}.flow", f"no flow {ev.flow!r} in traffic.flows")
        if isinstance(ev, FlowStart) and flows[ev.flow].role == "measured":
            fail(f"{where}.flow", f"{ev.flow!r} is the measured flow: its start is the timeline's zero")
        if isinstance(ev, UPM_ACTIONS):
            _check_upm(body, eps, ev, where, fail)
    started = [ev.flow for ev in body.traffic.events if isinstance(ev, FlowStart)]
    for name in started:
        if started.count(name) > 1:
            fail("traffic.events", f"flow {name!r} is started twice (a flow runs once per repetition)")


def uses_userspace_pm(body: ExperimentBody, node: str) -> bool:
    """``node`` selects the userspace path manager: nodes.<node>.mptcp.path_manager, or the
    sysctl net.mptcp.pm_type = 1 (the node's own, else the lab's)."""
    spec = body.nodes[node]
    if spec.mptcp is not None and spec.mptcp.path_manager is not None:
        return spec.mptcp.path_manager == "userspace"
    pm_type = spec.sysctls.get("net.mptcp.pm_type", body.sysctls.get("net.mptcp.pm_type"))
    return str(pm_type) == "1"


def check_listeners(body: ExperimentBody, fail: Fail) -> None:
    """``mptcp.listener: false`` says what the engine does for a userspace-PM node: elsewhere it
    means nothing, and the mptcp_monitor probe's ``ip mptcp monitor`` would listen in its place."""
    for name, spec in body.nodes.items():
        if spec.mptcp is None or spec.mptcp.listener:
            continue
        if not uses_userspace_pm(body, name):
            fail(f"nodes.{name}.mptcp.listener", "false only with the userspace path manager "
                 "(mptcp.path_manager: userspace, or net.mptcp.pm_type: 1): the kernel PM has no listener")
        # the probe is a plug-in the core does not import: its setting is read by name
        if getattr(body.probes, "mptcp_monitor", False):
            fail(f"nodes.{name}.mptcp.listener", "false, but probes.mptcp_monitor runs `ip mptcp monitor` in the "
                 "MPTCP flows' nodes, a listener all the same")


def _check_upm(body: ExperimentBody, eps: set[str], ev: UpmEvent, where: str, fail: Fail) -> None:
    flow = body.traffic.flows.get(ev.flow)
    if flow is None:
        fail(f"{where}.flow", f"no flow {ev.flow!r} in traffic.flows")
        return
    if ev.node not in (flow.client, flow.server):
        fail(f"{where}.node", f"{ev.node!r} is neither the client nor the server of flow {ev.flow!r}")
    # a scenario may make the flow plain TCP (a baseline): its events then find no MPTCP
    # connection when they run and are recorded as failed, a warning of the repetition
    if not uses_userspace_pm(body, ev.node):
        fail(f"{where}.node", f"{ev.node} does not select the userspace path manager "
                              f"(nodes.{ev.node}.mptcp.path_manager: userspace)")
    peer = flow.server if ev.node == flow.client else flow.client
    refs: list[tuple[str, str | None, str]] = [("address", getattr(ev, "address", None), ev.node)]
    if isinstance(ev, UpmSubflowCreate | UpmSubflowDestroy):
        refs += [("local", ev.local, ev.node), ("remote", ev.remote, peer)]
    for field, ref, owner in refs:
        if ref is not None and is_endpoint_ref(ref) and (ref not in eps or not ref.startswith(owner + ":")):
            fail(f"{where}.{field}", f"{ref!r} is not an interface of {owner}")


def check_controllers(body: ExperimentBody, fail: Fail, eps: set[str] | None = None) -> None:
    # the controllers are plug-ins above the lab schema (mptcplab/plugins.py)
    controllers = plugins.registry("controllers")
    for k, spec in enumerate(body.controllers):
        where = f"controllers[{k}]"
        if spec.node not in body.nodes:
            fail(f"{where}.node", f"no such node {spec.node!r}")
        try:
            cls = controllers.controller_class(spec.name)
        except controllers.ControllerNotFound as e:
            fail(f"{where}.name", str(e))
            continue
        try:
            cls.Params.model_validate(spec.params)
        except ValidationError as e:
            err = e.errors()[0]
            loc = ".".join(str(x) for x in err["loc"])
            fail(f"{where}.params" + (f".{loc}" if loc else ""), err["msg"].removeprefix("Value error, "))
            continue
        # the upm_* actions its params name, checked as a timeline event's (flow, node, addresses)
        ours = f"{where}.params"

        def on_params(field: str, problem: str, ours: str = ours, where: str = where) -> None:
            fail(f"{where}.node" if field == f"{ours}.node" else field, problem)

        for ev in cls.planned_actions(spec):
            if eps is not None and isinstance(ev, UPM_ACTIONS):
                _check_upm(body, eps, ev, ours, on_params)
