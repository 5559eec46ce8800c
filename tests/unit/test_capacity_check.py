"""calibrate's rate check on links whose queue is shorter than a round trip of data: TCP's
goodput is reported, the rate judged by UDP offered above it (linkcheck.tcp_fills)."""

from __future__ import annotations

import json

import pytest

from mptcplab.emulation.linkmodel import LinkShape
from mptcplab.linkcheck import (
    capacity_check,
    capacity_expected_mbps,
    capacity_offer_bps,
    parse_capacity_mbps,
    rate_reported,
    tcp_fills,
    udp_payload,
)


def test_tcp_fills_a_link_whose_queue_holds_a_round_trip() -> None:
    # the default queue is 50 ms at the rate: a round trip longer than that is not filled
    assert tcp_fills(LinkShape.parse(rate="400mbit", delay="2ms"), 1500)
    assert tcp_fills(LinkShape.parse(rate="1gbit", delay="1ms"), 1500)
    assert not tcp_fills(LinkShape.parse(rate="400mbit", delay="100ms"), 1500)
    assert not tcp_fills(LinkShape.parse(rate="400mbit", delay="200ms"), 1500)
    # a queue of one round trip (400 ms at the rate) is enough again
    assert tcp_fills(LinkShape.parse(rate="400mbit", delay="200ms", queue="400ms"), 1500)
    assert tcp_fills(LinkShape.parse(delay="200ms"), 1500)            # no rate: nothing to fill


def test_capacity_is_the_rate_in_payload_of_full_datagrams() -> None:
    shape = LinkShape.parse(rate="400mbit", delay="200ms")
    assert udp_payload(1500) == 1472
    # 1472 bytes of payload travel in 1472 + 8 + 20 + 14 wire bytes
    assert capacity_expected_mbps(shape, 1500) == pytest.approx(400 * 1472 / 1514)
    assert capacity_offer_bps(shape, 1500) == int(400e6 * 1472 / 1514 * 1.05)
    assert capacity_expected_mbps(shape, 9000) == pytest.approx(400 * 8972 / 9014)


def test_capacity_check_fails_below_and_above_the_rate() -> None:
    shape = LinkShape.parse(rate="400mbit", delay="200ms")
    exp = capacity_expected_mbps(shape, 1500)
    assert capacity_check(shape, 1500, exp * 0.99).ok
    assert not capacity_check(shape, 1500, exp * 0.95).ok           # the link carries less
    assert not capacity_check(shape, 1500, exp * 1.05).ok           # the link does not limit
    assert not capacity_check(shape, 1500, None).ok
    lossy = LinkShape.parse(rate="400mbit", delay="200ms", loss="2%")
    assert capacity_check(lossy, 1500, exp * 0.96).ok               # loss lowers the floor


def test_tcp_goodput_of_such_a_link_is_reported_not_judged() -> None:
    c = rate_reported(LinkShape.parse(rate="400mbit", delay="200ms"), 206.9, "a:eth1->b:eth1")
    assert c.ok and c.quantity == "goodput_mbps" and c.tolerance.startswith("reported")


def _server(rates_mbps: list[float], omitted: int = 1) -> dict:
    ivs = [{"sum": {"bits_per_second": r * 1e6, "omitted": i < omitted}} for i, r in enumerate(rates_mbps)]
    return {"server_output_json": {"intervals": ivs}}


def test_capacity_is_the_receivers_median_second() -> None:
    # omitted seconds, the first measured one (the queue filling) and the last (the test's end
    # waits behind the full queue) do not count
    assert parse_capacity_mbps(_server([50, 200, 388, 389, 390, 120])) == 389
    assert parse_capacity_mbps(_server([50, 388, 100], omitted=0)) == 388
    assert parse_capacity_mbps({"server_output_text": "..."}) is None   # server not in JSON mode
    assert parse_capacity_mbps(_server([388, 389])) is None               # nothing left to judge


def test_the_runs_rate_check_is_udp_where_tcp_cannot_fill() -> None:
    from mptcplab.linkcheck import judge_rate, rate_check_cmds

    long = LinkShape.parse(rate="100mbit", delay="200ms")
    rc = rate_check_cmds("r", "c", "10.0.2.2", "10.0.2.1", 2.0, shape=long)
    assert rc.udp
    # the server reports its own intervals (-i is not passed on by the client), in JSON
    assert list(rc.server.argv[-3:]) == ["-i", "0.4", "-J"]
    argv = rc.client.argv
    assert argv[argv.index("-b") + 1] == str(capacity_offer_bps(long, 1500)) and "--get-server-output" in argv
    def out(*mbps: float) -> str:
        return json.dumps(_server(list(mbps), omitted=0))

    assert judge_rate(rc, long, 1500, out(50, 97.2, 97.3, 97.1, 40)).ok
    assert judge_rate(rc, long, 1500, out(50, 90.2, 90.3, 90.1, 40)).ok is False
    assert judge_rate(rc, long, 1500, "").ok is False                      # it never ran
    # a short link keeps one TCP flow; a slow long one gets its slow start omitted
    short = rate_check_cmds("r", "c", "10.0.1.2", "10.0.1.1", 2.0, shape=LinkShape.parse(rate="100mbit", delay="2ms"))
    assert not short.udp and short.client.argv[short.client.argv.index("-O") + 1] == "1"
    slow_link = LinkShape.parse(rate="1mbit", delay="200ms", queue="1s")       # its queue holds a round trip
    slow = rate_check_cmds("r", "c", "10.0.1.2", "10.0.1.1", 2.0, shape=slow_link)
    assert not slow.udp and slow.client.argv[slow.client.argv.index("-O") + 1] == "3"
