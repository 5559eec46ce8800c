"""A results directory on a full small tmpfs, and on a read-only one: one line on
stderr, the documented exit status (1: the run failed part-way and is kept
incomplete; 2: no run directory can be created, nothing was created), no stray
temporary file, nothing of the run left on the system."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from faults_harness import Before, leftovers, run_and_signal

pytestmark = pytest.mark.netns


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    mounted: list[Path] = []

    def mount(options: str) -> Path:
        d = tmp_path / f"fs{len(mounted)}"
        d.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(d)], check=True)
        mounted.append(d)
        return d

    try:
        yield mount
    finally:
        for d in reversed(mounted):
            subprocess.run(["umount", "-l", str(d)], check=False)


def _stray(root: Path) -> list[str]:
    # (.owner stays: the run could not write its final manifest, so the next run or
    # `mptcplab clean` marks it once the file system has room)
    return [str(p.relative_to(root)) for p in root.rglob("*")
            if p.name.endswith(".tmp") or p.name.startswith((".partial-", ".latest-"))]


def test_full_results_filesystem(tmpfs: Callable[[str], Path]) -> None:
    # 200 KiB: room for the run directory and its first manifest, not for the captures
    root = tmpfs("size=200k")
    before = Before.take()
    o = run_and_signal(root / "results", at=None, timeout=300)
    err = o.stderr.strip().splitlines()
    assert o.rc == 1, o.stderr
    assert len(err) == 1 and "No space left on device" in err[0] and "--results" in err[0], o.stderr
    assert "Traceback" not in o.stdout + o.stderr
    assert not leftovers(o.seen, root / "results", before)
    assert not _stray(root / "results"), _stray(root / "results")
    runs = [d for d in (root / "results" / "sndbuf").iterdir()]
    # the run directory appeared whole: with its first manifest, which says incomplete
    assert len(runs) == 1 and (runs[0] / "manifest.json").is_file()
    assert '"complete": false' in (runs[0] / "manifest.json").read_text()
    assert not (root / "results" / "sndbuf" / "latest").exists()


def test_read_only_results_filesystem(tmpfs: Callable[[str], Path]) -> None:
    root = tmpfs("ro,size=1m")
    before = Before.take()
    o = run_and_signal(root / "results", at=None, timeout=300)
    err = o.stderr.strip().splitlines()
    assert o.rc == 2, o.stderr
    assert len(err) == 1 and "--results" in err[0] and "Read-only file system" in err[0], o.stderr
    # (host probes, mplt<hex>, may run: they are throwaway and recorded; no node namespace)
    assert not {n for n in o.seen.namespaces if re.match(r"^mpl[0-9a-f]{6}-", n)}, \
        "namespaces were created for a run that cannot store its results"
    assert not leftovers(o.seen, root, before)
    assert not list(root.iterdir())
