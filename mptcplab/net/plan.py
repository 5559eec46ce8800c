"""The ordered command plan that brings up one scenario's network.

One plan serves execution and ``--dry-run`` alike, so what a student reads is
exactly what runs. Stages are ordered for correctness:
sysctls run before links exist (new interfaces copy net.ipv4.conf.default.*,
e.g. rp_filter), link-emulation daemons start before packets are steered to
them, MPTCP endpoints last.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ..commands import Cmd
from ..emulation.base import Daemon, Emulator
from ..errors import HostNotReady
from ..lab.model import ScenarioRun
from ..lab.network import Network, build_network
from ..lab.schema import ClabTopology
from ..middlebox import rewrite
from ..values.capabilities import CAP_MBOX
from .bonding import balance_rr_cmds
from .config import (
    firewall_cmds,
    frr_route_cmds,
    interface_cmds,
    offload_cmds,
    route_cmds,
    sysctl_cmds,
)
from .mptcp import mptcp_cmds, mptcp_sysctls

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..backends.base import Backend
    from ..supervise import Supervisor


@dataclass
class Plan:
    net: Network
    namespaces: list[Cmd] = field(default_factory=list)  # backend: create nodes
    sysctls: list[Cmd] = field(default_factory=list)
    links: list[Cmd] = field(default_factory=list)       # backend: create links
    config: list[Cmd] = field(default_factory=list)      # addresses, routes, offloads, firewall
    daemons: list[Daemon] = field(default_factory=list)  # e.g. delay lines: started before `emulation`
    emulation: list[Cmd] = field(default_factory=list)   # qdiscs and packet steering to the daemons
    mptcp: list[Cmd] = field(default_factory=list)

    def stages_before_daemons(self) -> list[tuple[str, list[Cmd]]]:
        return [("create nodes", self.namespaces), ("sysctls", self.sysctls), ("create links", self.links),
                ("configure nodes", self.config)]

    def stages_after_daemons(self) -> list[tuple[str, list[Cmd]]]:
        # a packet steered to an NFQUEUE nobody listens on is dropped: daemons first
        return [("link emulation", self.emulation), ("MPTCP", self.mptcp)]


#: how router nodes get their static routes: "ip" (ip route, the netns backend) or
#: "frr" (FRR static routes through vtysh: routers run FRR in the containerlab images)
RouterRoutes = Literal["ip", "frr"]



def refuse_unsupported(backend: type[Backend] | Backend, scenarios: Sequence[ScenarioRun]) -> None:
    """What the scenarios need of the backend that it cannot do (its ``capabilities``), in one
    line before anything is created."""
    if CAP_MBOX not in backend.capabilities and any(rewrite.boxes(sc.body) for sc in scenarios):
        raise HostNotReady(f"the rewriting middleboxes ({', '.join(rewrite.KINDS)}) run mptcplab-mbox, which "
                           f"the {backend.name} backend cannot run in its nodes (not in the lab images): "
                           "use --backend netns")


def network_for(topo: ClabTopology, scenario: ScenarioRun, file: str) -> Network:
    net = build_network(topo, scenario.body, file)
    for name, node in net.nodes.items():
        node.sysctls.update(mptcp_sysctls(scenario.body, name))
    return net


def build_plan(topo: ClabTopology, scenario: ScenarioRun, emulator: Emulator, backend: Backend,
               workdir: Path, file: str = "experiment.yml") -> Plan:
    """The backend gives the host commands that make the nodes and links, and says
    how routers get their routes (``ip route``, or FRR static routes in containers);
    hosts always use ip route/ip rule."""
    net = network_for(topo, scenario, file)
    plan = Plan(net)
    created = backend.create_cmds(net)
    routes_by: RouterRoutes = "frr" if backend.router_routes == "frr" else "ip"
    # the backend's node-creating commands run before the sysctls (Backend.node_creators)
    makers = set(backend.node_creators)
    plan.namespaces = [c for c in created if tuple(c.argv[:2]) in makers]
    plan.links = [c for c in created if tuple(c.argv[:2]) not in makers]
    for node in net.nodes.values():
        plan.sysctls += sysctl_cmds(node)
    for name, node in net.nodes.items():
        plan.config += interface_cmds(net, name)
        plan.config += offload_cmds(net, name)
        plan.config += frr_route_cmds(node) if routes_by == "frr" and node.role == "router" else route_cmds(node)
        plan.config += firewall_cmds(scenario.body, name)
        plan.config += balance_rr_cmds(net, scenario.body, name)
    queue = 0
    for link in net.links:
        if not link.impaired:
            continue
        for dl in link.directions():
            cmds, daemons = emulator.link_cmds(dl, queue, workdir)
            plan.emulation += cmds
            plan.daemons += daemons
            queue += 1
    # rewriting middleboxes: daemons like the delay lines, queue numbers after theirs
    mb_cmds, mb_daemons = rewrite.plan(scenario.body, queue, workdir, rewrite.binary(must_exist=False))
    plan.emulation += mb_cmds
    plan.daemons += mb_daemons
    for name in net.nodes:
        plan.mptcp += mptcp_cmds(scenario.body, net, name)
    return plan


def bring_up(backend: Backend, plan: Plan, supervisor: Supervisor) -> None:
    """Execute a plan in its order: ownership first, daemons before the rules that
    steer packets to them, the backend's hooks around it all. The caller tears down
    (backend.destroy, supervisor.close)."""
    backend.begin(plan.net)
    backend.pre_start(plan.net)
    for _, cmds in plan.stages_before_daemons():
        backend.run(cmds)
    for d in plan.daemons:
        backend.log(backend.render(Cmd(d.argv, node=d.node)) + " &")
        supervisor.start(d)
    for _, cmds in plan.stages_after_daemons():
        backend.run(cmds)
    backend.post_start(plan.net)
