"""Receiver-side figures of one interface's file of a two-subflow connection (coverage.py).

tests/data/mptcp_pmtud_download__client_eth{1,2}.pcap are the two interfaces of the data
receiver (a download to the client): each file alone holds one subflow's data only, the other's
data is acknowledged by the data ACKs it carries but never seen. The out-of-order share and
head-of-line waits of such a file are not the receiver's, so they are withheld with the
reason; both files together give them.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from mptcplab.analysis import pcapread
from mptcplab.analysis.coverage import NOT_IN_CAPTURE, uncaptured_bytes
from mptcplab.analysis.delivery import HOL_KEYS
from mptcplab.analysis.model import DATA_NOT_CAPTURED
from mptcplab.analysis.standalone import analyze_files
from mptcplab.analysis.table import Table

DATA = Path(__file__).resolve().parents[1] / "data"
ETH1 = DATA / "mptcp_pmtud_download__client_eth1.pcap"
ETH2 = DATA / "mptcp_pmtud_download__client_eth2.pcap"
SERVER = DATA / "mptcp_pmtud_download__server_eth0.pcap"
needs_reader = pytest.mark.skipif(not pcapread.library_path().is_file(),
                                  reason="native capture reader not built (make -C native)")


def table(maps: list[tuple[int, int]], acks: list[int]) -> Table:
    rows = [{"t": 0.0, "path": "A", "subflow": "a:1", "kind": "map", "dsn": d, "length": n, "ssn": 1}
            for d, n in maps]
    rows += [{"t": 0.0, "path": "A", "subflow": "a:1", "kind": "ack", "dsn": d, "length": 0, "ssn": 0}
             for d in acks]
    return Table.from_pandas(pd.DataFrame(rows))


def test_uncaptured_bytes_counts_only_acknowledged_holes() -> None:
    # bytes 1001..2000 acknowledged (ack 3002 covers them), carried by no mapping here
    assert uncaptured_bytes(table([(1, 1000), (2001, 1000)], [1001, 3002])) == (1000, 1001, 2001)
    # everything carried; the last acknowledged octet is a DATA_FIN without payload
    assert uncaptured_bytes(table([(1, 1000), (1001, 2000)], [3002]))[0] == 0
    # a capture that starts mid-connection: bytes before the first mapping count as carried
    assert uncaptured_bytes(table([(5000, 3000)], [2000, 8001]))[0] == 0
    # a hole the data ACKs do not cover (lost and not yet re-sent) is the receiver's own
    assert uncaptured_bytes(table([(1, 1000), (2001, 1000)], [1001]))[0] == 0
    assert uncaptured_bytes(table([(1, 1000)], []))[0] == 0


@needs_reader
def test_one_interface_file_withholds_the_receiver_figures(tmp_path: Path) -> None:
    fa, g = analyze_files([ETH1], tmp_path / "eth1")
    assert g.direction == "download" and fa.mptcp_negotiated
    assert fa.hol_unavailable is not None and fa.hol_unavailable.startswith(NOT_IN_CAPTURE), fa.hol_unavailable
    assert DATA_NOT_CAPTURED in [w.code for w in fa.warnings]
    assert all(fa.hol_connection.get(k) is None for k in HOL_KEYS), fa.hol_connection
    assert all(s.ooo_share is None and s.hol_never is None for s in fa.subflows)
    assert fa.hol.to_pandas().empty


@needs_reader
def test_both_interfaces_give_the_figures(tmp_path: Path) -> None:
    fa, _ = analyze_files([ETH1, ETH2], tmp_path / "both")
    assert fa.hol_unavailable is None and DATA_NOT_CAPTURED not in [w.code for w in fa.warnings]
    assert (fa.hol_connection.get("hol_segments") or 0) > 100
    assert fa.hol_connection["ooo_share"] is not None and fa.hol_connection["ooo_share"] < 0.9
    # the same receiver points as with the sender's capture beside them (one clock: the
    # one-way delay pairs put the receiver point at the client's interfaces): the same figures
    three, _ = analyze_files([ETH1, ETH2, SERVER], tmp_path / "three", same_clock=True)
    assert {s.hol_point for s in three.subflows} == {ETH1.stem, ETH2.stem}
    assert three.hol_connection == fa.hol_connection


@needs_reader
def test_the_other_interface_alone_gives_no_figures_as_measured(tmp_path: Path) -> None:
    """eth2 holds the join only (the MP_CAPABLE subflow left by eth1): no figure may claim to
    be the receiver's."""
    fa, _ = analyze_files([ETH2], tmp_path / "eth2")
    share = fa.hol_connection.get("ooo_share")
    assert share is None or (fa.hol_unavailable is None and share < 0.5), (share, fa.hol_unavailable)
