"""Findings as predicates across scenarios, on hand-made repetitions (evaluation logic only)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from mptcplab.lab.schema import Expectation, Finding, Published
from mptcplab.record.model import Repetition
from mptcplab.results.findings import check, evaluate, findings_table
from mptcplab.results.summary import repetitions


def rec(name: str, rep: int, goodput: float, share_b: float = 0.5, seg_b: int | None = 1448) -> dict[str, Any]:
    return {"name": name, "rep": rep, "goodput_mbps": goodput,
            "subflows": [{"path": "A", "share": 1 - share_b, "median_seg": 8948, "max_seg": 8948},
                         {"path": "B", "share": share_b, "median_seg": seg_b, "max_seg": seg_b}]}


REPS: dict[str, list[Repetition]] = {}
for r in repetitions([rec("tcp-a", 1, 94.0), rec("tcp-a", 2, 96.0), rec("mixed", 1, 60.0, share_b=0.0, seg_b=None),
                      rec("uniform", 1, 180.0), rec("mss576", 1, 17.0), rec("mss1024", 1, 18.0)]):
    REPS.setdefault(r.name, []).append(r)


def exp(**kw: Any) -> Expectation:
    return Expectation.model_validate(kw)


def test_constant_as_before() -> None:
    holds, ev, _ = check(exp(metric="subflow_share", path="B", op="==", value=0), "mixed", REPS)
    assert holds is True and ev == "subflow_share of path B = 0 (mean over reps, 1 rep); paper: == 0"


def test_between_scenarios_uses_each_scenarios_aggregate() -> None:
    holds, ev, _ = check(exp(metric="goodput_mbps", op="<", than={"scenario": "tcp-a"}), "mixed", REPS)
    assert holds is True
    assert "goodput_mbps in mixed = 60" in ev and "goodput_mbps in tcp-a = 95 (mean over reps, 2 reps)" in ev
    holds, _, _ = check(exp(metric="goodput_mbps", op="<", than={"scenario": "tcp-a"}), "uniform", REPS)
    assert holds is False


def test_ratio_and_difference_with_tolerance() -> None:
    e = exp(metric="goodput_mbps", op="==", than={"scenario": "mss576"}, by="ratio", value=1.075, tolerance=0.075)
    holds, ev, _ = check(e, "mss1024", REPS)
    assert holds is True and ev.startswith("ratio 1.059") and "paper: ratio == 1.075 ± 0.075" in ev
    holds, _, _ = check(e, "uniform", REPS)  # 180 / 17: far more than modest
    assert holds is False
    d = exp(metric="goodput_mbps", op="==", than={"scenario": "mss576"}, by="difference", value=1.2,
            tolerance=0.5)
    assert check(d, "mss1024", REPS)[0] is True   # 18 - 17 = 1, within 1.2 ± 0.5
    d2 = d.model_copy(update={"tolerance": 0.1})
    assert check(d2, "mss1024", REPS)[0] is False


def test_list_is_and_and_unmeasured_is_unknown() -> None:
    both = [{"metric": "goodput_mbps", "op": ">", "than": {"scenario": "tcp-a"}},
            {"metric": "goodput_mbps", "op": ">", "than": {"scenario": "mixed"}}]
    f = Finding.model_validate({"id": "u", "scenario": "uniform", "statement": "s", "where": "w", "expect": both})
    row = evaluate(f, REPS)
    assert row.holds_here is True and "; and " in row.evidence
    f = Finding.model_validate({"id": "m", "scenario": "mixed", "statement": "s", "where": "w", "expect": both})
    assert evaluate(f, REPS).holds_here is False
    # B carried nothing in mixed: no segment size, so the check cannot be made (not a zero)
    seg = Finding.model_validate({"id": "s", "scenario": "mixed", "statement": "s", "where": "w",
                                  "expect": {"metric": "median_seg", "path": "B", "op": "<=", "value": 1460}})
    row = evaluate(seg, REPS)
    assert row.holds_here is None and row.evidence == "no median_seg observed in mixed (path B)"
    gone = Finding.model_validate({"id": "g", "scenario": "tcp-a", "statement": "s", "where": "w",
                                   "expect": {"metric": "goodput_mbps", "op": "<", "than": {"scenario": "absent"}}})
    assert evaluate(gone, REPS).holds_here is None and "scenario absent not run" in evaluate(gone, REPS).evidence


def test_capture_facts_hold_in_every_repetition() -> None:
    reps = {r.name: [r] for r in repetitions([rec("mixed", 1, 60.0, share_b=0.0)])}
    reps["mixed"][0].subflows[1].icmp_mtus = [1500]
    reps["two"] = repetitions([rec("two", 1, 1.0), rec("two", 2, 1.0)])
    reps["two"][1].subflows[1].established = False
    f = Finding.model_validate({"id": "f", "scenario": "mixed", "statement": "s", "where": "w", "expect": [
        {"fact": "icmp_mtus", "path": "B", "contains": 1500},
        {"fact": "established", "path": "B", "equals": True, "scenario": "two"}]})
    reps["two"][0].subflows[1].established = True
    row = evaluate(f, reps)
    assert row.holds_here is False
    assert "a subflow on path B with icmp_mtus contains 1500: in 1 of 1 rep" in row.evidence
    assert "a subflow on path B with established = True in two: in 1 of 2 reps" in row.evidence
    reps["two"][1].subflows[1].established = True
    assert evaluate(f, reps).holds_here is True
    with pytest.raises(ValidationError):
        Finding.model_validate({"id": "f", "scenario": "x", "statement": "s", "where": "w",
                                "expect": {"fact": "established", "contains": 1500}})


def test_not_measurable_gives_its_reason() -> None:
    f = Finding.model_validate({"id": "p", "scenario": None, "statement": "s", "where": "w",
                                "not_measurable": "needs the patched kernel"})
    row = evaluate(f, REPS)
    assert row.holds_here is None and row.verdict == "unknown"
    assert row.evidence == "not measurable here: needs the patched kernel"


@pytest.mark.parametrize("bad", [
    {"metric": "goodput_mbps", "op": "<"},                                                     # nothing to compare with
    {"metric": "goodput_mbps", "op": "<", "value": 1, "by": "ratio"},                          # by needs than
    {"metric": "goodput_mbps", "op": "<", "than": {"scenario": "x"}, "value": 3},              # value unused
    {"metric": "goodput_mbps", "op": "<", "value": 1, "tolerance": 0.1},                       # tolerance on <
    {"metric": "goodput_mbps", "op": "==", "value": 1, "tolerance": -1},
])
def test_incomplete_expectations_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Expectation.model_validate(bad)


def test_mtu_lab_findings_are_checks_or_say_why_not() -> None:
    from pathlib import Path

    from mptcplab.lab.loader import load_lab

    lab = load_lab(Path(__file__).resolve().parents[2] / "labs" / "mtu")
    pub = lab.published
    assert isinstance(pub, Published)
    names = {s.name for s in lab.scenarios}
    for f in pub.findings:
        assert f.expectations or f.not_measurable, f"{f.id}: neither a check nor a reason"
        assert set(f.scenarios_referenced()) <= names, f.id
    assert sum(1 for f in pub.findings if f.expectations) >= 9
    assert findings_table(pub, []) and all(r.holds_here is None for r in findings_table(pub, []))


def _reps(**goodputs: list[float]) -> dict[str, list[Repetition]]:
    out: dict[str, list[Repetition]] = {}
    for r in repetitions([rec(name, n, g) for name, gs in goodputs.items() for n, g in enumerate(gs, 1)]):
        out.setdefault(r.name, []).append(r)
    return out


def test_a_verdict_the_repetitions_disagree_on_is_within_spread() -> None:
    """The mean of 8.6, 8.9 and 9.1 misses ">= 9", but one repetition reached it: the
    verdict stands and is marked, with how many repetitions agree; all on one side: firm."""
    reps = _reps(s=[8.6, 8.9, 9.1], low=[8.0, 8.2, 8.1])
    c = check(exp(metric="goodput_mbps", op=">=", value=9), "s", reps)
    assert c.holds is False and c.spread == "within spread: 1 of 3 repetitions satisfy it (values 8.6 to 9.1)"
    assert check(exp(metric="goodput_mbps", op=">=", value=9), "low", reps).spread is None
    one = check(exp(metric="goodput_mbps", op=">=", value=9), "s", _reps(s=[9.1]))
    assert one.holds is True and one.spread is None, "one repetition has no spread"
    # between scenarios: the pairs of their repetitions
    c = check(exp(metric="goodput_mbps", op=">=", than={"scenario": "low"}), "s", reps)
    assert c.holds is True and c.spread is None, "every repetition of s is above every one of low"
    near = _reps(s=[8.6, 8.9, 9.1], t=[8.7, 8.8, 9.3])
    c = check(exp(metric="goodput_mbps", op=">=", than={"scenario": "t"}), "s", near)
    assert c.holds is False and c.spread is not None and c.spread.startswith("within spread: 4 of 9 pairs")
    r = check(exp(metric="goodput_mbps", op="<", than={"scenario": "t"}, by="ratio", value=1.0), "s", near)
    assert r.holds is True and r.spread is not None and "ratios 0.92" in r.spread


def finding(fid: str, expect: Any) -> Finding:
    return Finding.model_validate({"id": fid, "scenario": "s", "statement": "x", "where": "y", "expect": expect})


def test_within_spread_follows_the_checks_that_decided() -> None:
    """A finding that fails on a firm check is firm, whatever its other checks; one that
    holds is within spread when any of its checks is; the mark shows in the verdict."""
    reps = _reps(s=[8.6, 8.9, 9.1], low=[8.0, 8.2, 8.1])
    spread_fail = {"metric": "goodput_mbps", "op": ">=", "value": 9}
    firm_fail = {"metric": "goodput_mbps", "op": ">=", "value": 20}
    firm_hold = {"metric": "goodput_mbps", "op": ">", "value": 1}
    spread_hold = {"metric": "goodput_mbps", "op": "<", "value": 9}

    def row(*checks: dict[str, Any]) -> Any:
        return evaluate(finding("f", list(checks)), reps)

    r = row(firm_hold, spread_fail)
    assert r.holds_here is False and r.within_spread and r.shown == "no (within spread)"
    assert "[within spread: 1 of 3 repetitions satisfy it" in r.evidence
    assert row(firm_fail, spread_fail).within_spread is False
    assert row(firm_hold, spread_hold).within_spread is True and row(firm_hold).shown == "yes"
    # a metric aggregated as an extreme over repetitions has no spread to read: one
    # repetition reaching it is what it says
    segs = {"s": list(repetitions([rec("s", 1, 9.0, seg_b=1000), rec("s", 2, 9.0, seg_b=1448)]))}
    seg = evaluate(finding("g", {
        "metric": "max_seg", "path": "B", "op": ">=", "value": 1448}), segs)
    assert seg.holds_here is True and not seg.within_spread
    assert evaluate(finding("h", {
        "metric": "goodput_mbps", "op": ">=", "value": 9}), _reps(s=[8.0, 10.0])).within_spread
