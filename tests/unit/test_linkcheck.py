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
