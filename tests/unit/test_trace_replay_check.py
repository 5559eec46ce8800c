"""The trace replay check (mptcplab/tracecheck.py) without namespaces: how a
captured release is put back at its opportunity and window, each window's bounds, the
verdict on synthetic captures (a faithful replay, a stall, a batching capture), the flood
and queue sizing, the capture's set-up (the defect of issue 37 was a batching NFLOG), and
`calibrate --trace`'s checks of its arguments."""

from __future__ import annotations

from pathlib import Path

import pytest

from mptcplab import tracecheck as tc
from mptcplab.calibrate import TraceCalibrateRequest, check_trace_request
from mptcplab.emulation.trace import OPPORTUNITY_BYTES, Trace, load_trace, trace_for
from mptcplab.errors import LabInputError

OPP = OPPORTUNITY_BYTES
START_NS = 1_700_000_000_000_000_000
DELAY = 0.010


def _trace(tmp_path: Path, stamps: list[int]) -> Trace:
    p = tmp_path / "t.trace"
    p.write_text("".join(f"{ms}\n" for ms in stamps))
    return load_trace(p)


def _capture(ms: float) -> float:
    """The capture time of a packet released ``ms`` after the trace's start, plus the delay."""
    return START_NS / 1e9 + DELAY + ms / 1000


def _stage(**kw: int) -> dict[str, int]:
    return {"start_unix_ns": START_NS, "opportunities_used": 0, "opportunities_wasted": 0,
            "opportunities_wasted_between_drops": 0, **kw}


def test_departure_is_the_opportunity_at_or_before_the_release() -> None:
    assert tc.departure_ms(_capture(1234), START_NS, DELAY) == 1234
    assert tc.departure_ms(_capture(1234.95), START_NS, DELAY) == 1234  # late, within its ms
    assert tc.departure_ms(_capture(1234 - 0.001), START_NS, DELAY) == 1234  # a stamp's truncation
    assert tc.departure_ms(_capture(1235.2), START_NS, DELAY) == 1235


def test_windows_are_half_open_on_the_left() -> None:
    assert [tc.window_of(ms) for ms in (1, 100, 101, 200)] == [0, 0, 1, 1]


def test_window_bounds_are_the_opportunities_a_lag_can_move() -> None:
    t = trace_for("outage-2s", ".")
    # 24 Mbit/s phase (2 per ms): 2 ms of lag move up to 4 opportunities out and in
    assert tc.window_bounds(t, 30) == (4 + tc.PARTIAL_OPP, 4 + tc.PARTIAL_OPP)
    # inside the outage nothing can move; at its start the 24 Mbit/s tail can come in late
    assert tc.window_bounds(t, 45) == (tc.PARTIAL_OPP, tc.PARTIAL_OPP)
    assert tc.window_bounds(t, 40) == (tc.PARTIAL_OPP, 4 + tc.PARTIAL_OPP)


def _one_per_ms(tmp_path: Path) -> Trace:
    return _trace(tmp_path, list(range(1, 1001)))  # 12.032 Mbit/s, 1 s loop


def test_a_faithful_replay_is_exact(tmp_path: Path) -> None:
    t = _one_per_ms(tmp_path)
    pkts = [(_capture(ms + 0.3), 1500) for ms in range(1, 2001)]  # every opportunity, 0.3 ms late
    rep = tc.compare(t, pkts, _stage(), DELAY)
    assert len(rep.windows) == 20 - tc.RAMP_WINDOWS - tc.TAIL_WINDOWS
    assert all(w.error == 0 for w in rep.windows) and rep.ok
    assert rep.mean_abs_error == 0 and rep.total_error == 0
    assert "within tolerance" in rep.render()


