"""Host state around a run: the run directory's path form for the backend, and what
killed runs left behind, cleaned before and after."""

from __future__ import annotations

from pathlib import Path

from .. import backends
from ..backends.base import Backend


def run_dir_form(run_dir: Path, backend_cls: type[Backend]) -> Path:
    # bound into the nodes: paths in node commands must be absolute there
    return run_dir.absolute() if backend_cls.absolute_paths else run_dir


def clean_all(backend: str) -> None:
    """What killed runs left: namespaces always (host probes make them on every
    backend), plus the backend's own, plus tracefs instances and engine congestion
    controls nobody alive holds (host-wide, any backend)."""
    from ..cc.holds import clean as clean_ccs
    from ..probes.tracefs import clean as clean_tracefs

    for cls in dict.fromkeys([backends.get("netns"), backends.get(backend)]):
        cls.clean()
    clean_tracefs()
    clean_ccs()
