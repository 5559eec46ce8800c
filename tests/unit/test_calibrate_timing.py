"""The TCP rate check of `mptcplab calibrate` is sized from the link: buffers that
do not limit the window, an omit that covers slow start, and delay-line verdicts."""

from __future__ import annotations

import math

from mptcplab.calibrate import delayline_checks, tcp_buffer_max
from mptcplab.emulation.linkmodel import LinkShape
from mptcplab.linkcheck import tcp_timing


def test_buffers_cover_the_bdp_of_the_papers_links() -> None:
    # 400 Mbit/s x 400 ms RTT = 20 MB in flight: autotuning may grow to 4 x that
    assert tcp_buffer_max(LinkShape.parse(rate="400mbit", delay="200ms")) == 4 * 20_000_000
    assert tcp_buffer_max(LinkShape.parse(rate="10mbit", delay="1ms")) == 6 * 2**20  # the floor


def test_omit_covers_slow_start_and_measurement_spans_round_trips() -> None:
    omit, measure = tcp_timing(LinkShape.parse(rate="400mbit", delay="200ms"), 1500, 5)
    # ~13700 packets in flight: log2(1370) + 4 = 14.4 round trips of 0.4 s
    assert omit == math.ceil((math.log2(20_000_000 / 1460 / 10) + 4) * 0.4) == 6
    assert measure == 5  # 10 round trips = 4 s < the 5 s asked for
    omit, measure = tcp_timing(LinkShape.parse(rate="1gbit", delay="1ms"), 1500, 5)
    assert (omit, measure) == (1, 5)
    _, measure = tcp_timing(LinkShape.parse(rate="100mbit", delay="1s"), 1500, 5)
    assert measure == 20  # at least 10 round trips


def test_delayline_checks() -> None:
    good = {"delay_us": 100_000, "lateness_us": {"p99": 4000}, "enobufs": 0}
    [late] = delayline_checks("delayline b:eth1<-a:eth1", good)
    assert late.ok and late.configured == 5000 and late.quantity == "late_p99_us b"
    checks = delayline_checks("delayline a:eth1<-b:eth1", {**good, "lateness_us": {"p99": 6000}, "enobufs": 2})
    assert [c.ok for c in checks] == [False, False]
    assert "ENOBUFS" in checks[1].tolerance
