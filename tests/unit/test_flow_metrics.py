"""Per-flow metrics (mptcplab/metrics/flows.py): a named flow's goodput and share, taken from
the repetition's flows, aggregated over repetitions, and usable in a finding that compares
two flows of one scenario (labs/cc: MPTCP against single-path TCP)."""

from __future__ import annotations

from typing import Any

import pytest

from mptcplab.lab.schema import Expectation
from mptcplab.metrics import METRICS
from mptcplab.record.model import Repetition, Summary
from mptcplab.results.aggregate import scenario_value
from mptcplab.results.findings import check
from mptcplab.results.report import print_table, render_report
from mptcplab.results.summary import build_summary_model
from mptcplab.results.tables import flows_frame, flows_table
from mptcplab.traffic.fairness import shares


def rep(n: int, goodputs: dict[str, float], measured: tuple[str, ...] | None = None) -> Repetition:
    """A repetition record as runner.analyze() builds it: the first flow is the primary one,
    shares and the flow count over the measured flows only."""
    measured = tuple(goodputs) if measured is None else measured
    share = shares({k: v for k, v in goodputs.items() if k in measured})
    flows: list[dict[str, Any]] = [
        {"name": k, "goodput_mbps": v, "role": "measured" if k in measured else "competing", "share": share.get(k)}
        for k, v in goodputs.items()]
    first = next(iter(goodputs))
    return Repetition.model_validate({
        "name": "s", "rep": n, "goodput_mbps": goodputs[first], "flows": flows,
        "fairness": {"flows": len(measured), "jain_index": None, "shares": share}})


#: the platform facts of a host with a real CPU (not a software-emulated one)
HOST = {"virtualization": "none", "software_emulated_cpu": False}
REPS = [rep(1, {"mptcp": 15.0, "tcp": 8.0}), rep(2, {"mptcp": 13.0, "tcp": 10.0})]


def test_both_are_registered_and_take_a_flow() -> None:
    assert METRICS["flow_goodput_mbps"].accepts == {"flow"} and METRICS["flow_goodput_mbps"].scales
    assert METRICS["flow_share"].accepts == {"flow"} and not METRICS["flow_share"].scales


def test_flow_goodput_is_the_named_flows_mean_over_reps() -> None:
    v = scenario_value(REPS, "flow_goodput_mbps", flow="tcp")
    assert v.value == pytest.approx(9.0) and v.n == 2 and v.per_rep == [8.0, 10.0]
    assert v.std == pytest.approx(2 ** 0.5)
    # no flow named: the primary measured flow, the record's top level
    assert scenario_value(REPS, "flow_goodput_mbps").value == pytest.approx(14.0)
    # a flow the repetitions do not have: no value, not zero
    assert scenario_value(REPS, "flow_goodput_mbps", flow="nope").value is None


def test_flow_share_is_the_fraction_of_the_measured_total() -> None:
    v = scenario_value(REPS, "flow_share", flow="mptcp")
    assert v.per_rep == [pytest.approx(15 / 23), pytest.approx(13 / 23)]
    t = scenario_value(REPS, "flow_share", flow="tcp")
    assert v.value is not None and t.value is not None and v.value + t.value == pytest.approx(1.0)


def test_no_share_with_one_measured_flow() -> None:
    # a competing flow does not count: the measured flow alone would have share 1.0 by definition
    alone = [rep(1, {"mptcp": 15.0, "flood": 30.0}, measured=("mptcp",))]
    assert scenario_value(alone, "flow_share", flow="mptcp").value is None
    assert scenario_value(alone, "flow_goodput_mbps", flow="flood").value == 30.0


def test_a_finding_compares_two_flows_of_one_scenario() -> None:
    e = Expectation.model_validate({"metric": "flow_goodput_mbps", "flow": "mptcp", "op": "<",
                                    "than": {"scenario": "s", "flow": "tcp"}})
    c, evidence = check(e, "s", {"s": REPS})
    assert c.leans is False  # 14 is not below 9 (few repetitions: inconclusive, leaning so)
    assert "of flow mptcp" in evidence and "of flow tcp" in evidence
    reverse = Expectation.model_validate({"metric": "flow_goodput_mbps", "flow": "tcp", "op": "<",
                                          "than": {"scenario": "s", "flow": "mptcp"}})
    assert check(reverse, "s", {"s": REPS})[0].leans is True


def two_flow_summary(single_flow_scenario: bool = False) -> Summary:
    recs = [rep(1, {"mptcp": 15.0, "tcp": 8.0}), rep(2, {"mptcp": 13.0, "tcp": 10.0})]
    for r in recs:
        r.name = "pair"
    if single_flow_scenario:
        alone = rep(1, {"main": 20.0})
        alone.name = "alone"
        recs.append(alone)
    return build_summary_model("cc", "r1", "6.99.0-test", True, False, recs, None, [], HOST)


def test_flows_table_has_one_row_per_measured_flow_of_multi_flow_scenarios() -> None:
    s = two_flow_summary(single_flow_scenario=True)
    fr = flows_frame(s)
    # "alone" measures one flow: the scenario table covers it, the flows table leaves it out
    assert list(zip(fr["scenario"], fr["flow"], strict=True)) == [("pair", "mptcp"), ("pair", "tcp")]
    m = fr[fr["flow"] == "mptcp"].iloc[0]
    assert m["goodput_mean"] == pytest.approx(14.0) and m["n"] == 2
    assert m["share_mean"] == pytest.approx((15 / 23 + 13 / 23) / 2)
    table = flows_table(s)
    assert table.iloc[1].tolist()[:4] == ["pair", "tcp", "TCP", "9.00 ± 1.41"]


def test_report_and_terminal_table_show_every_flow() -> None:
    s = two_flow_summary()
    md = render_report(s)
    assert "## Flows measured together" in md and "| pair | tcp | TCP | 9.00 ± 1.41 |" in md
    term = print_table(s)
    assert "flows: goodput (share); Jain" in term and "mptcp 14.00 (0.61); tcp 9.00 (0.39)" in term


def test_a_run_of_single_flow_scenarios_has_no_flows_section() -> None:
    alone = rep(1, {"main": 20.0})
    s = build_summary_model("mtu", "r1", "6.99.0-test", True, False, [alone], None, [], HOST)
    assert flows_frame(s).empty
    assert "Flows measured together" not in render_report(s) and "flows:" not in print_table(s)
