"""Builds the delay line and runs its C unit test (release order and timing with
a fake clock), plus the command-line checks that need no root."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from mptcplab.emulation.base import repo_root

NATIVE = repo_root() / "native"
pytestmark = pytest.mark.skipif(shutil.which("make") is None or shutil.which("cc") is None,
                                reason="needs make and a C compiler")


def test_make_native_test() -> None:
    p = subprocess.run(["make", "-C", str(NATIVE), "test"], capture_output=True, text=True, timeout=120, check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "0 failures" in p.stdout


def _binary() -> Path:
    subprocess.run(["make", "-C", str(NATIVE)], capture_output=True, check=True, timeout=120)
    return NATIVE / "build" / "mptcplab-delayline"


@pytest.mark.parametrize("args", [
    [],                                    # --queue and --delay-us are required
    ["--queue", "1"],
    ["--queue", "x", "--delay-us", "10"],
    ["--queue", "1", "--delay-us", "-5"],
    ["--queue", "70000", "--delay-us", "10"],
    ["--queue", "1", "--delay-us", "10", "extra"],
    ["--queue", "1", "--delay-us", "10", "--rate-bps", "fast"],
    ["--queue", "1", "--delay-us", "10", "--rate-bps", "100", "--limit-bytes", "-1"],
    ["--queue", "1", "--delay-us", "10", "--timer", "soon"],
    ["--queue", "1", "--delay-us", "10", "--offcpu-min-batch", "0"],
])
def test_bad_arguments_exit_2(args: list[str]) -> None:
    p = subprocess.run([str(_binary()), *args], capture_output=True, text=True, timeout=10, check=False)
    assert p.returncode == 2
    assert "usage" in p.stderr or "bad value" in p.stderr
    assert "ready" not in p.stdout
