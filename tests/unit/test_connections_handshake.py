"""Every connection's SYN -> SYN/ACK time (traffic/connections.py, labs/setup) on hand-made
packets: a handshake is a client ISN on its 4-tuple, not the 4-tuple alone.

The churn client reuses a source port now and then within a run: a second connection on the
same 4-tuple, with a new ISN, must be counted and timed against its own SYN/ACK (before,
it was merged into the first and timed as the first). A retransmitted SYN keeps its ISN: its
wait counts from the first SYN (the ~1 s waits of a lost SYN). A SYN never answered is an
unfinished connection without a time.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from pcapkit import eth, ipv4, tcp, write_pcap

from mptcplab.analysis import CaptureFile, packets
from mptcplab.analysis.flows import ISN, find_subflows, label_isn, orient_tcp
from mptcplab.analysis.table import Table
from mptcplab.traffic.connections import check_connections, handshake_times

FIN, SYN, ACK = 0x01, 0x02, 0x10
CLI, SRV, PORT, POINT = "10.0.0.1", "10.0.0.2", 7000, "srv:eth1"
T0 = 1000.0   # a small epoch: float seconds keep whole nanoseconds here


def handshake(t: float, cport: int, isn: int, answer_ns: int | None, srv_isn: int = 500,
              resend_ns: list[int] | None = None) -> list[tuple[float, str, int, int, int, int]]:
    """(time, direction, cport, seq, ack, flags) of one connect + close: the SYN at ``t``,
    its retransmissions ``resend_ns`` after it, the SYN/ACK ``answer_ns`` after it (None:
    never), then the third ACK and both FINs."""
    rows = [(t, "c", cport, isn, 0, SYN)]
    rows += [(t + d * 1e-9, "c", cport, isn, 0, SYN) for d in resend_ns or []]
    if answer_ns is None:
        return rows
    ta = t + answer_ns * 1e-9
    return rows + [(ta, "s", cport, srv_isn, isn + 1, SYN | ACK),
                   (ta + 20e-6, "c", cport, isn + 1, srv_isn + 1, ACK),
                   (ta + 40e-6, "c", cport, isn + 1, srv_isn + 1, FIN | ACK),
                   (ta + 60e-6, "s", cport, srv_isn + 1, isn + 2, FIN | ACK),
                   (ta + 80e-6, "c", cport, isn + 2, srv_isn + 2, ACK)]


#: port 40000 used twice (ISNs 1000 and 5000: two connections), port 40001's SYN resent
#: after 1 s and answered then, port 40002's SYN never answered
PACKETS = sorted(
    handshake(T0 + 1.0, 40000, 1000, answer_ns=2_000)
    + handshake(T0 + 2.0, 40001, 7, answer_ns=1_000_003_000, resend_ns=[1_000_000_000])
    + handshake(T0 + 3.0, 40000, 5000, answer_ns=7_000, srv_isn=900)
    + handshake(T0 + 4.0, 40002, 2**32 - 1, answer_ns=None))
#: client ISN -> the expected SYN -> SYN/ACK in ns (None: unanswered)
EXPECTED = {1000: 2_000, 7: 1_000_003_000, 5000: 7_000, 2**32 - 1: None}


def table() -> Table:
    rows = [{"t": t, "ip_src": CLI if d == "c" else SRV, "ip_dst": SRV if d == "c" else CLI,
             "sport": cport if d == "c" else PORT, "dport": PORT if d == "c" else cport,
             "seq": seq % 2**32, "ack": ack % 2**32, "flags": flags, "tlen": 0, "point": POINT}
            for t, d, cport, seq, ack, flags in PACKETS]
    return orient_tcp(packets.table(rows), PORT)


def times_ns(t: Table) -> dict[int, float]:
    """Client ISN -> SYN -> SYN/ACK in ns (NaN: unanswered), from handshake_times."""
    h = handshake_times(t, POINT)
    assert len(h) == h["isn"].nunique()
    return {int(i): float(ms) * 1e6 for i, ms in zip(h["isn"], h["ms"], strict=True)}


def test_each_isn_is_one_handshake_timed_against_its_own_synack() -> None:
    h = handshake_times(table(), POINT)
    assert len(h) == len(EXPECTED) == 4   # distinct ISNs, not distinct 4-tuples (3)
    assert set(h.loc[h["cport"] == 40000, "isn"]) == {1000, 5000}
    got = times_ns(table())
    for isn, ns in EXPECTED.items():
        if ns is None:
            assert np.isnan(got[isn])
        else:
            assert abs(got[isn] - ns) < 1, (isn, got[isn])   # float seconds: within a nanosecond


def test_a_late_synack_of_the_old_connection_does_not_answer_the_new_one() -> None:
    """A SYN/ACK acknowledging the first ISN, resent after the port's reuse, is not the
    second connection's answer: it acknowledges another ISN."""
    t = table()
    late = t.take(np.flatnonzero((t.arr("cport") == 40000) & ((t.arr("flags") & (SYN | ACK)) == (SYN | ACK)))[:1])
    late = late.with_columns(t=np.array([T0 + 3.0 + 1e-6]))  # before the second connection's own SYN/ACK (7 us)
    got = times_ns(Table.concat([t, late]))
    assert abs(got[5000] - 7_000) < 1 and abs(got[1000] - 2_000) < 1


def test_a_reused_4tuple_is_two_subflows_with_their_own_packets() -> None:
    t = table()
    t = t.with_columns(**{ISN: label_isn(t)})
    subs = {s.isn: s for s in find_subflows(t, [POINT]) if s.cport == 40000}
    assert set(subs) == {1000, 5000}
    assert all(s.established and s.syn_attempts == 1 and len(s.rows[POINT]) == 6 for s in subs.values())
    assert subs[1000].syn_first_t == T0 + 1.0 and subs[5000].syn_first_t == T0 + 3.0


def test_check_connections_counts_and_times_every_handshake(tmp_path: Path) -> None:
    """End to end through a nanosecond pcap and the native reader: four handshakes on three
    4-tuples, each timed in whole nanoseconds; the unanswered one unfinished, untimed."""
    frames = [(t, eth(ipv4(CLI, SRV, 6, tcp(cport, PORT, seq, ack, flags)) if d == "c"
                      else ipv4(SRV, CLI, 6, tcp(PORT, cport, seq, ack, flags))))
              for t, d, cport, seq, ack, flags in PACKETS]
    cap = CaptureFile(write_pcap(tmp_path / "srv.pcap", frames, nano=True), POINT)
    rep = check_connections([cap], SRV, PORT, "srv")
    assert rep.point == POINT
    # one connection per client ISN: port 40000's reuse is a connection of its own
    assert [c.client for c in rep.connections].count(f"{CLI}:40000") == 2
    assert len(rep.connections) == len(EXPECTED)
    s = rep.summary()
    assert (s["connections_seen"], s["connections_unfinished"], s["syn_synack_n"]) == (3, 1, 3)
    assert sorted(rep.latencies_ms()) == sorted(ns * 1e-6 for ns in EXPECTED.values() if ns is not None)
    assert s["syn_synack_ms_max"] == 1000.003   # the retransmitted SYN: timed from the first
    by_isn = {c.isn: c for c in rep.connections}
    assert set(by_isn) == set(EXPECTED)
    for isn, ns in EXPECTED.items():
        c = by_isn[isn]
        assert c.established is (ns is not None) and not c.mptcp
        assert c.syn_synack_ms == (None if ns is None else ns * 1e-6), (isn, c)
    assert list(rep.frame().columns[:2]) == ["client", "isn"]
