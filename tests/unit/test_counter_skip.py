"""A counter an older kernel lacks is skipped, not failed (mptcplab/checks/counter.py,
kernel_counters.py, results/findings.py, preflight.counter_problems): the rule of the
kernel's own mptcp_lib.sh ("[skip] counter X is not available"). A name no kernel the
project knows has is still refused."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from test_counter_checks import HOST, _lab, _ok, rep_with_table

from mptcplab.checks.counter import known, short
from mptcplab.checks.kernel_counters import KNOWN, MPTCP_EXT, RELEASE
from mptcplab.lab.loader import load_lab
from mptcplab.lab.schema import Published
from mptcplab.metricdecl import COUNTER_NAME
from mptcplab.preflight import counter_names, counter_problems
from mptcplab.record.counters import counter_reading
from mptcplab.record.model import FindingRow, Repetition
from mptcplab.results.findings import evaluate

REPO = Path(__file__).resolve().parents[2]


def _finding(expect: list[dict[str, Any]]) -> Any:
    pub = Published.model_validate({
        "source": {"id": "x", "title": "t", "authors": ["a"], "year": 2025, "document": "d", "kernel": "k",
                   "testbed": "t"},
        "findings": [{"id": "f", "scenario": "s", "statement": "s", "where": "w", "fails_if": "x",
                      "expect": expect}]})
    return pub.findings[0]


def _c(counter: str, value: int = 0, node: str = "server") -> dict[str, Any]:
    return {"counter": counter, "node": node, "op": "==", "value": value, "source": "paper: x"}


def test_the_known_list_is_6_18s_counters_and_names_every_one_the_selftests_read() -> None:
    assert RELEASE.startswith("6.18") and len(MPTCP_EXT) > 50 and len(KNOWN) > 200
    assert all(COUNTER_NAME.match(n) for n in KNOWN)
    lab = load_lab(REPO / "labs/selftests")
    assert lab.published is not None
    used = {u.counter for f in lab.published.findings for _, c in f.located() for u in c.counter_uses()}
    assert used and used <= KNOWN
    # the names 6.1 lacks and mptcp_join.sh of 6.18 reads: known, so skipped there, not refused
    assert {"MPTcpExtMPJoinSynTx", "MPTcpExtMPJoinRejected"} <= KNOWN
    assert not known("MPTcpExtMPJoinSynTX") and known("MPTcpExtNewIn7", frozenset({"MPTcpExtNewIn7"}))
    assert short("MPTcpExtRmAddr") == "RmAddr" and short("TcpExtTCPTimeouts") == "TcpExtTCPTimeouts"


def test_the_known_list_is_what_a_6_18_host_has() -> None:
    """Regenerate kernel_counters.py (its docstring's command) when this fails on a 6.18 host."""
    import os

    names = counter_names(Path("/proc/net/netstat"))
    if names is None or not os.uname().release.startswith("6.18"):
        pytest.skip("not a 6.18 host")
    assert {n for n in names if n.startswith(("MPTcpExt", "TcpExt"))} == KNOWN


def test_preflight_lets_a_known_counter_this_kernel_lacks_through_and_refuses_a_typo(tmp_path: Path) -> None:
    d = _lab(tmp_path, [_ok("MPTcpExtMPJoinSynTx"), _ok("MPTcpExtMPJoinSynTX")])
    lab = load_lab(d)
    old = replace(HOST, release="6.1.0-56-amd64")
    assert "MPTcpExtMPJoinSynTx" not in (old.counters or ())
    (p,) = counter_problems(lab, lab.scenarios, old)
    assert p.field == "findings[0].expect[1].counter"
    assert "has no counter MPTcpExtMPJoinSynTX, nor has Linux 6.18" in p.problem and "\n" not in str(p)


def test_a_counter_the_kernel_lacks_is_skipped_and_the_finding_judged_on_the_rest(tmp_path: Path) -> None:
    # the kernel's full table: MPJoinSynRx and RmAddr exist, MPJoinSynTx does not
    reps = {"s": [rep_with_table(tmp_path, "s", 1, {"server": {"MPTcpExtMPJoinSynRx": 1, "MPTcpExtRmAddr": 0}})]}
    row = evaluate(_finding([_c("MPTcpExtMPJoinSynRx", 1), _c("MPTcpExtMPJoinSynTx"), _c("MPTcpExtRmAddr")]),
                   reps)
    assert row.verdict == "holds"
    skipped = row.checks[1]
    assert skipped.verdict == "not measurable" and skipped.skipped is not None
    assert "not on this kernel" in skipped.skipped and "MPTcpExtMPJoinSynTx" in skipped.skipped
    assert skipped.brief == "MPJoinSynTx@server 0→n/a" and row.checks[0].brief == "MPJoinSynRx@server 1→1"
    assert [c.skipped for c in row.checks].count(None) == 2
    assert row.evidence.startswith("1 of 3 checks skipped, not on this kernel: MPJoinSynTx@server 0→n/a; ")
    assert row.shown == "holds (1 skipped: not on this kernel)"
    # a failing available check still decides
    row = evaluate(_finding([_c("MPTcpExtMPJoinSynRx", 2), _c("MPTcpExtMPJoinSynTx")]), reps)
    assert row.verdict == "does not hold" and row.shown == "does not hold (1 skipped: not on this kernel)"
    assert row.checks[0].brief == "MPJoinSynRx@server 2→1"
    # every check skipped: nothing decided, said so
    row = evaluate(_finding([_c("MPTcpExtMPJoinSynTx"), _c("MPTcpExtMPJoinRejected")]), reps)
    assert row.verdict == "not measurable" and row.shown == "n/a: not on this kernel"


def test_a_missing_record_is_not_a_skip(tmp_path: Path) -> None:
    reps = {"s": [rep_with_table(tmp_path, "s", 1, {"server": {"MPTcpExtMPJoinSynRx": 1}})]}
    # the node has no record: not measurable, and the finding with it
    row = evaluate(_finding([_c("MPTcpExtMPJoinSynRx", 1), _c("MPTcpExtMPJoinSynRx", 0, node="client")]), reps)
    assert row.verdict == "not measurable" and not row.skipped and row.shown == "not measurable"
    # rep.json's summary lists moved MPTcpExt counters only: a TcpExt one cannot be told absent
    r = Repetition.model_validate({"name": "s", "rep": 1, "probes": {"nstat": {"server": {"MPTcpExtRmAddr": 1}}}})
    assert not counter_reading(r, "server", "TcpExtTCPTimeouts").absent
    assert counter_reading(rep_with_table(tmp_path, "t", 1, {"server": {}}), "server", "TcpExtX").absent is False
    assert counter_reading(rep_with_table(tmp_path, "u", 1, {"server": {"TcpExtY": 0}}), "server",
                           "TcpExtX").absent


def test_the_skip_survives_the_record() -> None:
    row = FindingRow.model_validate({"id": "f", "verdict": "holds", "checks": [
        {"verdict": "holds", "brief": "MPJoinSynRx@server 1→1"},
        {"verdict": "not measurable", "skipped": "not on this kernel: x", "brief": "MPJoinSynTx@client 0→n/a"}]})
    again = FindingRow.model_validate_json(row.model_dump_json())
    assert again.shown == "holds (1 skipped: not on this kernel)" and again.checks[1].skipped


def test_the_report_counts_the_skipped_checks() -> None:
    from mptcplab.results.report import _skipped_line

    rows = [FindingRow.model_validate({"id": f"f{i}", "verdict": "holds", "checks": [
        {"verdict": "holds", "brief": "MPJoinSynRx@server 1→1"},
        {"verdict": "not measurable", "skipped": "not on this kernel: x", "brief": "MPJoinSynTx@client 1→n/a"}]})
        for i in range(2)]
    line = _skipped_line(rows)
    assert line.startswith(" 2 check(s) in 2 finding(s) skipped, not on this kernel") and "MPJoinSynTx@client" in line
    assert _skipped_line(rows[:0]) == ""
