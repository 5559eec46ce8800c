"""The fault-injection suite's shared state: one results directory for the whole
session, holding a complete run made first (hashed: every case checks it stays
byte-identical), and the seed of the random fault moments."""

from __future__ import annotations

import os
import time

import pytest
from faults_harness import Before, Session, finished_complete, leftovers, run_and_signal, seed


def pytest_report_header(config: pytest.Config) -> str:
    return (f"faults seed: {seed()} (set MPTCPLAB_FAULTS_SEED to repeat; "
            f"MPTCPLAB_FAULTS_KILLS={os.environ.get('MPTCPLAB_FAULTS_KILLS', '10')})")


@pytest.fixture(scope="session")
def faults(tmp_path_factory: pytest.TempPathFactory) -> Session:
    results = tmp_path_factory.mktemp("faults") / "results"
    before = Before.take()
    t0 = time.monotonic()
    o = run_and_signal(results, at=None)
    problem = finished_complete(results, o)
    assert problem is None, f"the undisturbed run failed: {problem}"
    assert not leftovers(o.seen, results, before)
    s = Session(results, time.monotonic() - t0)
    s.add_complete()
    assert len(s.complete) == 1
    print(f"\nundisturbed run: {s.run_seconds:.1f} s (fault moments are drawn from this range); seed {seed()}")
    return s
