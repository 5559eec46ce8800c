"""A trace link end to end: the delay line replays traces/outage-2s (2 s at 12.032 Mbit/s,
2 s at 24.064, a 2 s outage, 2 s at 6.016; an 8 s loop), 10 ms one way after each departure.

* UDP, two namespaces (emulation/testline.py): a flood at 31 Mbit/s (1.25 x the trace's
  peak per 100 ms) keeps the link's queue full, so the link delivers exactly what the trace allows: the
  bytes the delay line released per 100 ms window match the trace's capacity series, and
  nothing comes through during the outage.
* TCP, a lab run (client - router - server, MPTCP with one subflow): its subflow's data
  stops for the outage and comes back after it, in the lab's own capture.

Where the releases are seen: a capture on the receiving interface sees a packet before the
delay line (packet taps run before PREROUTING, emulation/nfqueue.py). The UDP test measures as
`mptcplab calibrate --trace` does (tracecheck.py: NFLOG on b's INPUT, one message per
packet, and the tolerance's derivation); the lab captures one hop further, on the server
behind the router (the lab's capture filter keeps TCP and ICMP only, hence two set-ups).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mptcplab import tracecheck
from mptcplab.emulation.trace import trace_for

from .labkit import LINE_TOPOLOGY, assert_status, by_name, run_quick, write_lab

pytestmark = pytest.mark.netns

TRACE = "outage-2s"
DELAY_S = 0.010
#: the outage in trace time (ms): no opportunity after 4000 until 6002
OUTAGE_MS = (4000, 6002)
#: the UDP flood's length: 11 s of an 8 s loop hold its whole outage (and ~100 saturated windows)
FLOOD_S = 11

TOPOLOGY = LINE_TOPOLOGY

#: the lab's flow: MPTCP with one subflow (one path), client -> server over the trace
TCP = {"client": "client", "server": "server", "server_address": "server:eth1", "mptcp": True,
       "duration": "11s", "cc": "cubic"}


def experiment() -> dict[str, Any]:
    return {
        "nodes": {"client": {"role": "host", "mptcp": {"limits": {"subflows": 1}}},
                  "server": {"role": "host", "mptcp": {"limits": {"subflows": 1}}},
                  "router": {"role": "router"}},
        # egress of client:eth1 = client -> router: the trace, its queue and the delay
        "links": {"client:eth1": {"egress": {"trace": TRACE, "delay": "10ms", "queue": "150KB"}}},
        "traffic": {"flows": {"main": TCP}},
        "capture": [{"point": "server:eth1"}],
        # the link check knows fixed rates only (a ping during the outage would fail it)
        "calibration": {"enabled": False},
        # 11 s: any 10 s of an 8 s loop hold its whole 2 s outage
        "quick": {"duration": "11s", "repetitions": 1},
        "scenarios": [{"name": "main"}],
    }


def _trace_stats(rec: dict[str, Any]) -> dict[str, Any]:
    (st,) = [s["trace"] for s in (rec.get("delay_line_stats") or {}).values() if s and s.get("trace")]
    return st


def _departure_ms(t_capture: float, start_unix_ns: int) -> int:
    return tracecheck.departure_ms(t_capture, start_unix_ns, DELAY_S)


def test_udp_delivery_per_100ms_matches_the_trace(delayline: Path, tmp_path: Path) -> None:
    """Two namespaces (a -> b replays the trace), a UDP flood above its peak, and a capture of
    what the delay line released (tracecheck.measure): every 100 ms window within its bounds
    (bar MAX_BAD_SHARE of them), the total within 1 %, no opportunity lost under the flood,
    and nothing delivered inside the outage."""
    trace = trace_for(TRACE, ".")
    rep = tracecheck.measure(trace, delayline, tmp_path, seconds=FLOOD_S, delay="10ms", queue="150KB")
    print(rep.render())
    st = rep.stage
    assert st["period_ms"] == trace.period_ms and st["lines"] == trace.opportunities and st["drops"] > 0, st
    assert len(rep.windows) >= 80, len(rep.windows)
    assert len(rep.bad) <= tracecheck.MAX_BAD_SHARE * len(rep.windows), rep.bad[:10]
    assert abs(rep.total_error) <= tracecheck.TOTAL_TOLERANCE, (rep.delivered, rep.expected)
    # the flood keeps the queue from running empty: the stage lost no opportunity while it
    # refused packets (the idle time around the flood, iperf3's control connection, is not that)
    assert rep.wasted_in_use == 0, st
    assert st["opportunities_wasted"] > 0, st
    # the outage: nothing left between its edges (LAG_MS of slack at each for late releases)
    lo, hi = OUTAGE_MS
    slack = tracecheck.LAG_MS
    in_outage = [ms for ms in rep.departures_ms if lo + slack < ms % trace.period_ms < hi - slack]
    assert not in_outage, in_outage[:10]
    # and the loop's outage fell inside the flood: the check above had something to find
    assert any(lo - 100 < ms % trace.period_ms <= lo for ms in rep.departures_ms)
    assert any(hi <= ms % trace.period_ms < hi + 100 for ms in rep.departures_ms)


def test_tcp_stops_for_the_outage_and_resumes(tmp_path: Path) -> None:
    lab = write_lab(tmp_path, "tracetcp", TOPOLOGY, experiment())
    rc, summary = run_quick(lab, tmp_path / "results")
    assert_status(rc, summary)
    run_dir = sorted((tmp_path / "results" / "tracetcp").glob("2*/summary.json"))[-1].parent
    rec = by_name(summary)["main"]
    assert rec["mptcp"]["verified"], rec.get("warnings")
    st = _trace_stats(rec)
    period = trace_for(TRACE, ".").period_ms
    pcap = run_dir / "scenarios" / "main" / "rep1" / "capture-server-eth1.pcap"
    # the subflow's data segments (client -> server, with payload) as the server receives them
    deps = [_departure_ms(t, st["start_unix_ns"])
            for t, _ in tracecheck.captured_packets(pcap, "tcp.len > 0 && tcp.dstport == 5201", "tcp.len")]
    assert len(deps) > 500, len(deps)
    lo, hi = OUTAGE_MS
    outages = [k for k in range(min(deps) // period, max(deps) // period + 1)
               if min(deps) < k * period + lo and k * period + hi < max(deps)]
    assert outages, "no whole outage inside the flow"
    for k in outages:
        base = k * period
        assert not [ms for ms in deps if base + lo + 2 < ms < base + hi - 2], f"data during outage {k}"
        assert any(base + lo - 500 < ms <= base + lo for ms in deps), "no data just before the outage"
        # after it TCP waits for its retransmission timer (backed off during the outage): data again
        # within 2 s of the trace's capacity coming back
        assert any(base + hi <= ms < base + hi + 2000 for ms in deps), "no data after the outage"
