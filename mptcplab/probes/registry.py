"""Probe name (the key under ``probes:`` in experiment.yml) -> class: the one place that
lists the probes a lab can choose. A new probe is a module with a Probe subclass that
declares its ``setting``, ``tools``/``tracepoints`` and ``summarise``, and one line here;
the ``Probes`` schema (lab/schema/experiment.py), preflight's probe checks and the analysis
(probes/analysis.py) are built from this table. The probes no lab can turn off, the packet
capture (tcpdump.py) and the host CPU reading (hostcpu.py), are listed here too, around the
lab's choices (``MANDATORY_FIRST``, ``MANDATORY_LAST``); ``for_repetition`` is every
repetition's probes in start order (probes/step.py runs them).

This module and the probes it lists are imported by the lab schema, so they import nothing
of lab/ at run time but lab.fields (pure): no import cycle."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import Probe
from .hostcpu import HostCpuProbe
from .memory import SsMemoryProbe
from .monitor import MptcpMonitor
from .nstat import NstatProbe
from .tcp_probe import TcpProbe
from .tcpdump import TcpdumpCapture

if TYPE_CHECKING:
    from ..lab.schema import ExperimentBody

#: in start order (stop runs in reverse): the nstat "before" reading comes last so the
#: other probes' own start-up is not counted in it
PROBES: tuple[type[Probe], ...] = (TcpProbe, SsMemoryProbe, MptcpMonitor, NstatProbe)
REGISTRY: dict[str, type[Probe]] = {cls.name: cls for cls in PROBES}
#: every repetition's, whatever the lab says: the capture first (MPTCP is proven from it: it
#: listens before the others start and, stopped newest first, stops after them) ...
MANDATORY_FIRST: tuple[type[Probe], ...] = (TcpdumpCapture,)
#: ... and the host's CPU accounting last (read last before the traffic and first after it:
#: what a delay line's stalls are set against)
MANDATORY_LAST: tuple[type[Probe], ...] = (HostCpuProbe,)


def names() -> tuple[str, ...]:
    return tuple(REGISTRY)


def enabled(body: ExperimentBody) -> list[type[Probe]]:
    """The probe classes a scenario turns on."""
    # a probe's field is a switch (true) or its setting (ss_interval: 100ms); None/false: off
    return [cls for cls in REGISTRY.values() if cls.value(body) not in (None, False)]


def for_repetition(body: ExperimentBody) -> list[type[Probe]]:
    """Every probe class a repetition of this scenario runs, in start order (stopped in reverse)."""
    return [*MANDATORY_FIRST, *enabled(body), *MANDATORY_LAST]
