"""The probe interface: something that watches a repetition from before its traffic
starts until after it ends, and leaves files under ``<rep>/probes/``.

A probe is built per repetition (it holds what it started). The probes step
(probes/step.py) calls, in order:

    commands(rep)  every command start() and stop() run, for the dry run (no side effects)
    start(rep)     before traffic: spawn readers, take "before" snapshots
    stop(rep)      after traffic: stop readers, take "after" snapshots, write files
    close()        every exit path (teardown): release host-wide resources (a tracefs
                   instance), never raises; a no-op after stop()

and after the repetition, in the analysis worker (no root, nothing running):

    analyze(rep_dir) -> DataFrame   the probe's files as one typed table

``artifacts()`` names the files the probe writes, relative to ``<rep>/probes/`` (to the
repetition's own directory for the packet capture, tcpdump.py: ``artifacts_dir``);
docs/results-format.md describes each.

The packet capture (tcpdump.py) is the one mandatory probe: every repetition runs it,
first; the others are the lab's choice (experiment.yml ``probes:``, registry.py).

A probe the lab chooses declares everything else that names it in one place, so no other
module does: ``setting`` (its field of the ``Probes`` schema, lab/schema/experiment.py),
``tools`` and ``tracepoints`` (preflight.py checks them), ``summarise`` (what it adds to the
repetition's record, probes/analysis.py).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import pandas as pd

if TYPE_CHECKING:
    from ..analysis.model import FlowAnalysis
    from ..lab.schema import ExperimentBody
    from ..steps.base import Planned, Rep

PROBES_DIR = "probes"


def probes_dir(rep_dir: Path) -> Path:
    return rep_dir / PROBES_DIR


@dataclass(frozen=True)
class Setting:
    """A probe's key under experiment.yml ``probes:``: the ``Probes`` schema field built
    from it (a switch, ``bool`` default False, or a value whose None means off)."""

    #: the field's type, pydantic validators included (``Annotated[..., AfterValidator(...)]``)
    type: Any
    default: Any
    description: str


@dataclass(frozen=True)
class OtherFlow:
    """A flow beside the measured one whose data senders' samples are joined too (the
    single-path TCP flow of labs/cc: its cwnd is the comparison)."""

    name: str
    fa: FlowAnalysis
    upload: bool


@dataclass(frozen=True)
class Joined:
    """What a probe's summary may join its table with: the repetition's lab body and the
    capture's analysis of the measured flow (``flow``, ``fa``) and of the flows beside it."""

    rep_dir: Path
    body: ExperimentBody
    fa: FlowAnalysis
    upload: bool
    backup_paths: tuple[str, ...] = ()
    flow: str = ""
    others: Sequence[OtherFlow] = ()


class Probe(ABC):
    #: the key in experiment.yml's ``probes:`` that turns this probe on
    name: ClassVar[str]
    #: that key's schema field; only probes the lab chooses (registry.py) have one
    setting: ClassVar[Setting]
    #: programs it runs (program -> Debian package), checked by preflight when it is on
    tools: ClassVar[dict[str, str]] = {}
    #: tracepoints it reads ("group/event"), checked by preflight when it is on
    tracepoints: ClassVar[tuple[str, ...]] = ()
    #: the table analyze() returns, written as ``<rep>/probes/<table>`` (default ``<name>.csv``)
    table: ClassVar[str | None] = None
    #: where artifacts() are, relative to the repetition's directory ("": in it)
    artifacts_dir: ClassVar[str] = PROBES_DIR

    @abstractmethod
    def commands(self, rep: Rep) -> list[Planned]:
        """What start() and stop() run, in order (the dry run prints these)."""

    @abstractmethod
    def start(self, rep: Rep) -> None: ...

    @abstractmethod
    def stop(self, rep: Rep) -> None: ...

    def close(self) -> None:  # noqa: B027 - most probes own nothing host-wide
        """Release what must not outlive the repetition; never raises."""

    @abstractmethod
    def artifacts(self) -> list[str]:
        """File names this probe writes under ``<rep>/<artifacts_dir>/``."""

    @classmethod
    @abstractmethod
    def analyze(cls, rep_dir: Path) -> pd.DataFrame:
        """The probe's files of one repetition as one table (empty when it wrote none)."""

    @classmethod
    def for_run(cls, dry_run: bool) -> Probe:
        """The probe a repetition runs; a dry run's shows fixed placeholders for what a run
        draws at random (tcp_probe's instance token)."""
        del dry_run
        return cls()

    @classmethod
    def value(cls, body: ExperimentBody) -> Any:
        """This probe's setting in a scenario (None or False: off)."""
        return getattr(body.probes, cls.name, None)

    @classmethod
    def summarise(cls, table: pd.DataFrame, joined: Joined) -> tuple[Any, list[str]]:
        """What the probe adds to the repetition's record (rep.json ``probes.<name>``, None:
        nothing) and its warnings; it may write more files under ``<rep>/probes/``."""
        del table, joined
        return None, []
