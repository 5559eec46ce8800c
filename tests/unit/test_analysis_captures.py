"""Capture analysis against the real captures in tests/data (made by make_captures.py).

Each test asserts a property that fails if the analysis is wrong: what MPTCP negotiated,
which subflows formed and carried data, segment sizes against the path MTU, ICMP counts,
de-duplication across capture points, and the one-line reasons for failed joins.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from mptcplab.analysis import CaptureFile, FlowAnalysis, FlowSpec, analyze_flow, pcapread

DATA = Path(__file__).resolve().parents[1] / "data"
PATHS = {"10.0.1.2": "A", "10.0.2.2": "B"}

pytestmark = pytest.mark.skipif(not pcapread.library_path().is_file(),
                                reason="native capture reader not built (make -C native)")


def spec(mptcp: bool = True, direction: str = "upload") -> FlowSpec:
    return FlowSpec(server_ip="10.0.3.2", server_port=5201, paths=PATHS,
                    expected_paths=("A", "B") if mptcp else ("A",), mptcp=mptcp,
                    direction=direction)  # type: ignore[arg-type]


def caps(scenario: str, points: tuple[str, ...] = ("client:eth1", "client:eth2")) -> list[CaptureFile]:
    return [CaptureFile(DATA / f"{scenario}__{p.replace(':', '_')}.pcap", p) for p in points]


@cache
def run(scenario: str, points: tuple[str, ...] = ("client:eth1", "client:eth2"), mptcp: bool = True,
        direction: str = "upload") -> FlowAnalysis:
    return analyze_flow(caps(scenario, points), spec(mptcp, direction))


def by_path(r: FlowAnalysis, path: str):
    subs = r.subflows_on(path)
    assert len(subs) == 1, f"expected one subflow on {path}: {subs}"
    return subs[0]


# --- MPTCP with PMTUD on path B ---------------------------------------------------------

def test_pmtud_mptcp_negotiated_and_verified():
    r = run("mptcp_pmtud")
    assert r.mptcp_negotiated and not r.fallback and r.verified
    assert r.diagnostics == []
    assert r.connections == 2          # iperf3's control connection and the data connection


def test_pmtud_both_subflows_established_and_carry_data():
    r = run("mptcp_pmtud")
    a, b = by_path(r, "A"), by_path(r, "B")
    assert a.initial and a.kind == "mp_capable" and not b.initial and b.kind == "mp_join"
    for s in (a, b):
        assert s.established and s.carried_data and s.bytes > 1_000_000
        assert s.dst == "10.0.3.2" and s.dport == 5201
        assert s.syn_attempts == 1
    assert a.src == "10.0.1.2" and b.src == "10.0.2.2"


def test_pmtud_segment_sizes_fit_each_path():
    r = run("mptcp_pmtud")
    a, b = by_path(r, "A"), by_path(r, "B")
    # 40 bytes of IP and TCP header: B's data segments fit 1500, A's use the 9000 path
    assert b.median_seg is not None and b.median_seg + 40 <= 1500
    assert a.median_seg is not None and a.median_seg + 40 > 1500
    assert a.max_frame == 9000
    # before PMTUD, B tried 9000-byte packets: that is what provoked the ICMP
    assert b.max_frame == 9000


def test_pmtud_frag_needed_counted_on_b_only():
    r = run("mptcp_pmtud")
    a, b = by_path(r, "A"), by_path(r, "B")
    assert a.icmp_frag_needed == 0 and a.icmp_first_t is None
    assert b.icmp_frag_needed >= 1 and b.icmp_mtus == [1500]
    assert b.icmp_first_t is not None and b.first_data_t is not None
    assert b.icmp_first_t >= b.first_data_t
    ev = r.icmp_events.to_pandas()
    assert len(ev) == b.icmp_frag_needed
    assert set(ev["type"]) == {3} and set(ev["code"]) == {4} and set(ev["mtu"]) == {1500}
    assert set(ev["path"]) == {"B"} and set(ev["quoted_src"]) == {"10.0.2.2"}
    assert set(ev["quoted_sport"]) == {b.sport} and set(ev["src"]) == {"10.0.2.1"}


def test_pmtud_shares_sum_to_one_and_timeseries_adds_up():
    r = run("mptcp_pmtud")
    assert sum(s.share for s in r.subflows) == pytest.approx(1.0)
    ts = r.timeseries.to_pandas()
    assert list(ts.columns[:5]) == ["t", "path", "subflow", "bytes", "mbps"]
    for s in r.subflows:
        mine = ts[ts["subflow"] == s.name]
        assert mine["bytes"].sum() == s.bytes
        assert (mine["path"] == s.path).all()
    # one time origin: every subflow has the same bins, 100 ms apart, starting at 0
    bins = [tuple(ts[ts["subflow"] == s.name]["t"]) for s in r.subflows]
    assert bins[0] == bins[1] and bins[0][0] == 0.0
    assert bins[0][1] == pytest.approx(0.1)
    assert (ts["mbps"] - ts["bytes"] * 8 / 0.1 / 1e6).abs().max() < 1e-9
    # packets: data segments per bin, none where no byte moved, each at most one max_seg
    assert ((ts["packets"] == 0) == (ts["bytes"] == 0)).all()
    for s in r.subflows:
        mine = ts[ts["subflow"] == s.name]
        assert s.max_seg is not None and mine["packets"].sum() > 0
        assert (mine["bytes"] <= mine["packets"] * s.max_seg).all()
    # 2 s at 2 x 20 Mbit/s: the bins cover about two seconds
    assert 1.8 <= bins[0][-1] <= 2.5


def test_pmtud_retransmissions_are_part_of_bytes():
    r = run("mptcp_pmtud")
    for s in r.subflows:
        assert 0 <= s.retrans_bytes <= s.bytes
        assert s.retransmissions <= s.segments
    b = by_path(r, "B")
    # the 9000-byte segments bounced by the router are resent as 1500-byte packets
    assert b.retransmissions > 0


def test_router_capture_is_not_double_counted():
    one = run("mptcp_pmtud")
    three = run("mptcp_pmtud", ("client:eth1", "client:eth2", "rb:eth1"))
    assert three.packets > one.packets
    for path in ("A", "B"):
        x, y = by_path(one, path), by_path(three, path)
        assert (y.bytes, y.segments, y.icmp_frag_needed) == (x.bytes, x.segments, x.icmp_frag_needed)
    assert by_path(three, "A").point == "client:eth1"
    assert len(three.icmp_events) == len(one.icmp_events.to_pandas())
    assert sum(s.share for s in three.subflows) == pytest.approx(1.0)


def test_download_counts_from_the_sender_side():
    """iperf3 -R: the server sends; its capture point is nearest the sender for both
    subflows and is the only one that sees the frag-needed the router sends it."""
    pts = ("client:eth1", "client:eth2", "server:eth0")
    r = run("mptcp_pmtud_download", pts, direction="download")
    assert r.verified and r.diagnostics == []
    a, b = by_path(r, "A"), by_path(r, "B")
    assert a.point == "server:eth0" and b.point == "server:eth0"
    assert b.median_seg is not None and b.median_seg + 40 <= 1500
    assert a.median_seg is not None and a.median_seg + 40 > 1500
    assert b.icmp_frag_needed >= 1 and set(r.icmp_events.to_pandas()["src"]) == {"10.0.3.1"}
    assert sum(s.share for s in r.subflows) == pytest.approx(1.0)
    # the client-side captures alone: no ICMP is visible there, and fewer bytes than were
    # sent (the routers' rate limiters drop some), but the same bytes acknowledged
    c = run("mptcp_pmtud_download", pts[:2], direction="download")
    assert by_path(c, "B").icmp_frag_needed == 0
    ca = by_path(c, "A")
    assert ca.point == "client:eth1" and ca.bytes < a.bytes and ca.acked_bytes == a.acked_bytes


# --- plain TCP ---------------------------------------------------------------------------

def test_tcp_flow_is_not_mptcp():
    r = run("tcp", mptcp=False)
    assert not r.mptcp_negotiated and not r.fallback and r.verified
    assert len(r.subflows) == 1
    s = r.subflows[0]
    assert s.initial and s.kind == "tcp" and s.path == "A" and s.share == 1.0
    assert s.established and s.bytes > 1_000_000 and s.median_seg is not None and s.median_seg > 1500
    assert r.diagnostics == []


def test_tcp_capture_checked_as_mptcp_says_why():
    r = run("tcp", mptcp=True)
    assert not r.mptcp_negotiated and r.fallback and not r.verified
    assert any("SYN carried no MP_CAPABLE" in d for d in r.diagnostics)


# --- failures: the one-line reason -----------------------------------------------------------

def test_fallback_when_server_is_plain_tcp():
    r = run("mptcp_fallback")
    assert not r.mptcp_negotiated and r.fallback and not r.verified
    assert r.diagnostics[0] == "MPTCP requested but SYN/ACK carried no MP_CAPABLE: fallback to TCP"
    assert len(r.subflows) == 1 and r.subflows[0].kind == "mp_capable"


def test_join_syn_dropped():
    r = run("mptcp_join_blocked")
    assert r.mptcp_negotiated and not r.verified
    b = by_path(r, "B")
    assert not b.established and b.bytes == 0 and b.syn_attempts >= 3 and not b.syn_answered
    assert r.diagnostics == [f"path B: MP_JOIN SYN from 10.0.2.2 sent {b.syn_attempts} times, never answered"]
    assert by_path(r, "A").share == 1.0


def test_join_answered_with_rst():
    r = run("mptcp_join_rst")
    assert not r.verified and by_path(r, "B").rst
    assert r.diagnostics == ["path B: MP_JOIN answered with RST"]


def test_join_icmp_unreachable():
    r = run("mptcp_join_unreach")
    assert not r.verified
    assert len(r.diagnostics) == 1
    assert r.diagnostics[0].startswith(
        "path B: ICMP destination unreachable (host unreachable) from 10.0.2.1 for the MP_JOIN SYN")
    ev = r.icmp_events.to_pandas()
    assert len(ev) >= 1 and set(ev["code"]) == {1} and set(ev["path"]) == {"B"}


def test_join_refused_by_server_limit():
    r = run("mptcp_server_limit0")
    b = by_path(r, "B")
    assert not b.established and b.syn_answered and b.rst and b.bytes == 0
    assert len(r.diagnostics) == 1
    d = r.diagnostics[0]
    assert d.startswith("path B: MP_JOIN refused: the server answered the third ACK with RST")
    assert "administratively prohibited" in d


def test_no_join_attempted():
    r = run("mptcp_no_endpoint")
    assert r.mptcp_negotiated and not r.verified and r.add_addrs == []
    assert [s.path for s in r.subflows] == ["A"]
    assert len(r.diagnostics) == 1
    assert r.diagnostics[0].startswith(
        "path B: no MP_JOIN attempted (no ADD_ADDR seen, no join from 10.0.2.2")
    assert r.diagnostics[0].endswith("- check endpoints/limits")


def test_pmtud_black_hole():
    """What kernel 6.18 did when the captures were made (tcp_mtu_probing=0): the join forms,
    its 9000-byte segments vanish without ICMP, nothing on B is ever acknowledged, and the
    data goes over A. The analysis must say B carried no data and that no ICMP was seen."""
    r = run("mptcp_blackhole")
    assert r.mptcp_negotiated and not r.fallback and not r.verified
    a, b = by_path(r, "A"), by_path(r, "B")
    assert a.carried_data and a.share > 0.95
    assert b.established and b.bytes > 0 and b.acked_bytes == 0 and not b.carried_data
    assert b.icmp_frag_needed == 0 and r.icmp_events.to_pandas().empty
    assert b.retransmissions >= 3 and b.max_seg is not None and b.max_seg + 40 > 1500
    assert len(r.diagnostics) == 1
    d = r.diagnostics[0]
    assert d.startswith("path B: subflow established but carried no data")
    assert "no ICMP frag-needed seen" in d


def test_missing_capture_file_is_an_error():
    from mptcplab.errors import RunFailed
    with pytest.raises(RunFailed, match="capture file missing"):
        analyze_flow([CaptureFile(DATA / "nope.pcap", "client:eth1")], spec())


def test_analysis_reports_time_and_packets():
    r = run("mptcp_pmtud")
    assert r.packets > 1000 and r.analysis_seconds > 0
    assert r.t0_epoch is not None and r.t0_epoch > 1e9


def test_truncated_capture_is_analyzed_with_a_warning(tmp_path):
    src = (DATA / "tcp__client_eth1.pcap").read_bytes()
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(src[:-30])          # as when tcpdump is killed mid-write
    r = analyze_flow([CaptureFile(cut, "client:eth1")], spec(mptcp=False))
    assert r.verified and r.subflows[0].bytes > 1_000_000
    assert r.warnings == ["client:eth1: cut.pcap truncated: the last packet was cut short (capture stopped mid-write)"]
    assert [w.code for w in r.warnings] == ["capture-damaged"]


def test_to_dict_is_json_ready():
    import json
    d = run("mptcp_pmtud").to_dict()
    back = json.loads(json.dumps(d))
    assert back["verified"] is True and len(back["subflows"]) == 2
    row = back["subflows"][1]
    for key in ("src", "dst", "bytes", "share", "median_seg", "max_seg", "icmp_frag_needed",
                "name", "carried_data", "path"):
        assert key in row


# --- a subflow that delivered a little, then nothing (made with an nft quota on rb) -------

def test_starved_subflow_is_not_verified():
    """rb forwarded the first 40 kB from 10.0.2.2, then dropped everything: B's join
    delivered ~38 kB at the start of a 4 s transfer and then only retransmitted. The old
    rule (any acknowledged byte) called this verified; it is not a multipath result."""
    r = run("mptcp_b_starved")
    a, b = by_path(r, "A"), by_path(r, "B")
    assert r.mptcp_negotiated and not r.fallback
    assert b.established and b.carried_data and 0 < (b.acked_bytes or 0) < 60_000
    assert a.contributed and not b.contributed and not r.verified
    assert [f.code for f in r.findings] == ["weak-subflow"]
    ev = r.findings[0].evidence
    assert ev["acked_bytes"] == b.acked_bytes and ev["share"] < 0.01
    # its ACKs stopped in the first tenth of the transfer, though it kept (re)sending
    assert ev["last_ack_advance_t"] < 0.1 * (a.last_ack_advance_t or 0) < (b.last_data_t or 0)


def test_starved_subflow_with_configured_rates():
    """The same capture with both paths' rates known (20 Mbit/s each): B was expected to
    carry half and carried 0.4%."""
    s = FlowSpec(server_ip="10.0.3.2", server_port=5201, paths=PATHS, expected_paths=("A", "B"),
                 mptcp=True, path_rates_bps={"A": 20e6, "B": 20e6})
    r = analyze_flow(caps("mptcp_b_starved"), s)
    b = by_path(r, "B")
    assert b.expected_share == 0.5 and not b.contributed and not r.verified
    assert "expected share 0.500" in r.findings[0].message


def test_healthy_paths_contribute():
    r = run("mptcp_pmtud")
    assert all(s.contributed for s in r.subflows) and r.findings == []
