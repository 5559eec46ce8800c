"""`mptcplab calibrate` on this kernel: within tolerance for a reasonable link, out of
tolerance (exit status 1) for an impossible one. Real namespaces, real traffic."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.netns


def calibrate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mptcplab.cli", "calibrate", *args, "--seconds", "3"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)


def test_delayed_link_within_tolerance() -> None:
    p = calibrate("--rate", "100mbit", "--delay", "20ms")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "within tolerance" in p.stdout
    row = next(line for line in p.stdout.splitlines() if line.startswith("rtt_min_ms"))
    assert 39.5 < float(row.split()[2]) < 41.2


def test_impossible_link_is_reported_out_of_tolerance() -> None:
    p = calibrate("--rate", "50gbit", "--delay", "1ms")
    assert p.returncode == 1
    assert "OUT OF TOLERANCE" in p.stdout and "goodput_mbps" in p.stdout
