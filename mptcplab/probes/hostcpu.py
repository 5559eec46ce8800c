"""``host_cpu``: the host's CPU accounting over the traffic (procstat.py), for every
repetition: read last before the traffic and first after it (the registry lists it after
the lab's probes, ``MANDATORY_LAST``, and stops run newest first), kept in the record as ``host_cpu``
(record/model.HostCpu). It writes no file and runs no command: two reads of /proc by the
runner, whose kernel is the nodes' (namespaces and containers share it)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import pandas as pd

from ..commands import cmd
from ..steps.base import Planned
from .base import Probe
from .procstat import Snapshot, interval, read_snapshot, tick_hz

if TYPE_CHECKING:
    from ..steps.base import Rep

FILES = ("/proc/stat", "/proc/pressure/cpu")


class HostCpuProbe(Probe):
    name = "host_cpu"
    artifacts_dir: ClassVar[str] = ""

    def __init__(self) -> None:
        self._before: Snapshot | None = None

    def commands(self, rep: Rep) -> list[Planned]:
        return [Planned(cmd("cat", *FILES), in_process=True, note="before and after the traffic: record's host_cpu")]

    def start(self, rep: Rep) -> None:
        self._before = read_snapshot()

    def stop(self, rep: Rep) -> None:
        if self._before is not None:
            rep.extra["host_cpu"] = interval(self._before, read_snapshot(), tick_hz()).model_dump()

    def artifacts(self) -> list[str]:
        return []

    @classmethod
    def analyze(cls, rep_dir: Path) -> pd.DataFrame:
        return pd.DataFrame()  # its numbers are in the record, not in a file
