"""Link checks against their configuration (parsing and tolerances)."""

import pytest

from mptcplab.emulation.linkmodel import LinkShape
from mptcplab.linkcheck import (
    binomial_interval,
    expected_rtt_s,
    loss_check,
    parse_ping,
    ping_argv,
    rate_check,
    rtt_checks,
)

PING = """--- 10.0.1.1 ping statistics ---
50 packets transmitted, 50 received, 0% packet loss, time 980ms
rtt min/avg/max/mdev = 80.143/80.201/80.512/0.061 ms
"""


def test_parse_ping():
    mn, mean, tx, rx = parse_ping(PING)
    assert mn == pytest.approx(0.080143) and mean == pytest.approx(0.080201) and (tx, rx) == (50, 50)
    assert parse_ping("garbage")[0] is None


def test_ping_uses_user_space_timestamps():
    # kernel receive timestamps are taken before the NFQUEUE delay line holds a reply
    assert "-U" in ping_argv("10.0.0.1", "10.0.0.2", 10, 0.01)


def test_rtt_within_and_outside_tolerance():
    shape = LinkShape.parse(rate="100mbit", delay="40ms")
    assert expected_rtt_s(shape) == pytest.approx(0.08 + 2 * 98 * 8 / 1e8)
    assert all(c.ok for c in rtt_checks(shape, PING))
    half = PING.replace("80.143", "40.050")
    bad = rtt_checks(shape, half)
    assert not bad[0].ok and bad[0].measured == pytest.approx(40.05)


def test_unexpected_ping_loss_fails():
    shape = LinkShape.parse(rate="100mbit")
    lossy = PING.replace("50 received", "45 received").replace("80.143/80.201", "0.050/0.060")
    assert any(c.quantity == "ping_loss" and not c.ok for c in rtt_checks(shape, lossy))


def test_rate_tolerance():
    shape = LinkShape.parse(rate="100mbit")
    assert rate_check(shape, 95.4).ok and not rate_check(shape, 92.0).ok and not rate_check(shape, None).ok


def test_loss_inside_binomial_interval():
    shape = LinkShape.parse(rate="10mbit", loss="1%")
    lo, hi = binomial_interval(0.01, 5000)
    assert lo < 0.01 < hi and hi - lo < 0.01
    assert loss_check(shape, 50, 5000).ok
    assert not loss_check(shape, 150, 5000).ok
    assert not loss_check(shape, 0, 0).ok


def _trace(tmp_path, stamps):
    from mptcplab.emulation.trace import load_trace

    p = tmp_path / "t.trace"
    p.write_text("".join(f"{ms}\n" for ms in stamps))
    return load_trace(p)


def test_trace_wait_is_the_largest_gap_wrap_included(tmp_path):
    from mptcplab.linkcheck import trace_wait_s

    # opportunities at 1..10 ms, then a gap to 50, then the loop wraps (50 -> 51 = 1)
    trace = _trace(tmp_path, [*range(1, 11), 50])
    assert trace_wait_s(LinkShape.parse(trace=trace)) == pytest.approx(0.041)
    assert trace_wait_s(LinkShape.parse(delay="10ms")) == 0.0
    # a trace whose loop wraps over a long outage: the wrap is the gap
    assert trace_wait_s(LinkShape.parse(trace=_trace(tmp_path, [3000, 3001, 3002]))) == pytest.approx(3.001)


def test_rtt_of_a_trace_link_allows_the_wait_for_an_opportunity_above_only(tmp_path):
    trace = _trace(tmp_path, [*range(1, 11), 50])  # up to 41 ms of wait per direction
    shape = LinkShape.parse(trace=trace, delay="40ms")
    late = PING.replace("80.143", "150.000")  # 70 ms over: within 2 x 41 ms
    ok = rtt_checks(shape, late)[0]
    assert ok.ok and "+" in ok.tolerance and "opportunity" in ok.tolerance
    assert not rtt_checks(shape, PING.replace("80.143", "170.000"))[0].ok  # 90 ms over
    assert not rtt_checks(shape, PING.replace("80.143", "70.000"))[0].ok  # never below the delays
    # a fixed-rate reverse direction adds no allowance
    one_way = rtt_checks(shape, PING.replace("80.143", "130.000"), back=LinkShape.parse(delay="40ms"))[0]
    assert not one_way.ok


def test_ping_loss_is_not_judged_where_a_trace_outage_outlasts_pings_wait(tmp_path):
    lossy = PING.replace("50 received", "45 received")
    long_outage = LinkShape.parse(trace=_trace(tmp_path, [5000, 5001]), delay="40ms")
    assert not any(c.quantity == "ping_loss" for c in rtt_checks(long_outage, lossy))
    short = LinkShape.parse(trace=_trace(tmp_path, [1, 2, 3]), delay="40ms")
    assert any(c.quantity == "ping_loss" and not c.ok for c in rtt_checks(short, lossy))
