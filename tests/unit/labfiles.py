"""Writing a small lab (topology + experiment) for a unit test to load."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def write_lab(root: Path, name: str, topology: dict[str, Any], experiment: dict[str, Any]) -> Path:
    """``root/name`` with topology.clab.yml and experiment.yml (rewritten if there)."""
    lab = root / name
    lab.mkdir(exist_ok=True)
    (lab / "topology.clab.yml").write_text(yaml.safe_dump(topology))
    (lab / "experiment.yml").write_text(yaml.safe_dump(experiment))
    return lab
