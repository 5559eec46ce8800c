"""A trace link end to end: the delay line replays traces/outage-2s (2 s at 12.032 Mbit/s,
2 s at 24.064, a 2 s outage, 2 s at 6.016; an 8 s loop), 10 ms one way after each departure.

* UDP, two namespaces (emulation/testline.py): a flood at 30 Mbit/s, more than the trace's
  peak, keeps the link's queue full, so the link delivers exactly what the trace allows: the
  bytes the delay line released per 100 ms window match the trace's capacity series, and
  nothing comes through during the outage.
* TCP, a lab run (client - router - server, MPTCP with one subflow): its subflow's data
  stops for the outage and comes back after it, in the lab's own capture.

Where the releases are seen: a capture on the receiving interface sees a packet before the
delay line (packet taps run before PREROUTING, emulation/nfqueue.py). The UDP test logs the
packets on b's INPUT hook instead (NFLOG); the lab captures one hop further, on the server
behind the router (the lab's capture filter keeps TCP and ICMP only, hence two set-ups).
"""

from __future__ import annotations

import math
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from mptcplab.emulation.linkmodel import LinkShape
from mptcplab.emulation.nfqueue import NfqueueEmulator
from mptcplab.emulation.testline import TwoNodeLine
from mptcplab.emulation.trace import OPPORTUNITY_BYTES, PACKET_OVERHEAD, trace_for
from mptcplab.supervise import Supervisor

from .labkit import assert_status, by_name, run_quick, write_lab

pytestmark = pytest.mark.netns

TRACE = "outage-2s"
DELAY_S = 0.010
#: the outage in trace time (ms): no opportunity after 4000 until 6002
OUTAGE_MS = (4000, 6002)
WINDOW_MS = 100
#: how many opportunities a window may be off: a packet is put in the window of the
#: opportunity it left at, computed back from its capture time (minus the delay, rounded
#: down to the trace's whole ms, 50 us of slack for the start-time reading). That is exact
#: while release lateness plus forwarding stays under 0.95 ms; a packet later than that
#: and within its lag of a window's end counts in the next window. With at most 2
#: opportunities per ms in this trace and lags of up to ~1 ms more (the delay line's
#: lateness allowance is 0.5 ms p99, its release slot 0.2 ms), at most 2 opportunities
#: leave a window at its end and 2 enter it from the one before: +-2 opportunities.
TOLERANCE_OPP = 2
#: and the capture's own lag: libpcap's nflog reader stamps a packet when tcpdump reads it,
#: not when the delay line released it; on this 2-core host the stamps came up to ~8 ms
#: late, in bursts (measured: windows alternately ~8 opportunities over and under at 1 per
#: ms, the total within 0.15 %). So a window may also be off by the opportunities its trace
#: offers in LAG_MS (at 2 per ms: 20); the total and the outage below are not affected
LAG_MS = 10
#: windows a loaded 2-core host may spoil (a stall of several ms moves more than 2)
MAX_BAD_SHARE = 0.05
NFLOG_GROUP = 37

TOPOLOGY = {
    "nodes": {"client": {"kind": "linux", "image": "mptcplab/host:latest"},
              "router": {"kind": "linux", "image": "mptcplab/router:latest"},
              "server": {"kind": "linux", "image": "mptcplab/host:latest"}},
    "links": [{"endpoints": ["client:eth1", "router:eth1"], "mtu": 1500},
              {"endpoints": ["router:eth2", "server:eth1"], "mtu": 1500}],
}

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


def _packets(pcap: Path, display_filter: str, length_field: str) -> list[tuple[float, int]]:
    """(capture time, length) of the packets the filter keeps, by tshark."""
    out = subprocess.run(["tshark", "-r", str(pcap), "-Y", display_filter, "-T", "fields",
                          "-e", "frame.time_epoch", "-e", length_field],
                         capture_output=True, text=True, check=True).stdout
    return [(float(t), int(n)) for t, n in (ln.split("\t") for ln in out.splitlines() if ln.strip())]


def _departure_ms(t_capture: float, start_unix_ns: int) -> int:
    """The trace time (ms, counting loops) of the opportunity a captured packet left at."""
    return math.floor((t_capture - start_unix_ns / 1e9 - DELAY_S) * 1000 - 0.05)


def _window(ms: int) -> int:
    return math.ceil(ms / WINDOW_MS) - 1  # windows are (a, b], as the trace's capacity series




@pytest.mark.xfail(strict=True, reason=(
    "known defect (issue 37): the total replays within 0.1 % but windows are off beyond the "
    "capture's lag: ~9 opportunities inside the outage and ~14 of 50 short per window in the 6 "
    "Mbit/s phase, with ~10 % of opportunities wasted under a saturating flood; to be found in "
    "the trace stage or this measurement before trace links are used for findings"))
