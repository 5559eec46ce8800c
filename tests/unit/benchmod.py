"""Loading a bench/ script as a module, for the unit tests of its arithmetic (bench/ is
not a package: its scripts are run by path)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parents[2] / "bench"


def load_bench(name: str) -> Any:
    """bench/<name>.py, imported under ``name``."""
    spec = importlib.util.spec_from_file_location(name, BENCH_DIR / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod
