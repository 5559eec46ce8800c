"""The dry run prints exactly the commands a run executes: a real quick run's
commands.log against the dry run of the same scenario (names and the run id
normalised). Both walk the same steps (mptcplab/run/sequence.py, mptcplab/steps/); this holds them to it."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from .labkit import assert_status

REPO = Path(__file__).resolve().parents[2]
MPTCPLAB = [sys.executable, "-m", "mptcplab.cli"]
pytestmark = pytest.mark.netns

_PREFIX = re.compile(r"mpl[0-9a-f]{6}-")


def _tokens(line: str, run_id: str = "") -> tuple[str, ...]:
    # compared as argument lists: the dry run's "<run-id>" makes shlex quote a path the
    # run's command line has unquoted
    return tuple(_PREFIX.sub("mpl000000-", t).replace(f"/{run_id}/", "/<run-id>/") if run_id else t
                 for t in shlex.split(line))


def _dry_lines(out: str) -> set[tuple[str, ...]]:
    lines = set()
    for line in out.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        lines.add(_tokens(line.split("    # ", 1)[0]))
    return lines


@pytest.mark.parametrize("lab,scenario", [
    ("mtu", "blackhole-probing-1"),  # rate checks, PMTUD black hole + its nft counters, MPTCP endpoints
    ("sndbuf", "mptcp-paper"),       # delay lines (daemons), a 40 ms link's ping interval
])
def test_dry_run_prints_every_command_the_run_executes(tmp_path: Path, lab: str, scenario: str) -> None:
    results = tmp_path / "r"
    args = [f"labs/{lab}", "--quick", "--scenario", scenario, "--emulation", "nfqueue", "--results", str(results)]
    dry = subprocess.run([*MPTCPLAB, "run", *args, "--dry-run"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert dry.returncode == 0, dry.stderr
    assert not results.exists()
    run = subprocess.run([*MPTCPLAB, "run", *args], cwd=REPO, capture_output=True, text=True, timeout=300)
    run_dir = (results / lab / "latest").resolve()
    assert_status(run.returncode, json.loads((run_dir / "summary.json").read_text()))  # 1: judged invalid, still logged
    log = (run_dir / "scenarios" / scenario / "rep1" / "commands.log").read_text()
    logged = {_tokens(line, run_dir.name) for line in log.splitlines() if line.strip()}
    printed = _dry_lines(dry.stdout)
    assert logged - printed == set(), "run executed commands the dry run does not print"
    assert printed - logged == set(), "dry run prints commands the run did not execute"
    # the commands the old hand-made dry run missed are there
    text = "\n".join(shlex.join(t) for t in printed)
    for needle in ("ping -U -n -q -c 10 -i ", "iperf3 -c ", "-C cubic -J", "iperf3 --help", "sysctl -e ",
                   "ip netns del mpl000000-client"):
        assert needle in text, needle
    if lab == "mtu":
        assert "nft -j list table inet mptcplab_fw" in text
    else:
        assert "mptcplab-delayline" in text and "-i 0.01" in text
