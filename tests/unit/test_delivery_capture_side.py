"""Receiver-side figures (out-of-order share, head-of-line delay, never readable, which copy
arrived first) only where the capture is at the data receiver (delivery.receiver_figures):
at the data sender they are None with the reason, never numbers; with the capture end
unknown they come with the note (``hol_assumed``) that they assume a receiver-side capture. Also
SubflowResult.rtt_kind, carried into the record model and subflows.csv."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pandas as pd
import pytest
from test_analysis_dsn_space import _one_subflow
from test_depth import C1, SPEC, Conn

from mptcplab.analysis import CaptureFile, FlowAnalysis, analyze_flow, pcapread
from mptcplab.analysis.delivery import AT_SENDER, HOL_KEYS, receiver_figures
from mptcplab.analysis.model import HOL_AT_SENDER
from mptcplab.analysis.standalone import analyze_files, describe
from mptcplab.record.model import Subflow

pytestmark = pytest.mark.skipif(not pcapread.library_path().is_file(),
                                reason="native capture reader not built (make -C native)")

NAME = f"{C1}:40000"


def holed(at_server: bool, fast: bool = False) -> Conn:
    """_one_subflow's upload (data 1-5000 in order) and then 6001-7000: 5001-6000 never
    captured, so at the receiver one segment is never readable."""
    c = _one_subflow(at_server, fast)
    c.data(1, 6101, 6001, 6001, dt=0.001)
    return c


def codes(fa: FlowAnalysis) -> set[str]:
    return {getattr(w, "code", "") for w in fa.warnings}


def test_at_the_sender_the_receiver_side_figures_are_withheld(tmp_path: Path) -> None:
    path = holed(at_server=False).write(tmp_path / "client.pcap")
    r = analyze_flow([CaptureFile(path, "client")], SPEC)
    s = r.subflows[0]
    assert s.rtt_kind == "path"                         # the handshake places it at the sender
    assert all(getattr(s, k) is None for k in HOL_KEYS) and s.hol_point is None and s.first_bytes is None
    assert r.hol_connection == dict.fromkeys(HOL_KEYS) and r.hol.to_pandas().empty
    assert (r.hol_unavailable or "").startswith(AT_SENDER) and NAME in (r.hol_unavailable or "")
    assert HOL_AT_SENDER in codes(r) and r.hol_assumed is None

    out = tmp_path / "out"
    fa, g = analyze_files([path], out)
    text = "\n".join(describe(fa, g))
    assert f"receiver-side figures: {AT_SENDER}" in text
    assert "% of bytes out of order" not in text and " never readable\n" not in text and "data segments" not in text
    assert not any(x.startswith("receiver (") for x in text.splitlines())
    row = pd.read_csv(out / "subflows.csv").iloc[0]
    assert all(pd.isna(row[k]) for k in (*HOL_KEYS, "hol_point", "first_bytes"))
    summary = json.loads((out / "summary.json").read_text())
    assert summary["hol"] == dict.fromkeys(HOL_KEYS) and summary["hol_unavailable"].startswith(AT_SENDER)
    assert summary["subflows"][0]["hol_never"] is None
    assert len(pd.read_csv(out / "hol.csv")) == 0       # nothing for the delivery figure to draw


def test_at_the_receiver_the_figures_are_measured(tmp_path: Path) -> None:
    r = analyze_flow([CaptureFile(holed(at_server=True).write(tmp_path / "server.pcap"), "server")], SPEC)
    s = r.subflows[0]
    assert s.rtt_kind == "ack_delay"
    assert (s.hol_point, s.hol_segments, s.hol_never) == ("server", 6, 1)
    assert s.ooo_share == pytest.approx(1000 / 6000, abs=1e-4) and s.first_bytes == 6000
    assert r.hol_unavailable is None and r.hol_assumed is None and HOL_AT_SENDER not in codes(r)
    assert r.hol_connection["hol_never"] == 1 and int(r.hol.to_pandas()["never"].sum()) == 1


def test_capture_end_unknown_keeps_the_figures_with_the_assumption(tmp_path: Path) -> None:
    path = holed(at_server=False, fast=True).write(tmp_path / "p.pcap")
    fa, g = analyze_files([path], tmp_path / "out")
    s = fa.subflows[0]
    assert s.rtt_kind == "unknown" and (s.hol_segments, s.hol_never) == (6, 1)
    assert "assume a receiver-side capture" in (fa.hol_assumed or "") and HOL_AT_SENDER not in codes(fa)
    assert fa.to_dict()["hol_assumed"] == fa.hol_assumed
    line = next(x for x in describe(fa, g) if x.startswith("receiver ("))
    assert "1 never readable" in line and "assumes a receiver-side capture" in line


def test_a_lab_named_receiver_node_decides_over_the_handshake(tmp_path: Path) -> None:
    # handshake gaps as at the client, but the lab says the point is on the receiver's node
    path = holed(at_server=False).write(tmp_path / "c.pcap")
    r = analyze_flow([CaptureFile(path, "server:eth0")], dataclasses.replace(SPEC, receiver_node="server"))
    assert r.subflows[0].hol_never == 1 and r.hol_unavailable is None and HOL_AT_SENDER not in codes(r)


def test_the_rule_itself() -> None:
    assert receiver_figures({"a": ("p", "receiver"), "b": ("q", "middle")}) == (None, None)
    why, note = receiver_figures({"a": ("p", "receiver"), "b": ("q", "sender"), "c": ("r", "unknown")})
    assert why is not None and why.startswith(AT_SENDER) and "b at q" in why and "a at p" not in why
    assert note is None                     # withheld: nothing left to assume about
    why, note = receiver_figures({"a": ("p", "unknown")})
    assert why is None and note is not None and "a at p" in note


def test_rtt_kind_is_a_subflow_field_in_the_record_and_subflows_csv(tmp_path: Path) -> None:
    path = _one_subflow(at_server=True).write(tmp_path / "s.pcap")
    fa, _ = analyze_files([path], tmp_path / "out")
    d = fa.subflows[0].to_dict()
    assert d["rtt_kind"] == "ack_delay" == fa.rtt_kind[NAME]
    assert Subflow.model_validate(d).rtt_kind == "ack_delay"
    assert list(pd.read_csv(tmp_path / "out" / "subflows.csv")["rtt_kind"]) == ["ack_delay"]
