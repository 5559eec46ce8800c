"""Capture analysis logic on small hand-made packet tables (no capture file needed).

These pin down the rules that real captures exercise only by chance: sequence-number
wrap-around, retransmission counting, join-to-connection matching by token when two MPTCP
connections share the server port, de-duplication across points, the outer/inner split of
ICMP rows.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mptcplab.analysis import FlowSpec, analyze_packets, packets
from mptcplab.analysis.flows import Subflow, tokens_of_key
from mptcplab.analysis.stats import unwrap32
from mptcplab.analysis.table import Table
from mptcplab.analysis.tshark import FIELDS, _finish, _parse

SYN, ACK, RST, PSH = 0x02, 0x10, 0x04, 0x08
SRV = "10.0.3.2"
SPEC = FlowSpec(SRV, 5201, {"10.0.1.2": "A", "10.0.2.2": "B"}, ("A", "B"), True, "upload")


def pkt(t: float, src: str, sport: int, dst: str, dport: int, flags: int, tlen: int = 0,
        seq: int = 0, ack: int = 0, mp: str = "", sendkey: str = "", recvkey: str = "",
        recvtok: str = "", point: str = "p", ttl: int = 64) -> dict:
    """One packet; ``mp`` as tshark lists subtypes ("2,3"), keys and token as decimal text."""
    return {"t": t, "ip_src": src, "ip_dst": dst, "ip_len": 52 + tlen, "ip_ttl": ttl,
            "sport": sport, "dport": dport, "tlen": tlen, "seq": seq % 2**32, "ack": ack % 2**32,
            "flags": flags, "mp": sum(1 << int(x) for x in mp.split(",") if x),
            "sendkey": sendkey, "recvkey": recvkey, "recvtok": recvtok, "point": point}


def table(rows: list[dict]) -> Table:
    return packets.table(rows)


def mpc_connection(t0: float, cport: int, client_key: int, server_key: int, isn: int,
                   segs: list[tuple[int, int]], point: str = "p", cip: str = "10.0.1.2") -> list[dict]:
    """An MP_CAPABLE handshake then data segments (offset from isn+1, length), each acked."""
    rows = [
        pkt(t0, cip, cport, SRV, 5201, SYN, seq=isn, mp="0", point=point),
        pkt(t0 + 0.001, SRV, 5201, cip, cport, SYN | ACK, seq=7, ack=isn + 1, mp="0",
            sendkey=str(server_key), point=point),
        pkt(t0 + 0.002, cip, cport, SRV, 5201, ACK, seq=isn + 1, ack=8, mp="0",
            sendkey=str(client_key), recvkey=str(server_key), point=point),
    ]
    t = t0 + 0.01
    for off, ln in segs:
        rows.append(pkt(t, cip, cport, SRV, 5201, ACK, tlen=ln, seq=isn + 1 + off, ack=8, mp="2",
                        point=point))
        rows.append(pkt(t + 0.0005, SRV, 5201, cip, cport, ACK, seq=8, ack=isn + 1 + off + ln,
                        mp="2", point=point))
        t += 0.01
    return rows


def join_data(t0: float, cport: int, n: int, ln: int, dt: float, cip: str = "10.0.2.2",
              seq: int = 10) -> list[dict]:
    """Data segments on an established join (after the handshake rows below), each acked."""
    rows = []
    for i in range(n):
        t = t0 + i * dt
        rows.append(pkt(t, cip, cport, SRV, 5201, ACK, tlen=ln, seq=seq + i * ln, ack=4, mp="2"))
        rows.append(pkt(t + 0.0005, SRV, 5201, cip, cport, ACK, seq=4, ack=seq + (i + 1) * ln, mp="2"))
    return rows


def join_handshake(t: float, cport: int, key: int, cip: str = "10.0.2.2") -> list[dict]:
    tok = str(tokens_of_key(key)[0])
    return [
        pkt(t, cip, cport, SRV, 5201, SYN, seq=9, mp="1", recvtok=tok),
        pkt(t + 0.001, SRV, 5201, cip, cport, SYN | ACK, seq=3, ack=10, mp="1"),
        pkt(t + 0.002, cip, cport, SRV, 5201, ACK, seq=10, ack=4, mp="1"),
        pkt(t + 0.003, SRV, 5201, cip, cport, ACK, seq=4, ack=10, mp="2"),
    ]


def test_unwrap32_across_the_wrap():
    seq = np.array([2**32 - 100, 2**32 - 50, 10, 60, 2**32 - 50], dtype=float)
    assert list(unwrap32(seq, 2**32 - 100)) == [0, 50, 110, 160, 50]


def test_token_is_sha256_of_the_key():
    # pair observed in a real MPTCP v1 handshake (server key in the SYN/ACK, token in the join)
    assert tokens_of_key(1414879929542010403)[0] == 3868282564


def tshark_rows(rows: list[dict[str, str]]) -> bytes:
    """tshark's tab-separated output for rows of {raw column: text}."""
    names = [c for _, c in FIELDS]
    return "".join("\t".join(r.get(n, "") for n in names) + "\n" for r in rows).encode()


