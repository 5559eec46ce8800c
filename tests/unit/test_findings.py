"""Findings as predicates across scenarios, on hand-made repetitions (evaluation logic only)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from mptcplab.lab.schema import Expectation, Finding, Published
from mptcplab.record.model import Repetition
from mptcplab.results.findings import check, combine, evaluate, findings_table
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


def _reps(**goodputs: list[float]) -> dict[str, list[Repetition]]:
    out: dict[str, list[Repetition]] = {}
    for r in repetitions([rec(name, n, g) for name, gs in goodputs.items() for n, g in enumerate(gs, 1)]):
        out.setdefault(r.name, []).append(r)
    return out


def test_one_repetition_decides_nothing() -> None:
    """A single repetition has no interval: the check is inconclusive, leaning to the side
    its value is on (the evidence says why)."""
    c, ev = check(exp(metric="subflow_share", path="B", op="==", value=0), "mixed", REPS)
    assert c.verdict == "inconclusive" and c.leans is True
    assert "too few repetitions for a 90% interval" in ev and "n = 1" in ev


def test_a_median_whose_interval_clears_the_claim_holds() -> None:
    reps = _reps(s=[94.0, 95.0, 96.0, 95.5, 94.5])  # n = 5: [min, max] covers 94 %
    c, ev = check(exp(metric="goodput_mbps", op=">", value=90), "s", reps)
    assert c.verdict == "holds" and c.estimate == 95.0 and (c.low, c.high) == (94.0, 96.0)
    assert c.confidence == pytest.approx(1 - 2 / 32) and c.n == [5]
    assert check(exp(metric="goodput_mbps", op="<", value=90), "s", reps)[0].verdict == "does not hold"
    straddle = check(exp(metric="goodput_mbps", op=">", value=95.2), "s", reps)[0]
    assert straddle.verdict == "inconclusive" and straddle.leans is False
    # three repetitions are too few for a 90 % interval of one median, however clear
    assert check(exp(metric="goodput_mbps", op=">", value=1), "s", _reps(s=[94.0, 95.0, 96.0]))[0].verdict \
        == "inconclusive"


def test_a_small_difference_inside_the_spread_is_inconclusive() -> None:
    """The reviewer's case: a difference of 0.11 Mbit/s between means with a standard
    deviation of 1.8 was "holds" (mean comparison); the interval straddles 0."""
    reps = _reps(a=[8.0, 10.5, 12.3, 9.1, 10.9], b=[9.8, 11.9, 8.3, 10.6, 9.6])
    import statistics
    assert statistics.fmean(reps_values(reps, "a")) - statistics.fmean(reps_values(reps, "b")) == pytest.approx(0.12)
    c, ev = check(exp(metric="goodput_mbps", op=">", than={"scenario": "b"}), "a", reps)
    assert c.verdict == "inconclusive" and c.low is not None and c.high is not None and c.low < 0 < c.high
    assert "Hodges-Lehmann" in ev and "n = 5 x 5" in ev


def test_below_tcp_on_the_mean_but_not_on_the_median() -> None:
    """One slow repetition pulls MPTCP's mean below TCP's while its median is above: the old
    mean comparison said "holds"; the median's interval does not."""
    reps = _reps(mptcp=[20.0, 95.0, 96.0, 97.0, 98.0], tcp=[93.0, 94.0, 94.5, 93.5, 94.2])
    import statistics
    assert statistics.fmean(reps_values(reps, "mptcp")) < statistics.fmean(reps_values(reps, "tcp"))
    c, _ = check(exp(metric="goodput_mbps", op="<", than={"scenario": "tcp"}), "mptcp", reps)
    assert c.verdict in ("does not hold", "inconclusive") and c.estimate is not None and c.estimate > 0


def test_a_clear_difference_holds_or_does_not() -> None:
    reps = _reps(fast=[94.0, 95.0, 96.0], slow=[40.0, 44.0, 47.0])  # 3 x 3: Moses covers exactly 90 %
    c, _ = check(exp(metric="goodput_mbps", op=">", than={"scenario": "slow"}), "fast", reps)
    assert c.verdict == "holds" and c.confidence == pytest.approx(0.9) and c.n == [3, 3]
    assert check(exp(metric="goodput_mbps", op="<", than={"scenario": "slow"}), "fast", reps)[0].verdict \
        == "does not hold"
    r, ev = check(exp(metric="goodput_mbps", op="==", than={"scenario": "slow"}, by="ratio", value=2.2,
                      tolerance=0.3), "fast", reps)
    assert r.verdict == "holds" and "ratio" in ev  # pairwise ratios 2.0 .. 2.4
    r2 = check(exp(metric="goodput_mbps", op="==", than={"scenario": "slow"}, by="ratio", value=2.2,
                   tolerance=0.1), "fast", reps)[0]
    assert r2.verdict == "inconclusive"  # the interval [2.0, 2.4] is wider than the band


