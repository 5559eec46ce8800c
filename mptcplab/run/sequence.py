"""A repetition's steps in their order, and the teardown that ends every one.

steps/base.py is the step framework (Rep, Planned, Step), steps/ the engine's own steps; the
congestion-control, probe and timeline steps build on the framework in their own packages. This
module composes them all, above every one of them, so that none of them imports upward.
Why this order: docs/architecture.md.
"""

from __future__ import annotations

from ..cc.step import RegisterCongestionControls, release_all, release_commands
from ..probes.step import StartProbes, StopProbes, close_probes
from ..steps.base import Planned, Rep, Step
from ..steps.counters import FirewallCounters
from ..steps.daemons import StopDaemons
from ..steps.deploy import Deploy
from ..steps.links import LinkCheck
from ..steps.sysctls import SysctlReadback
from ..steps.traffic import Traffic
from ..timeline.step import Timeline, TimelineEnd
from ..warncodes import CLEANUP_FAILED


class Teardown(Step):
    """Every exit path (RepRunner runs it in ``finally``)."""

    title = "teardown: stop every process of the run, then"

    def commands(self, rep: Rep) -> list[Planned]:
        return [*(Planned(c) for c in rep.backend.teardown_cmds(rep.plan.net)), *release_commands(rep)]

    def run(self, rep: Rep) -> None:
        try:
            self._stop(rep)
        finally:
            release_all(rep)  # a congestion control outlives the nodes: let go of it last

    def _stop(self, rep: Rep) -> None:
        for stop in rep.on_teardown:  # threads acting on the nodes end before the nodes do
            try:
                stop()
            except Exception as e:  # noqa: BLE001 - teardown goes on whatever happens
                rep.warn(CLEANUP_FAILED, f"teardown: {e}")
        close_probes(rep)  # host-wide probe state next: it outlives the namespaces otherwise
        try:
            rep.backend.pre_stop()
        finally:
            try:
                if rep.supervisor is not None:
                    rep.supervisor.close()
                rep.backend.collect(rep.out)
            finally:
                rep.backend.destroy()
        rep.backend.post_stop()


def measurement_steps() -> list[Step]:
    """The steps before teardown, in order."""
    return [RegisterCongestionControls(), Deploy(), LinkCheck(), SysctlReadback(), StartProbes(),
            Timeline(), Traffic(), TimelineEnd(),
            StopProbes(), StopDaemons(), FirewallCounters()]
