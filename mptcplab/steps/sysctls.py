"""The sysctl read-back step: every node's MPTCP, TCP and forwarding sysctls as the kernel
reports them after configuration, recorded in the manifest; a lab's sysctl that reads back
otherwise is a warning."""

from __future__ import annotations

from ..commands import Cmd, cmd
from ..warncodes import SYSCTL_NOT_APPLIED
from .base import Planned, Rep, Step

#: read back on every node after configuration (plus the sysctls the lab sets): what
#: decides MPTCP, TCP and forwarding behaviour, recorded in the manifest
SYSCTL_READBACK: tuple[str, ...] = (
    "net.mptcp.enabled", "net.mptcp.scheduler", "net.mptcp.pm_type", "net.ipv4.tcp_congestion_control",
    "net.ipv4.tcp_mtu_probing", "net.ipv4.tcp_base_mss", "net.ipv4.tcp_wmem", "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_no_metrics_save", "net.ipv4.ip_forward", "net.ipv4.conf.all.rp_filter",
)



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
                    rep.warn(SYSCTL_NOT_APPLIED, f"{c.node}: sysctl {k} set to {v!r} but reads back {vals.get(k)!r}")