def test_equivalence_needs_the_whole_interval_inside_the_band() -> None:
    reps = _reps(s=[8.9, 9.0, 9.1, 9.05, 8.95], w=[6.0, 12.0, 9.0, 7.0, 11.0])
    assert check(exp(metric="goodput_mbps", op="==", value=9, tolerance=0.5), "s", reps)[0].verdict == "holds"
    assert check(exp(metric="goodput_mbps", op="==", value=9, tolerance=0.5), "w", reps)[0].verdict \
        == "inconclusive"
    assert check(exp(metric="goodput_mbps", op="==", value=20, tolerance=0.5), "s", reps)[0].verdict \
        == "does not hold"


def reps_values(reps: dict[str, list[Repetition]], name: str) -> list[float]:
    return [r.goodput_mbps for r in reps[name] if r.goodput_mbps is not None]


def test_list_is_and_and_unmeasured_is_not_measurable() -> None:
    reps = _reps(uniform=[180.0, 181.0, 182.0], tcp=[94.0, 95.0, 96.0], mixed=[60.0, 61.0, 59.0])
    both = [{"metric": "goodput_mbps", "op": ">", "than": {"scenario": "tcp"}},
            {"metric": "goodput_mbps", "op": ">", "than": {"scenario": "mixed"}}]
    f = Finding.model_validate({"id": "u", "scenario": "uniform", "statement": "s", "where": "w", "expect": both})
    row = evaluate(f, reps)
    assert row.verdict == "holds" and "; and " in row.evidence and len(row.checks) == 2
    f = Finding.model_validate({"id": "m", "scenario": "mixed", "statement": "s", "where": "w", "expect": both})
    assert evaluate(f, reps).verdict == "does not hold"
    # B carried nothing in mixed: no segment size, so the check cannot be made (not a zero)
    seg = Finding.model_validate({"id": "s", "scenario": "mixed", "statement": "s", "where": "w",
                                  "expect": {"metric": "median_seg", "path": "B", "op": "<=", "value": 1460}})
    row = evaluate(seg, REPS)
    assert row.verdict == "not measurable" and row.evidence == "no median_seg of path B in mixed observed"
    gone = Finding.model_validate({"id": "g", "scenario": "tcp-a", "statement": "s", "where": "w",
                                   "expect": {"metric": "goodput_mbps", "op": "<", "than": {"scenario": "absent"}}})
    assert evaluate(gone, REPS).verdict == "not measurable"
    assert "scenario absent not run" in evaluate(gone, REPS).evidence


def test_verdicts_combine_failing_first() -> None:
    assert combine(["holds", "inconclusive"]) == "inconclusive"
    assert combine(["holds", "not measurable", "inconclusive"]) == "not measurable"
    assert combine(["inconclusive", "does not hold", "not measurable"]) == "does not hold"
    assert combine(["holds", "holds"]) == "holds"


def test_capture_facts_hold_in_every_repetition() -> None:
    reps = {r.name: [r] for r in repetitions([rec("mixed", 1, 60.0, share_b=0.0)])}
    reps["mixed"][0].subflows[1].icmp_mtus = [1500]
    reps["two"] = repetitions([rec("two", 1, 1.0), rec("two", 2, 1.0)])
    reps["two"][1].subflows[1].established = False
    f = Finding.model_validate({"id": "f", "scenario": "mixed", "statement": "s", "where": "w", "expect": [
        {"fact": "icmp_mtus", "path": "B", "contains": 1500},
        {"fact": "established", "path": "B", "equals": True, "scenario": "two",
         "source": "convention: a subflow the lab configures must form"}]})
    reps["two"][0].subflows[1].established = True
    row = evaluate(f, reps)
    assert row.verdict == "inconclusive"  # seen in 1 of 2: the repetitions disagree
    assert "a subflow on path B with icmp_mtus contains 1500: in 1 of 1 rep" in row.evidence
    assert "a subflow on path B with established = True in two: in 1 of 2 reps" in row.evidence
    assert row.checks[1].source == "convention: a subflow the lab configures must form"
    reps["two"][1].subflows[1].established = True
    assert evaluate(f, reps).verdict == "holds"
    reps["two"][0].subflows[1].established = False
    reps["two"][1].subflows[1].established = False
    assert evaluate(f, reps).verdict == "does not hold"
    with pytest.raises(ValidationError):
        Finding.model_validate({"id": "f", "scenario": "x", "statement": "s", "where": "w",
                                "expect": {"fact": "established", "contains": 1500}})


