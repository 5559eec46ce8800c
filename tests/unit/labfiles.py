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


SELFTESTS = Path(__file__).resolve().parents[2] / "labs" / "selftests"


def selftests_with_flow(tmp_path: Path, flow: dict[str, Any], v6: bool = False) -> Path:
    """labs/selftests copied with its base flow changed, one scenario ("base") and no finding;
    ``v6``: the links get the script's dead:beef:N::1 / ::2 too."""
    import shutil

    lab = tmp_path / "lab"
    shutil.copytree(SELFTESTS, lab)
    exp = yaml.safe_load((lab / "experiment.yml").read_text())
    exp["traffic"]["flows"]["main"].update(flow)
    exp["scenarios"] = [{"name": "base", "description": "the base flow"}]
    exp.pop("subsets", None)
    if v6:
        exp["addressing"]["addresses6"] = {f"{n}:eth{i}": f"dead:beef:{i}::{1 if n == 'server' else 2}/64"
                                           for i in range(1, 5) for n in ("server", "client")}
    (lab / "experiment.yml").write_text(yaml.safe_dump(exp, sort_keys=False))
    pub = yaml.safe_load((lab / "published.yml").read_text())
    pub["findings"] = []
    (lab / "published.yml").write_text(yaml.safe_dump(pub, sort_keys=False))
    return lab