def test_tshark_mp_subtypes_become_a_bit_mask():
    raw = tshark_rows([{"frame": str(i + 1), "t": "1.0", "mp": m} for i, m in enumerate(["", "0", "2,3", "1"])])
    assert list(pd.DataFrame(_finish(_parse(raw), "p"))["mp"]) == [0, 1, 0b1100, 0b10]


def test_icmp_row_outer_and_inner_header_are_split():
    vals = {"frame": "2", "t": "100.5", "ip_src": "10.0.2.1,10.0.2.2", "ip_dst": "10.0.2.2,10.0.3.2",
                 "ip_len": "576,9000", "ip_ttl": "64,63", "sport": "40000", "dport": "5201",
                 "flags": "0x010", "mp": "2", "icmp_type": "3", "icmp_code": "4", "icmp_mtu": "1500"}
    tcp = {"frame": "1", "t": "100.4", "ip_src": "10.0.2.2", "ip_dst": "10.0.3.2", "ip_len": "9000",
                "ip_ttl": "64", "sport": "40000", "dport": "5201", "tlen": "8948", "seq": "1",
                "ack": "1", "flags": "0x018", "mp": "2"}
    df = pd.DataFrame(_finish(_parse(tshark_rows([tcp, vals])), "client:eth2"))
    assert list(df["ip_src"]) == ["10.0.2.2", "10.0.2.1"]
    assert list(df["q_src"]) == ["", "10.0.2.2"] and list(df["q_dst"]) == ["", "10.0.3.2"]
    assert df["ip_len"].tolist() == [9000, 576] and df["q_len"].iloc[1] == 9000
    assert df["flags"].tolist() == [0x18, 0x10]
    assert df["icmp_mtu"].iloc[1] == 1500 and np.isnan(df["icmp_type"].iloc[0])
    assert (df["point"] == "client:eth2").all()


def test_join_is_matched_to_its_connection_by_token():
    """Two MPTCP connections on the same server port (iperf3 control + data): the join
    belongs to the connection whose server key hashes to the join's token."""
    ctl_key, data_key = 1111, 2222
    rows = mpc_connection(0.0, 40000, 5, ctl_key, isn=1000, segs=[(0, 100)])
    rows += mpc_connection(0.1, 40002, 6, data_key, isn=5000, segs=[(i * 1000, 1000) for i in range(50)])
    # a join to the *control* connection that carries nothing, and one to the data connection
    for cport, key in ((41000, ctl_key), (41002, data_key)):
        tok = str(tokens_of_key(key)[0])
        rows += [
            pkt(0.2, "10.0.2.2", cport, SRV, 5201, SYN, seq=9, mp="1", recvtok=tok),
            pkt(0.201, SRV, 5201, "10.0.2.2", cport, SYN | ACK, seq=3, ack=10, mp="1"),
            pkt(0.202, "10.0.2.2", cport, SRV, 5201, ACK, seq=10, ack=4, mp="1"),
            pkt(0.203, SRV, 5201, "10.0.2.2", cport, ACK, seq=4, ack=10, mp="2"),
        ]
    rows += join_data(0.3, 41002, n=20, ln=1448, dt=0.01)
    r = analyze_packets(table(rows), ["p"], SPEC)
    assert r.connections == 2 and r.mptcp_negotiated and r.verified
    assert [(s.path, s.sport, s.bytes) for s in r.subflows] == [("A", 40002, 50_000), ("B", 41002, 28_960)]
    assert sum(s.share for s in r.subflows) == pytest.approx(1.0)
    # the time origin is the data connection's SYN
    assert r.t0_epoch == 0.1


