"""Run directories: results/<lab>/<run-id>/, never overwritten; ``latest`` points
to the newest *complete* run only, and is switched atomically."""

from __future__ import annotations

import json
import os
import secrets
import time
from pathlib import Path
from typing import Any


def new_run_id() -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(2)


def create_run_dir(results_root: Path, lab: str) -> tuple[str, Path]:
    base = results_root / lab
    base.mkdir(parents=True, exist_ok=True)
    while True:
        run_id = new_run_id()
        path = base / run_id
        try:
            path.mkdir()  # exclusive: a completed run is never written into again
            return run_id, path
        except FileExistsError:
            continue


def write_json(path: Path, data: Any) -> None:
    """Write-then-rename so a reader (or a kill) never sees half a file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")
    tmp.replace(path)


def mark_latest(run_dir: Path) -> None:
    link = run_dir.parent / "latest"
    tmp = run_dir.parent / f".latest-{os.getpid()}"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(run_dir.name)
    tmp.replace(link)