def test_udp_delivery_per_100ms_matches_the_trace(delayline: Path, tmp_path: Path) -> None:
    """Two namespaces (a -> b replays the trace), a UDP flood, and a capture of what the
    delay line released: NFLOG on b's INPUT (after PREROUTING, where the delay line holds
    packets), read by tcpdump in immediate mode, whose timestamps are its read times
    (libpcap's nflog reader stamps packets with gettimeofday)."""
    trace = trace_for(TRACE, ".")
    shape = LinkShape.parse(delay="10ms", trace=trace, queue="150KB")
    pcap = tmp_path / "released.pcap"
    with TwoNodeLine(mtu=1500) as line:
        sup = Supervisor(line.host_argv, tmp_path / "logs")
        try:
            line.apply(NfqueueEmulator(binary=delayline), shape, LinkShape(), tmp_path, sup)
            line.sh("b", "iptables", "-w", "-A", "INPUT", "-p", "udp", "--dport", "5201", "-j", "NFLOG",
                    "--nflog-group", str(NFLOG_GROUP), "--nflog-size", "64")
            cap = line.popen("b", "tcpdump", "-i", f"nflog:{NFLOG_GROUP}", "-n", "--immediate-mode", "-w", str(pcap))
            time.sleep(1.0)  # tcpdump bound before the first datagram
            result = line.iperf3("a", seconds=11, omit=0,
                                 extra=["-u", "-b", "30M", "-l", "1472"])  # 1500-byte IP packets
            time.sleep(0.5)
            cap.send_signal(signal.SIGINT)
            cap.communicate(timeout=10)
            sup.check()
            stats = sup.stop_all()
        finally:
            sup.close()
    assert "error" not in result, result.get("error")
    st = stats["delayline b:eth0<-a:eth0"]["trace"]  # type: ignore[index]
    assert st["period_ms"] == trace.period_ms and st["lines"] == trace.opportunities and st["drops"] > 0, st
    pkts = _packets(pcap, "udp.dstport == 5201", "ip.len")
    assert len(pkts) > 1000, len(pkts)
    measured: dict[int, int] = {}
    deps = []
    for t, ip_len in pkts:
        ms = _departure_ms(t, st["start_unix_ns"])
        deps.append(ms)
        measured[_window(ms)] = measured.get(_window(ms), 0) + ip_len + PACKET_OVERHEAD
    # saturated windows only: from 0.5 s after the first datagram (the queue fills) to 0.3 s
    # before the last (iperf3 stops sending; what is queued drains)
    first, last = _window(min(deps)) + 5, _window(max(deps)) - 3
    assert last - first >= 80, (first, last)
    errors, bad = [], []
    total_m = total_e = 0
    for w in range(first, last + 1):
        expected = (trace.delivered_by((w + 1) * WINDOW_MS * 1000) - trace.delivered_by(w * WINDOW_MS * 1000)) \
            * OPPORTUNITY_BYTES
        got = measured.get(w, 0)
        total_m, total_e = total_m + got, total_e + expected
        errors.append(abs(got - expected))
        allowed = TOLERANCE_OPP * OPPORTUNITY_BYTES + expected * LAG_MS / WINDOW_MS
        if abs(got - expected) > allowed:
            bad.append((w * WINDOW_MS % trace.period_ms, expected, got))
    n = last - first + 1
    mean_err_opp = sum(errors) / n / OPPORTUNITY_BYTES
    print(f"trace replay (UDP): {n} windows of {WINDOW_MS} ms, mean |error| {mean_err_opp:.3f} opportunities, "
          f"max {max(errors) / OPPORTUNITY_BYTES:.0f}, {len(bad)} beyond +-({TOLERANCE_OPP} + {LAG_MS} ms), "
          f"total {total_m} vs {total_e} bytes ({(total_m - total_e) / total_e:+.4%}); stage: {st}")
    assert len(bad) <= MAX_BAD_SHARE * n, bad[:10]
    assert abs(total_m - total_e) <= 0.01 * total_e, (total_m, total_e)
    # the outage: nothing left between its edges (2 ms of slack at each for late releases)
    lo, hi = OUTAGE_MS
    in_outage = [ms for ms in deps if lo + 2 < ms % trace.period_ms < hi - 2]
    assert not in_outage, in_outage[:10]
    # and the loop's outage fell inside the flood: the check above had something to find
    assert any(lo - 100 < ms % trace.period_ms <= lo for ms in deps)
    assert any(hi <= ms % trace.period_ms < hi + 100 for ms in deps)


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
            for t, _ in _packets(pcap, "tcp.len > 0 && tcp.dstport == 5201", "tcp.len")]
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