def test_retransmissions_counted_across_a_sequence_wrap():
    isn = 2**32 - 2500
    segs = [(0, 1000), (1000, 1000), (2000, 1000), (1000, 1000), (3000, 1000), (3500, 500)]
    rows = mpc_connection(0.0, 40002, 6, 2222, isn=isn, segs=segs)
    r = analyze_packets(table(rows), ["p"], FlowSpec(SRV, 5201, {"10.0.1.2": "A"}, ("A",), True))
    s = r.subflows[0]
    assert s.segments == 6 and s.bytes == 5500
    assert s.retransmissions == 2 and s.retrans_bytes == 1500   # the resent 1000 and the overlap
    assert s.acked_bytes == 4000
    assert s.median_seg == 1000 and s.max_seg == 1000


def test_same_packets_at_two_points_counted_once():
    segs = [(i * 1000, 1000) for i in range(20)]
    near = mpc_connection(0.0, 40002, 6, 2222, isn=1, segs=segs, point="client:eth1")
    # the router sees the same packets a little later, with a lower TTL, and misses one
    far = [dict(p, t=p["t"] + 0.0001, point="ra:eth1", ip_ttl=63) for p in near]
    far = [p for p in far if not (p["tlen"] and p["seq"] == 1 + 5000)]
    spec = FlowSpec(SRV, 5201, {"10.0.1.2": "A"}, ("A",), True)
    r = analyze_packets(table(far + near), ["ra:eth1", "client:eth1"], spec)
    s = r.subflows[0]
    assert s.point == "client:eth1" and s.bytes == 20_000 and s.segments == 20
    # equal counts: the point nearer the sender (higher TTL) wins
    far_all = [dict(p, t=p["t"] + 0.0001, point="ra:eth1", ip_ttl=63) for p in near]
    r2 = analyze_packets(table(far_all + near), ["ra:eth1", "client:eth1"], spec)
    assert r2.subflows[0].point == "client:eth1" and r2.subflows[0].bytes == 20_000


def test_no_connection_at_all():
    r = analyze_packets(table([pkt(0.0, "10.0.1.2", 40000, SRV, 22, SYN)]), ["p"], SPEC)
    assert not r.verified and r.subflows == [] and r.fallback
    assert r.diagnostics == ["no TCP connection to port 5201 in the captures (p)"]
    assert list(r.timeseries.to_pandas().columns) == ["t", "path", "subflow", "bytes", "mbps", "packets"]


def test_numeric_field_with_two_occurrences_keeps_the_first():
    """An encapsulated packet (e.g. IP-in-IP) repeats numeric fields; the parse must not fail."""
    row = {"frame": "1", "t": "1.5", "ip_src": "10.0.0.1,10.0.1.2", "ip_dst": "10.0.0.2,10.0.3.2",
           "ip_len": "120,100", "ip_ttl": "64,64", "sport": "40000,40000", "dport": "5201,5201",
           "tlen": "48,48", "flags": "0x018"}
    df = pd.DataFrame(_finish(_parse(tshark_rows([row])), "p"))
    assert df["sport"].iloc[0] == 40000 and df["tlen"].iloc[0] == 48 and df["t"].iloc[0] == 1.5