def test_a_capture_fact_no_repetition_recorded_is_not_measurable_not_failed() -> None:
    reps = {"two": repetitions([rec("two", 1, 1.0), rec("two", 2, 1.0)])}
    f = Finding.model_validate({"id": "j", "scenario": "two", "statement": "s", "where": "w",
                                "expect": {"fact": "syn_mss", "path": "B", "equals": 8960}})
    row = evaluate(f, reps)  # records made before the field: nothing to judge
    assert row.verdict == "not measurable" and "recorded syn_mss" in row.evidence
    reps["two"][0].subflows[1].syn_mss = 8960
    assert evaluate(f, reps).verdict == "inconclusive"  # one of two: the other's SYN not captured
    reps["two"][1].subflows[1].syn_mss = 8960
    assert evaluate(f, reps).verdict == "holds"
    reps["two"][1].subflows[1].syn_mss = 1460
    reps["two"][0].subflows[1].syn_mss = 1460
    assert evaluate(f, reps).verdict == "does not hold"


def test_not_measurable_gives_its_reason() -> None:
    f = Finding.model_validate({"id": "p", "scenario": None, "statement": "s", "where": "w",
                                "not_measurable": "needs the patched kernel"})
    row = evaluate(f, REPS)
    assert row.verdict == "not measurable"
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
    assert findings_table(pub, []) and all(r.verdict == "not measurable" for r in findings_table(pub, []))


def finding(fid: str, expect: Any) -> Finding:
    return Finding.model_validate({"id": fid, "scenario": "s", "statement": "x", "where": "y", "expect": expect})


def test_extremes_are_claims_about_every_or_some_repetition() -> None:
    """A metric aggregated as an extreme (max_seg: the largest over repetitions), or a check
    that names min/max, is decided without an interval: some/every repetition."""
    segs = {"s": list(repetitions([rec("s", 1, 9.0, seg_b=1000), rec("s", 2, 9.0, seg_b=1448)]))}
    seg = evaluate(finding("g", {"metric": "max_seg", "path": "B", "op": ">=", "value": 1448}), segs)
    assert seg.verdict == "holds" and seg.checks[0].low is None and "some repetition" in seg.evidence
    every = evaluate(finding("h", {"metric": "goodput_mbps", "op": ">=", "value": 9, "statistic": "min"}),
                     _reps(s=[8.0, 10.0]))
    assert every.verdict == "does not hold" and "every repetition" in every.evidence


def test_a_source_is_kind_and_text() -> None:
    e = exp(metric="goodput_mbps", op="<", value=1, source="paper: Fig 9, p. 11: 'a 25% improvement'")
    assert e.source is not None and e.source.kind == "paper" and e.source.text.startswith("Fig 9")
    for bad in ("Fig 9", "guess: it looks right", "paper:   "):
        with pytest.raises(ValidationError, match="KIND: text"):
            exp(metric="goodput_mbps", op="<", value=1, source=bad)


def test_an_old_summary_row_reads_as_a_verdict() -> None:
    from mptcplab.record.model import FindingRow
    assert FindingRow.model_validate({"id": "x", "holds_here": True, "within_spread": True}).verdict == "holds"
    assert FindingRow.model_validate({"id": "x", "holds_here": None}).verdict == "not measurable"


def test_two_statistics_of_the_same_repetitions_are_paired() -> None:
    """Before and after within one scenario: each repetition's difference, so the variation
    between repetitions (here 10 to 50) does not hide a shift every repetition shows."""
    reps = _reps(s=[10.0, 20.0, 30.0, 40.0, 50.0])
    e = exp(metric="goodput_mbps", op=">", than={"scenario": "s", "metric": "goodput_min_mbps"})
    c, ev = check(e, "s", reps)
    assert c.method is not None and c.method.startswith("paired") and c.n == [5] and "sign-test" in ev


def test_an_extreme_says_whether_it_is_about_every_or_some_repetition() -> None:
    from mptcplab.metricdecl import extreme_reading
    assert extreme_reading("max", "<=").endswith("every repetition")
    assert extreme_reading("max", ">").endswith("some repetition")
    assert extreme_reading("min", ">=").endswith("every repetition")
    assert extreme_reading("min", "<").endswith("some repetition")
