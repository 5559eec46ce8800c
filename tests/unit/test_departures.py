"""Gaps between consecutive data segments at the sender (analysis/departures.py), on a
connection built packet by packet (pcapkit.py via test_depth.Conn) with known times."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from test_depth import C1, C2, SPEC, Conn

from mptcplab.analysis import CaptureFile, analyze_flow, pcapread
from mptcplab.analysis.analyze import write_tables
from mptcplab.analysis.departures import COLUMNS

pytestmark = pytest.mark.skipif(not pcapread.library_path().is_file(),
                                reason="native capture reader not built (make -C native)")

A, B = f"{C1}:40000", f"{C2}:40001"


def test_known_gaps_on_one_subflow_and_at_switches(tmp_path: Path) -> None:
    # A at T, A 1 ms later, B 2 ms after that, A 4 ms after B, A 1 ms later
    c = Conn()
    c.handshakes()
    c.data(1, 101, 1, 1, dt=0.001)
    c.data(1, 1101, 1001, 1001, dt=0.002)
    c.data(2, 701, 2001, 1, dt=0.004)
    c.data(1, 2101, 3001, 2001, dt=0.001)
    c.data(1, 3101, 4001, 3001)
    r = analyze_flow([CaptureFile(c.write(tmp_path / "p.pcap"), "p")], SPEC)
    d = r.departures.to_pandas().set_index(["from_subflow", "to_subflow"])
    assert list(r.departures.to_pandas().columns) == COLUMNS
    assert d.loc[(A, A), "gaps"] == 2 and d.loc[(A, A), "gap_p50_ms"] == pytest.approx(1.0, abs=1e-3)
    assert d.loc[(A, B), "gaps"] == 1 and d.loc[(A, B), "gap_max_ms"] == pytest.approx(2.0, abs=1e-3)
    assert d.loc[(B, A), "gap_p95_ms"] == pytest.approx(4.0, abs=1e-3)
    assert (d.loc[(A, B), "from_path"], d.loc[(A, B), "to_path"]) == ("A", "B")
    assert len(d) == 3 and int(r.departures.to_pandas()["gaps"].sum()) == 4        # 5 segments, 4 gaps
    write_tables(r, tmp_path)
    assert len(pd.read_csv(tmp_path / "departures.csv")) == 3