def test_unanswered_tcp_syn_gives_one_line():
    rows = [pkt(t, "10.0.1.2", 40000, SRV, 5201, SYN, seq=1) for t in (0.0, 1.0, 3.0)]
    spec = FlowSpec(SRV, 5201, {"10.0.1.2": "A"}, ("A",), False)
    r = analyze_packets(table(rows), ["p"], spec)
    assert not r.verified and r.subflows[0].syn_attempts == 3 and not r.subflows[0].established
    assert r.diagnostics == ["path A: SYN from 10.0.1.2 sent 3 times, never answered"]


# --- "carried data" means "contributed to the transfer" (contribution.py) ----------------

KEY = 2222


def two_paths(b_segs: int, b_len: int, b_dt: float, a_segs: int = 400, a_len: int = 1448,
              a_dt: float = 0.005, b_start: float = 0.05) -> list[dict]:
    """Path A: an MP_CAPABLE connection carrying a_segs segments over a_segs*a_dt seconds;
    path B: a join carrying b_segs segments of b_len bytes b_dt apart from b_start."""
    rows = mpc_connection(0.0, 40002, 6, KEY, isn=5000,
                          segs=[(i * a_len, a_len) for i in range(a_segs)])
    # mpc_connection spaces segments 10 ms apart; respace them
    for i, r in enumerate(x for x in rows if x["t"] >= 0.01):
        r["t"] = 0.01 + (i // 2) * a_dt + (i % 2) * 0.0005
    rows += join_handshake(b_start - 0.01, 41002, KEY)
    if b_segs:
        rows += join_data(b_start, 41002, n=b_segs, ln=b_len, dt=b_dt)
    return rows


def codes(r) -> list[str]:
    return [f.code for f in r.findings]


def test_blackhole_probing_case_is_not_verified():
    """The observed failure: path B's join delivered one 1,024-byte segment, path A the rest.
    The old rule (any acknowledged byte) called that verified."""
    r = analyze_packets(table(two_paths(b_segs=1, b_len=1024, b_dt=0.01)), ["p"], SPEC)
    b = r.subflows_on("B")[0]
    assert b.established and b.carried_data and b.acked_bytes == 1024
    assert not b.contributed and not r.verified
    assert codes(r) == ["weak-subflow"]
    f = r.findings[0]
    assert f.path == "B" and f.evidence["acked_bytes"] == 1024
    assert f.evidence["share"] == pytest.approx(1024 / (1024 + 400 * 1448))
    assert f.evidence["first_data_t"] is not None and f.evidence["last_ack_advance_t"] is not None
    assert "1024 bytes acknowledged" in f.message and "floor of 10 full segments" in f.message


def test_slow_path_with_one_percent_share_counts_by_configured_rates():
    """4 Mbit/s beside 400 Mbit/s: B is expected to carry ~1% and carries ~1%: verified."""
    rows = two_paths(b_segs=12, b_len=1448, b_dt=0.15, a_segs=1200, a_dt=0.0015)
    spec = FlowSpec(SRV, 5201, SPEC.paths, ("A", "B"), True, "upload",
                    path_rates_bps={"A": 400e6, "B": 4e6})
    r = analyze_packets(table(rows), ["p"], spec)
    b = r.subflows_on("B")[0]
    assert b.share == pytest.approx(12 / 1212)
    assert b.expected_share == pytest.approx(4 / 404)
    assert b.contributed and r.verified and r.findings == []


def test_volume_floor_holds_even_for_a_slow_path():
    spec = FlowSpec(SRV, 5201, SPEC.paths, ("A", "B"), True, "upload",
                    path_rates_bps={"A": 400e6, "B": 4e6})
    r = analyze_packets(table(two_paths(b_segs=3, b_len=1448, b_dt=0.5)), ["p"], spec)
    assert not r.verified and codes(r) == ["weak-subflow"]


def test_share_rule_flags_a_starved_path_with_known_rates():
    """Equal rates: B expected ~50%; 15 segments out of ~400 is below a tenth of that."""
    spec = FlowSpec(SRV, 5201, SPEC.paths, ("A", "B"), True, "upload",
                    path_rates_bps={"A": 20e6, "B": 20e6})
    r = analyze_packets(table(two_paths(b_segs=15, b_len=1448, b_dt=0.13)), ["p"], spec)
    b = r.subflows_on("B")[0]
    assert b.expected_share == pytest.approx(0.5) and not b.contributed and not r.verified
    assert "expected share 0.500" in r.findings[0].message


def test_a_path_retired_by_the_lab_is_judged_over_its_time_in_use():
    """The same starved path B, taken out of use by the lab at t = 2.5 s (epoch seconds on
    the capture's clock: here the table's own): its 15 segments before that count."""
    spec = FlowSpec(SRV, 5201, SPEC.paths, ("A", "B"), True, "upload",
                    path_rates_bps={"A": 20e6, "B": 20e6}, retired_paths={"B": 2.5},
                    retired_why={"B": "link client:eth2 down (timeline)"})
    r = analyze_packets(table(two_paths(b_segs=15, b_len=1448, b_dt=0.13)), ["p"], spec)
    b = r.subflows_on("B")[0]
    assert b.retired_t is not None and b.retired_by == "link client:eth2 down (timeline)"
    assert b.contributed and r.verified and r.findings == []
    few = analyze_packets(table(two_paths(b_segs=3, b_len=1448, b_dt=0.13)), ["p"], spec)
    assert not few.verified and "before it was retired at t=" in few.findings[0].message


def test_without_rates_a_slow_path_delivering_all_along_counts():
    """No rates configured: 15 segments spread over the whole 2 s transfer: verified."""
    r = analyze_packets(table(two_paths(b_segs=15, b_len=1448, b_dt=0.13)), ["p"], SPEC)
    assert r.subflows_on("B")[0].contributed and r.verified


def test_without_rates_a_burst_then_stall_does_not_count():
    """No rates: 15 segments in the first 0.15 s of a 2 s transfer, then nothing acked."""
    r = analyze_packets(table(two_paths(b_segs=15, b_len=1448, b_dt=0.01)), ["p"], SPEC)
    b = r.subflows_on("B")[0]
    assert b.carried_data and not b.contributed and not r.verified
    assert codes(r) == ["weak-subflow"] and "advanced over less than 0.2" in r.findings[0].message


def test_backup_path_needs_only_to_be_established():
    spec = FlowSpec(SRV, 5201, SPEC.paths, ("A", "B"), True, "upload", backup_paths=("B",))
    r = analyze_packets(table(two_paths(b_segs=0, b_len=0, b_dt=0.0)), ["p"], spec)
    b = r.subflows_on("B")[0]
    assert b.established and b.bytes == 0 and r.verified
    # the same run without the backup flag is not multipath
    r2 = analyze_packets(table(two_paths(b_segs=0, b_len=0, b_dt=0.0)), ["p"], SPEC)
    assert not r2.verified and codes(r2) == ["no-data"]


def test_a_client_rst_answering_the_synack_does_not_establish():
    """A client that gave up (wrk at its duration's end) answers a late SYN/ACK with RST:
    that connection never completed its handshake, so it is unfinished, not a fallback."""
    from mptcplab.analysis.flows import find_subflows, orient_tcp

    rows = [pkt(0.0, "10.0.1.2", 42518, SRV, 5201, SYN, seq=1, mp="0"),
            pkt(0.001, SRV, 5201, "10.0.1.2", 42518, SYN | ACK, seq=7, ack=2, mp="0", sendkey="5"),
            pkt(0.002, "10.0.1.2", 42518, SRV, 5201, RST, seq=2)]
    (sf,) = find_subflows(orient_tcp(table(rows), 5201), ["p"])
    assert sf.kind == "mp_capable" and sf.synack_mp
    assert not sf.established and not sf.third_ack_mpc
    # the same handshake completed by a plain ACK (no MP_CAPABLE) is established, and not MPTCP
    rows[2] = pkt(0.002, "10.0.1.2", 42518, SRV, 5201, ACK, seq=2, ack=8)
    (sf,) = find_subflows(orient_tcp(table(rows), 5201), ["p"])
    assert sf.established and not sf.third_ack_mpc


def _sf(port: int, fail: float | None, rst: float | None) -> Subflow:
    sf = Subflow(cip="10.0.1.2", cport=port, sip="10.0.9.2", sport=5201)
    sf.mp_fail_t, sf.rst_t = fail, rst
    return sf


def test_an_mp_fail_that_reset_its_subflow_while_another_went_on_is_not_a_fallback() -> None:
    from mptcplab.analysis.analyze import mp_fail_reset_subflow

    a, b = _sf(1, fail=101.0, rst=101.01), _sf(2, fail=None, rst=None)
    numbers = {a.key: {"last_data_t": 1.0}, b.key: {"last_data_t": 2.0}}
    assert mp_fail_reset_subflow([a, b], numbers, fail_rel_t=1.0)
    # the other subflow stopped before the MP_FAIL: the connection was left on one subflow
    numbers[b.key]["last_data_t"] = 0.5
    assert not mp_fail_reset_subflow([a, b], numbers, fail_rel_t=1.0)
    # the failing subflow was not reset: an infinite mapping (fallback) on it
    a.rst_t = None
    numbers[b.key]["last_data_t"] = 2.0
    assert not mp_fail_reset_subflow([a, b], numbers, fail_rel_t=1.0)
    # one subflow only: RFC 8684's fallback
    a.rst_t = 101.01
    assert not mp_fail_reset_subflow([a], {a.key: {"last_data_t": 1.0}}, fail_rel_t=1.0)


def test_dss_removed_between_the_ends_is_a_fallback_at_the_receiver():
    """NSDI 2012 row d with one subflow: the sender's capture shows DSS on every data segment,
    the receiver's shows the last ones without it (a middlebox removed the option mid-way).
    The receiver takes that for a fallback and the sender does not: not MPTCP end to end."""
    segs = [(i * 1000, 1000) for i in range(40)]
    near = mpc_connection(0.0, 40002, 6, 2222, isn=1, segs=segs, point="client:eth1")
    far = [dict(p, t=p["t"] + 0.0001, point="server:eth1", ip_ttl=63) for p in near]
    for p in far:
        if p["tlen"] and p["seq"] >= 1 + 20_000:
            p["mp"] = 0                                     # stripped on the way
    spec = FlowSpec(SRV, 5201, {"10.0.1.2": "A"}, ("A",), True)
    r = analyze_packets(table(near + far), ["client:eth1", "server:eth1"], spec)
    assert r.subflows[0].point == "client:eth1" and r.mptcp_negotiated
    assert r.fallback and not r.verified
    removed = [f for f in r.findings if f.code == "mptcp-option-removed"]
    assert len(removed) == 1 and removed[0].path == "A"
    assert removed[0].evidence["without"] == ["server:eth1"]
    assert removed[0].evidence["without_dss"] == {"server:eth1": 20}
    assert "mptcp-fallback" in codes(r)
    # the same connection with the option intact at both ends: nothing of the kind
    far_ok = [dict(p, t=p["t"] + 0.0001, point="server:eth1", ip_ttl=63) for p in near]
    ok = analyze_packets(table(near + far_ok), ["client:eth1", "server:eth1"], spec)
    assert not ok.fallback and ok.verified and "mptcp-option-removed" not in codes(ok)


def test_a_remark_keeps_its_code_through_the_analysis_worker() -> None:
    """The analysis runs in a worker process (labrun's ProcessPoolExecutor): its remarks come
    back pickled, and a remark that lost its code would be reported as unclassified."""
    import pickle

    from mptcplab.analysis.model import UNKNOWN_PATH, Remark

    r = pickle.loads(pickle.dumps([Remark("subflow from 10.9.9.9 on no known path", UNKNOWN_PATH)]))[0]
    assert isinstance(r, Remark) and r.code == UNKNOWN_PATH
    assert r == "subflow from 10.9.9.9 on no known path"