def test_a_stall_longer_than_the_lag_spoils_two_windows(tmp_path: Path) -> None:
    t = _one_per_ms(tmp_path)
    # the releases of 990..1000 ms came out at 1001 ms: window 9 short by 11, window 10 over
    pkts = [(_capture(ms if not 990 <= ms <= 1000 else 1001.1), 1500) for ms in range(1, 2001)]
    rep = tc.compare(t, pkts, _stage(), DELAY)
    bad = {w.index: w.error // OPP for w in rep.bad}
    assert bad == {9: -11, 10: 11}
    assert rep.total_error == 0
    assert not rep.ok  # 2 of 12 windows beyond their bounds: more than MAX_BAD_SHARE
    assert rep.worst.index in (9, 10) and "OUT OF TOLERANCE" in rep.render()


def test_a_batching_capture_is_out_of_tolerance(tmp_path: Path) -> None:
    """What NFLOG without --nflog-threshold 1 gave: 18 packets stamped at once, when the
    kernel's buffer filled. The total is right, the windows are not."""
    t = _one_per_ms(tmp_path)
    pkts = [(_capture((ms - 1) // 18 * 18 + 18), 1500) for ms in range(1, 3001)]
    rep = tc.compare(t, pkts, _stage(), DELAY)
    assert len(rep.bad) > tc.MAX_BAD_SHARE * len(rep.windows) and not rep.ok


def test_capture_logs_each_packet_at_once_at_real_time_priority(tmp_path: Path) -> None:
    rule = tc.nflog_rule().argv
    assert rule[rule.index("--nflog-threshold") + 1] == "1"
    assert rule[:2] == ("iptables", "-w") and "INPUT" in rule and tc.nflog_rule().node == "b"
    argv = tc.capture_argv(tmp_path / "x.pcap")
    assert argv[:3] == ("chrt", "-f", str(tc.CAPTURE_RT_PRIO)) and "--immediate-mode" in argv


def test_wasted_under_the_flood_is_the_stage_count_between_drops(tmp_path: Path) -> None:
    t = _one_per_ms(tmp_path)
    pkts = [(_capture(ms), 1500) for ms in range(1, 2001)]
    rep = tc.compare(t, pkts, _stage(opportunities_wasted=900, opportunities_wasted_between_drops=3), DELAY)
    assert rep.wasted_in_use == 3


def test_flood_and_queue_sizing() -> None:
    out = trace_for("outage-2s", ".")
    assert tc.flood_bps(out) == 31_000_000  # 1.25 x 24.064, rounded up
    assert tc.saturating_queue_bytes(out, tc.flood_bps(out)) <= 2 * OPP  # never above the flood for long


def test_a_burst_beyond_the_flood_needs_a_queue(tmp_path: Path) -> None:
    burst = _trace(tmp_path, [5] * 20 + [100])  # 20 opportunities at 5 ms, a 100 ms loop: 2.5 Mbit/s
    flood = tc.flood_bps(burst)
    assert flood == 4_000_000
    # the flood brings 500 bytes per ms, more than the rest of the loop needs: the most the
    # capacity exceeds it by is the burst itself, which takes no time at all
    assert tc.saturating_queue_bytes(burst, flood) == 20 * OPP


def test_calibrate_trace_checks_its_arguments() -> None:
    cal = check_trace_request(TraceCalibrateRequest(trace="outage-2s", delay="10ms"), Path("."))
    assert cal.seconds == 9 and cal.flood_bps == 31_000_000  # the 8 s period and a second
    assert cal.queue_bytes == 100 * OPP  # the burst need is tiny: the floor
    lte = check_trace_request(TraceCalibrateRequest(trace="verizon-lte-down-60s"), Path("."))
    assert lte.queue_bytes == 2 * tc.saturating_queue_bytes(lte.trace, lte.flood_bps) > 100 * OPP
    given = check_trace_request(TraceCalibrateRequest(trace="outage-2s", buffer="1MB", seconds=3), Path("."))
    assert given.queue_bytes == 1_000_000 and given.seconds == 3
    for req, field in ((TraceCalibrateRequest(trace="nosuch"), "--trace"),
                       (TraceCalibrateRequest(trace="outage-2s", delay="ten ms"), "--delay"),
                       (TraceCalibrateRequest(trace="outage-2s", buffer="3 apples"), "--buffer"),
                       (TraceCalibrateRequest(trace="outage-2s", seconds=1), "--seconds")):
        with pytest.raises(LabInputError) as e:
            check_trace_request(req, Path("."))
        assert e.value.field == field, str(e.value)


def test_the_verdict_as_link_check_entries(tmp_path: Path) -> None:
    """ReplayReport.checks: what the run's link check records, judged as ``ok`` judges."""
    t = _one_per_ms(tmp_path)
    good = tc.compare(t, [(_capture(ms + 0.3), 1500) for ms in range(1, 2001)], _stage(), DELAY)
    checks = {c.quantity: c for c in good.checks("a:eth1->b:eth1")}
    assert set(checks) == {"trace_windows_out", "trace_delivered_bytes", "trace_mean_abs_error_bytes"}
    assert all(c.ok and c.direction == "a:eth1->b:eth1" for c in checks.values())
    assert checks["trace_delivered_bytes"].measured == checks["trace_delivered_bytes"].configured == good.expected
    assert "at most 5% of 12 windows" in checks["trace_windows_out"].tolerance
    # the stall of the test above: two windows out of twelve, the total right
    stalled = tc.compare(t, [(_capture(ms if not 990 <= ms <= 1000 else 1001.1), 1500) for ms in range(1, 2001)],
                         _stage(), DELAY)
    c = {c.quantity: c for c in stalled.checks()}
    assert not c["trace_windows_out"].ok and c["trace_windows_out"].measured == 2
    assert c["trace_delivered_bytes"].ok
    assert all(c.ok for c in stalled.checks()) is stalled.ok
    # half the releases missing: the total is out too
    thin = tc.compare(t, [(_capture(ms + 0.3), 1500) for ms in range(1, 2001, 2)], _stage(), DELAY)
    assert not {c.quantity: c for c in thin.checks()}["trace_delivered_bytes"].ok


def test_the_run_checks_a_span_with_a_queue_the_flood_keeps_full() -> None:
    t = trace_for("verizon-lte-down-60s", ".")
    flood = tc.flood_bps(t)
    least = 2 * tc.saturating_queue_bytes(t, flood)
    assert tc.replay_queue_bytes(t, 80_000) == max(least, 100 * OPP) > 80_000
    assert tc.replay_queue_bytes(t, 10 * least) == 10 * least  # a larger own queue is kept
    assert tc.whole_trace_seconds(t) == 61
    a = tc.ReplayCheck(t, 0.01, 1500, tc.replay_queue_bytes(t, 80_000), 6.0)
    assert a.key == tc.ReplayCheck(t, 0.01, 1500, tc.replay_queue_bytes(t, 100_000), 6.0).key
    assert a.key != tc.ReplayCheck(t, 0.02, 1500, a.queue_bytes, 6.0).key
    assert "first 6 s" in a.describe() and "verizon-lte-down-60s" in a.describe()
    rule, capture, server, client = (c.argv for c in a.planned())
    assert rule == tc.nflog_rule().argv and capture[:3] == ("chrt", "-f", str(tc.CAPTURE_RT_PRIO))
    assert client[client.index("-t") + 1] == "6.0" and client[client.index("-b") + 1] == str(flood)


def test_the_span_is_a_lab_option_checked_at_the_edge() -> None:
    from pydantic import ValidationError

    from mptcplab.lab.schema.experiment import Calibration

    assert Calibration(trace_seconds="5s").trace_seconds == "5s" and Calibration().trace_seconds is None
    for bad in ("1s", "fast"):
        with pytest.raises(ValidationError, match="trace_seconds"):
            Calibration(trace_seconds=bad)


def test_a_replay_from_an_offset_is_compared_in_trace_time(tmp_path: Path) -> None:
    """The stage's start is when the trace is at its offset (the stats' offset_ms)."""
    t = _trace(tmp_path, [*range(1, 1001), *range(1002, 2001, 2)])  # 1 per ms, then 1 per 2 ms; 2 s loop
    opps = [ms for ms in t.stamps_ms if ms > 1000] + [ms + 2000 for ms in t.stamps_ms if ms <= 1000]
    pkts = [(_capture(ms - 1000 + 0.3), 1500) for ms in opps]  # every opportunity from 1 s in
    rep = tc.compare(t, pkts, _stage(offset_ms=1000), DELAY)
    assert rep.ok and rep.windows[0].at_ms >= 1000 and rep.total_error == 0
    assert not tc.compare(t, pkts, _stage(), DELAY).ok  # read from the trace's start: wrong
