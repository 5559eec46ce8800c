"""kill -9 of the runner at random moments over a whole run (deploy, link checks,
traffic, teardown, analysis, report); then `mptcplab clean` (or the next run) must
leave nothing of the run on the system, keep earlier complete results byte-identical,
and mark the killed run incomplete with its reason.

Moments are stratified: kill i of N falls in the i-th N-th of [0, 1.1 x the
undisturbed run's wall time], drawn with the session seed (printed in the header;
MPTCPLAB_FAULTS_SEED repeats a session, MPTCPLAB_FAULTS_KILLS sets N)."""

from __future__ import annotations

import json
import os
import random
import signal
import time

import pytest
from faults_harness import (
    Before,
    Session,
    Watcher,
    clean,
    finished_complete,
    leftovers,
    netns,
    new_capture_bytes,
    phase,
    prefixes_in_results,
    results_problems,
    run_and_signal,
    run_dirs,
    seed,
    start,
)

pytestmark = pytest.mark.netns
KILLS = int(os.environ.get("MPTCPLAB_FAULTS_KILLS", "10"))
SPAN = 1.1  # a little past the undisturbed run's end: a kill may find the run finished


def moment(i: int, run_seconds: float, attempt: int = 0) -> float:
    rng = random.Random(f"{seed()}-kill-{i}-{attempt}")
    width = SPAN * run_seconds / KILLS
    return (i + rng.random()) * width


@pytest.mark.parametrize("i", range(KILLS))
def test_kill9_then_clean(faults: Session, i: int) -> None:
    at = moment(i, faults.run_seconds)
    faults.kill_cases += 1
    for attempt in range(3):
        known = {str(d.relative_to(faults.results)) for d in run_dirs(faults.results)}
        before = Before.take()
        o = run_and_signal(faults.results, at, signal.SIGKILL)
        where = phase(faults.results, known)
        c = clean(faults.results)
        tag = f"seed {seed()}, kill {i + 1}/{KILLS} at {at:.2f} s ({where}; runner rc {o.rc})"
        print(f"\n{tag}; clean: {' | '.join(c.stdout.splitlines())}")
        assert not leftovers(o.seen, faults.results, before), tag
        assert not results_problems(faults.results, faults.complete), tag
        if o.rc == -signal.SIGKILL:
            faults.kills += 1
            return
        # the run ended before the moment (this machine's speed varies with its load): it
        # must be complete; the same stratum again, scaled to the run just seen
        assert finished_complete(faults.results, o) is None, tag
        faults.add_complete()
        faults.run_seconds = o.seconds
        at = moment(i, o.seconds * 0.95 / SPAN, attempt + 1)
    pytest.fail(f"seed {seed()}: kill {i + 1}: the run ended before the moment three times")


def test_kill9_mid_traffic_then_next_run_marks_and_cleans(faults: Session) -> None:
    """No `mptcplab clean`: the next run in the same results directory removes what
    the killed one left and marks it incomplete (owner process died)."""
    known = {str(d.relative_to(faults.results)) for d in run_dirs(faults.results)}
    before = Before.take()
    p = start(faults.results)
    w = Watcher(p.pid)
    w.start()
    try:
        deadline = time.monotonic() + 120
        # traffic: this run's capture files exist (not an earlier run's) and its iperf3 runs
        while time.monotonic() < deadline and p.poll() is None:
            if any(comm == "iperf3" for _, comm in w.seen.processes.values()) and \
                    new_capture_bytes(faults.results, known) > 0:
                break
            time.sleep(0.05)
        assert p.poll() is None, "the run ended before its traffic could be interrupted"
        w.poll()
        p.kill()
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
        seen = w.stop()
    killed = [d for d in run_dirs(faults.results) if str(d.relative_to(faults.results)) not in known]
    assert len(killed) == 1 and (killed[0] / ".owner").exists()
    prefixes = seen.prefixes | prefixes_in_results(faults.results)
    assert any(n.startswith(tuple(prefixes)) for n in netns()), "kill -9 left nothing: the test tests nothing"
    nxt = run_and_signal(faults.results, at=None)
    assert finished_complete(faults.results, nxt) is None
    assert not leftovers(seen, faults.results, before)
    assert not leftovers(nxt.seen, faults.results, before)
    m = json.loads((killed[0] / "manifest.json").read_text())
    assert m["complete"] is False and "owner process died" in m["incomplete_reason"]
    faults.add_complete()
    assert not results_problems(faults.results, faults.complete)


def test_kills_happened(faults: Session) -> None:
    """Every kill case above killed a running runner (not one that had finished)."""
    if not faults.kill_cases:
        pytest.skip("no kill case ran in this session")
    assert faults.kills == faults.kill_cases, f"only {faults.kills} of {faults.kill_cases} kills hit a running run"
    print(f"\nseed {seed()}: {faults.kills} kill -9s of a running runner, each followed by clean and checks")
