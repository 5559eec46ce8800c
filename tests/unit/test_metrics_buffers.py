"""The buffer-lab metrics (metrics/buffers.py) on hand-made repetition records: each value
from its one source, None (never an error) when the record lacks it."""

from __future__ import annotations

import pytest

from mptcplab.metrics import METRICS, Select
from mptcplab.record.model import Repetition

REP = Repetition.model_validate({
    "name": "emu1-mptcp-rmem200k", "goodput_mbps": 8.0, "duration_s": 10.0,
    "mptcp": {"requested": True, "negotiated": True, "dss_checksum": True},
    "subflows": [
        {"path": "WiFi", "bytes": 9_000_000, "retrans_bytes": 3000, "mptcp_retrans_bytes": 70_000,
         "mptcp_retransmissions": 12},
        {"path": "3G", "bytes": 1_200_000, "retrans_bytes": 500, "mptcp_retrans_bytes": 0,
         "mptcp_retransmissions": 0},
    ],
    "probes": {"nstat": {"client": {"MPTcpExtOFOQueue": 2},
                         "server": {"MPTcpExtOFOQueue": 718, "MPTcpExtOFOQueueTail": 692}}},
})
BARE = Repetition.model_validate({"name": "old", "subflows": []})


def value(name: str, rep: Repetition, path: str | None = None) -> float | None:
    return METRICS[name].per_rep(rep, Select(path=path))


def test_wire_minus_app() -> None:
    # 10.2 MB on the wire, 10 MB delivered (8 Mbit/s x 10 s)
    assert value("wire_minus_app_bytes", REP) == pytest.approx(200_000)
    assert value("wire_minus_app_bytes", BARE) is None


def test_retransmissions_per_path_and_total() -> None:
    assert value("tcp_retrans_bytes", REP, "WiFi") == 3000
    assert value("tcp_retrans_bytes", REP) == 3500
    assert value("mptcp_retrans_bytes", REP, "WiFi") == 70_000
    assert value("mptcp_retrans_bytes", REP, "3G") == 0
    assert value("mptcp_retransmissions", REP) == 12
    assert value("tcp_retrans_bytes", REP, "C") == 0  # no subflow on that path: it re-sent nothing


def test_dss_checksum_from_the_capture_verdict() -> None:
    assert value("dss_checksum", REP) == 1.0
    off = REP.model_copy(update={"mptcp": REP.mptcp.model_copy(update={"dss_checksum": False})})
    assert value("dss_checksum", off) == 0.0
    assert value("dss_checksum", BARE) is None


def test_ofo_tail_share_sums_the_nodes_nstat_deltas() -> None:
    assert value("ofo_tail_share", REP) == pytest.approx(692 / 720)
    assert value("ofo_tail_share", BARE) is None  # nstat probe off


def test_selectors_declared() -> None:
    assert METRICS["mptcp_retrans_bytes"].accepts == {"path"}
    assert METRICS["wire_minus_app_bytes"].accepts == frozenset()
    assert not any(METRICS[m].scales for m in ("wire_minus_app_bytes", "dss_checksum", "ofo_tail_share"))
