"""The deploy step: the plan's configuration stages, the link-emulation daemons between
them (net/plan.py orders them; plan.bring_up runs them)."""

from __future__ import annotations

from ..commands import Cmd
from ..net.plan import bring_up
from .base import Planned, Rep, Step


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

