"""Everything a run creates is recognisable by `mptcplab clean`, the host probes'
throwaway namespaces included (issue 12 item 6: a kill during the netem probe leaked
an `mpltprobe<hex>` namespace that clean never removed)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mptcplab import runstate

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.netns

# The probe is killed (SIGKILL: no handler, no finally) at the moment it asks tc for
# netem, i.e. while its namespace exists.
KILLED_PROBE = textwrap.dedent("""
    import os, signal, subprocess
    real = subprocess.run
    def run(argv, *a, **kw):
        if "tc" in argv:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(argv, *a, **kw)
    subprocess.run = run
    from mptcplab.emulation.hostprobe import netem_available
    netem_available()
""")


def netns() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def _probe_namespaces_of(pid: int) -> set[str]:
    """The probe namespaces whose ownership record names `pid`."""
    out: set[str] = set()
    for f in runstate.STATE_DIR.glob("mpl*.json"):
        try:
            data = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        if data.get("pid") == pid and data.get("probe"):
            out.update(data.get("namespaces", []))
    return out


def test_clean_removes_the_namespace_of_a_killed_probe() -> None:
    p = subprocess.Popen([sys.executable, "-c", KILLED_PROBE], cwd=REPO)
    assert p.wait(timeout=60) == -9
    # the killed probe's own namespaces, by its ownership record: a before/after listing
    # would also take a concurrent run's live probe, which clean rightly spares (and the
    # cleanup below would delete it under its owner)
    leaked = _probe_namespaces_of(p.pid) & netns()
    try:
        assert leaked, "the killed probe should have left its namespace (else this test tests nothing)"
        c = subprocess.run([sys.executable, "-m", "mptcplab.cli", "clean"], cwd=REPO, capture_output=True,
                           text=True, timeout=60)
        assert c.returncode == 0, c.stderr
        assert not (netns() & leaked), f"clean left {netns() & leaked}: {c.stdout}"
        assert all(ns in c.stdout for ns in leaked)
    finally:
        for ns in netns() & leaked:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def test_a_live_probe_is_not_cleaned_under_it() -> None:
    """A concurrent run's clean must not remove a probe namespace whose owner lives."""
    from mptcplab.backends.netns import clean
    from mptcplab.emulation.hostprobe import probe_namespace

    with probe_namespace() as ns:
        assert ns is not None and ns in netns()
        # clean() never counts our own PID as live (it is our leftover): ask as another process
        c = subprocess.run([sys.executable, "-c", "from mptcplab.backends.netns import clean; print(clean())"],
                           cwd=REPO, capture_output=True, text=True, timeout=60)
        assert c.returncode == 0, c.stderr
        assert ns in netns(), c.stdout
    assert ns not in netns()
    assert clean() == [] or ns not in clean()
