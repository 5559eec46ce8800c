"""Probe name (the key under ``probes:`` in experiment.yml) -> class. A new probe is a
module with a Probe subclass, one line here and a field in lab/schema/experiment.py Probes. The
packet capture (tcpdump.py) is not here: no lab can turn it off (probes/step.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import Probe
from .memory import SsMemoryProbe
from .monitor import MptcpMonitor
from .nstat import NstatProbe
from .tcp_probe import TcpProbe

if TYPE_CHECKING:
    from ..lab.schema import ExperimentBody

#: in start order (stop runs in reverse): the nstat "before" reading comes last so the
#: other probes' own start-up is not counted in it
REGISTRY: dict[str, type[Probe]] = {
    TcpProbe.name: TcpProbe,
    SsMemoryProbe.name: SsMemoryProbe,
    MptcpMonitor.name: MptcpMonitor,
    NstatProbe.name: NstatProbe,
}


def names() -> tuple[str, ...]:
    return tuple(REGISTRY)


def enabled(body: ExperimentBody) -> list[type[Probe]]:
    """The probe classes a scenario turns on."""
    # a probe's field is a switch (true) or its setting (ss_interval: 100ms); None/false: off
    return [cls for name, cls in REGISTRY.items() if getattr(body.probes, name, None) not in (None, False)]
