"""A loaded lab: the three files validated and their scenarios made concrete.

loader.py makes a Lab; scale.py rescales its scenarios; everything after validation
(preflight, the plan, the steps, the backends) reads it. Its own module, below both,
so that the scale factor need not import the loader that applies a lab's own factor.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .schema import ClabTopology, Experiment, ExperimentBody, Published


@dataclass(frozen=True)
class ScenarioRun:
    """One concrete scenario: the experiment with its override and sweep point applied."""

    name: str
    description: str
    body: ExperimentBody
    sweep_point: dict[str, Any]


@dataclass(frozen=True)
class Lab:
    name: str
    path: Path
    topology: ClabTopology
    experiment: Experiment
    published: Published | None
    scenarios: tuple[ScenarioRun, ...]
    file_hashes: dict[str, str]
    #: the factor the scenarios' rates were scaled by (lab/scale.py apply_scale; 1: not scaled)
    scale: float = 1.0
    #: where the factor came from: "none", "lab", "command line", "auto"
    scale_source: str = "none"
    #: why a factor given on the command line was chosen (``--scale-reason``: the measurement)
    scale_note: str | None = None
    #: the scenarios as the lab files give them, before scaling (empty: ``scenarios`` are)
    unscaled: tuple[ScenarioRun, ...] = ()

    def base_scenarios(self) -> tuple[ScenarioRun, ...]:
        return self.unscaled or self.scenarios
