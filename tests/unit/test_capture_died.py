"""When a stopped capture counts as one that did not end as told (probes.tcpdump.capture_died)."""

from __future__ import annotations

from mptcplab.probes.tcpdump import capture_died


def test_a_capture_that_ended_before_the_stop_died() -> None:
    assert capture_died(-9, -9, killed_by_us=False) == -9
    assert capture_died(1, 1, killed_by_us=False) == 1


def test_a_kill_from_outside_after_the_check_still_counts() -> None:
    # SIGKILL landed between the run's look at the capture and tcpdump's handling of SIGINT
    assert capture_died(None, -9, killed_by_us=False) == -9


def test_a_clean_stop_and_the_runs_own_kill_do_not() -> None:
    assert capture_died(None, 0, killed_by_us=False) is None
    assert capture_died(None, -9, killed_by_us=True) is None
