"""A kernel's packages directory, as images/kernel/debs.sh reads it (the one rule, shared
with qemu-run.sh and boot-check.sh): its release and its one linux-image package."""

from __future__ import annotations

import functools
import subprocess
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEBS_SH = REPO / "images" / "kernel" / "debs.sh"
QEMU_RUN = REPO / "images" / "kernel" / "qemu-run.sh"


@dataclass(frozen=True)
class KernelPackages:
    dir: Path
    release: str
    image: Path


class BadPackages(ValueError):
    """What is wrong with a packages directory, in debs.sh's one line (without its prefix)."""


@functools.cache
def read_packages(d: Path) -> KernelPackages:
    p = subprocess.run(["bash", str(DEBS_SH), str(d)], capture_output=True, text=True, timeout=30)
    if p.returncode != 0:
        line = (p.stderr.strip().splitlines() or [f"debs.sh exit status {p.returncode}"])[-1]
        raise BadPackages(line.removeprefix("debs.sh: "))
    release, image = p.stdout.rstrip("\n").split("\t", 1)
    return KernelPackages(d, release, Path(image))
