"""The middlebox-lab metrics (metrics/middlebox.py) on hand-made records, and the capture
fact they read for row e: the first SYN without MP_CAPABLE after SYNs with it."""

from __future__ import annotations

import pytest

from mptcplab.analysis import FlowSpec, analyze_packets, packets
from mptcplab.metrics import METRICS, Select
from mptcplab.record.model import Repetition
from mptcplab.traffic.transfer_result import TransferMetrics

SYN, ACK = 0x02, 0x10
SRV, CLI = "10.0.3.2", "10.0.1.2"
SPEC = FlowSpec(SRV, 5201, {CLI: "A"}, ("A",), True, "upload")

SHA = "c" * 64
REP = Repetition.model_validate({
    "name": "b-strip-synack",
    "subflows": [{"path": "A", "initial": True, "syn_fallback_s": 3.06}, {"path": "B", "initial": False}],
    "flows": [{"name": "main", "kind": "transfer", "transfer": {"bytes": 10, "received_bytes": 10, "verdict": "equal",
                                                                "sent_sha256": SHA, "received_sha256": SHA}}],
    "probes": {"nstat": {"client": {"MPTcpExtMPCapableFallbackSYNACK": 1},
                         "server": {"MPTcpExtMPCapableFallbackACK": 1}}},
    "middlebox": {"ra": 3, "rb": 0},
})
BARE = Repetition.model_validate({"name": "old", "subflows": []})


def value(name: str, rep: Repetition) -> float | None:
    return METRICS[name].per_rep(rep, Select())


def test_counters_per_end() -> None:
    assert value("mib_client_MPCapableFallbackSYNACK", REP) == 1
    assert value("mib_server_MPCapableFallbackSYNACK", REP) == 0   # did not move there
    assert value("mib_server_MPCapableFallbackACK", REP) == 1
    assert value("mib_server_MPCapableFallbackACK", BARE) is None  # no probe


def test_transfer_intact_and_the_rest() -> None:
    assert value("transfer_intact", REP) == 1.0
    differs = REP.model_copy(deep=True)
    t = differs.flows[0].metrics_of(TransferMetrics)
    assert t is not None
    t.verdict = "differs"
    assert value("transfer_intact", differs) == 0.0
    assert value("transfer_intact", BARE) is None
    assert value("transfer_differing_bytes", REP) is None  # a server that did not compare
    t.differing_bytes, t.foreign_bytes = 674, 0
    assert value("transfer_differing_bytes", differs) == 674 and value("transfer_foreign_bytes", differs) == 0
    assert value("syn_fallback_s", REP) == pytest.approx(3.06) and value("syn_fallback_s", BARE) is None
    assert value("middlebox_packets", REP) == 3 and value("middlebox_packets", BARE) is None


def test_capture_gives_the_time_of_the_first_plain_syn() -> None:
    def seg(t: float, up: bool, flags: int, seq: int, ack: int = 0, tlen: int = 0, mpc: bool = False) -> dict:
        ends = (CLI, 40000, SRV, 5201) if up else (SRV, 5201, CLI, 40000)
        return {"t": t, "ip_src": ends[0], "sport": ends[1], "ip_dst": ends[2], "dport": ends[3], "ip_len": 52 + tlen,
                "ip_ttl": 64, "tlen": tlen, "seq": seq, "ack": ack, "flags": flags, "mp": 1 if mpc else 0,
                "sendkey": "", "recvkey": "", "recvtok": "", "point": "p"}

    # two SYNs with MP_CAPABLE (0 and 1 s), the plain one at 3 s answered, then data
    rows = [seg(0.0, True, SYN, 100, mpc=True), seg(1.0, True, SYN, 100, mpc=True), seg(3.0, True, SYN, 100),
            seg(3.001, False, SYN | ACK, 7, 101), seg(3.002, True, ACK, 101, 8),
            seg(3.01, True, ACK, 101, 8, tlen=1000), seg(3.02, False, ACK, 8, 1101)]
    fa = analyze_packets(packets.table(rows), ["p"], SPEC)
    (sf,) = [s for s in fa.subflows if s.initial]
    assert sf.syn_attempts == 3 and sf.syn_fallback_s == pytest.approx(3.0)


def test_rewriting_box_counters() -> None:
    """mbox_split / mbox_merged sum the mptcplab-mbox counters of the repetition's boxes; the
    delay lines' stats (no ``mbox`` key) are not boxes; no box, no value."""
    rep = Repetition.model_validate({"name": "j", "subflows": [], "daemon_stats": {
        "mbox split-segments rb q3": {"mbox": "split", "split": 40, "merged": 0},
        "mbox coalesce-segments ra q4": {"mbox": "merge", "merged": 2},
        "delay rs": {"split": 99}}})
    assert value("mbox_split", rep) == 40 and value("mbox_merged", rep) == 2
    assert value("mbox_split", REP) is None and value("mbox_merged", BARE) is None
