"""Aggregation and the published-vs-this-run comparison, on hand-made records
(rendering and arithmetic only; real measurements are in tests/integration)."""

import json
from typing import Any

import pytest

from mptcplab.lab.schema import Published
from mptcplab.record.model import FORMAT_VERSION, Repetition, ResultsFormatError, Warning
from mptcplab.results.aggregate import aggregates, per_rep_values, scenario_value
from mptcplab.results.read import load_summary, parse_summary
from mptcplab.results.summary import build_summary, findings_table, published_table, repetitions

KVM = {"virtualization": "kvm", "software_emulated_cpu": False, "source": "systemd-detect-virt"}


def rec(name, rep, goodput, share_b, max_seg_b=1448, icmp_b=3):
    return {"name": name, "rep": rep, "goodput_mbps": goodput, "warnings": ["odd"] if rep == 1 else [],
            "mptcp": {"requested": True, "verified": share_b > 0},
            "subflows": [
                {"path": "A", "share": 1 - share_b, "median_seg": 8948, "max_seg": 8948, "icmp_frag_needed": 0},
                {"path": "B", "share": share_b, "median_seg": max_seg_b, "max_seg": max_seg_b,
                 "icmp_frag_needed": icmp_b},
            ]}


PUB = Published.model_validate({
    "source": {"id": "x", "title": "t", "authors": ["a"], "year": 2025, "document": "d", "kernel": "5.4",
               "testbed": "m"},
    "values": [{"id": "g", "scenario": "s1", "metric": "goodput_mbps", "value": 44.3, "unit": "Mbit/s",
                "where": "Fig 1"},
               {"id": "seg", "scenario": "s1", "metric": "max_seg", "path": "B", "value": 1448, "unit": "B",
                "where": "Fig 2"},
               {"id": "none", "scenario": None, "metric": "goodput_mbps", "value": 56.8, "unit": "Mbit/s",
                "where": "Fig 3", "kernel": "5.4 + patch"}],
    "findings": [{"id": "idle", "scenario": "s1", "statement": "B carries nothing", "where": "10.5.1",
                  "expect": {"metric": "subflow_share", "path": "B", "op": "==", "value": 0}},
                 {"id": "free", "scenario": "s1", "statement": "prose only", "where": "11"}],
})


def test_aggregates_mean_and_spread():
    records = repetitions([rec("s1", 1, 90.0, 0.4), rec("s1", 2, 100.0, 0.2), rec("s2", 1, 50.0, 0.0)])
    agg = {a.scenario: a for a in aggregates(records)}
    assert agg["s1"].n == 2 and agg["s1"].goodput_mean == 95.0
    assert agg["s1"].goodput_std == pytest.approx(7.071, abs=1e-3)
    assert agg["s1"].paths["B"].share_mean_over_reps == pytest.approx(0.3)
    assert agg["s2"].verified_reps == 0
    assert agg["s2"].goodput_std is None  # one repetition has no spread; 0 would claim one


def test_one_definition_per_segment_aggregate():
    """median_seg: per rep the largest median among the path's subflows, over reps the median;
    max_seg: the max throughout. The summary, the paper table and findings use the same."""
    reps = repetitions([rec("s1", 1, 90.0, 0.4, max_seg_b=1436), rec("s1", 2, 90.0, 0.4, max_seg_b=1448),
                        rec("s1", 3, 90.0, 0.4, max_seg_b=536)])
    reps[0].subflows.append(reps[0].subflows[1].model_copy(update={"median_seg": 1000}))  # 2nd subflow on B
    assert per_rep_values(reps, "median_seg", "B") == [1436, 1448, 536]
    v = scenario_value(reps, "median_seg", "B")
    assert (v.value, v.statistic, v.std, v.n) == (1436, "median over reps", None, 3)
    assert scenario_value(reps, "max_seg", "B").value == 1448
    path = aggregates(reps)[0].paths["B"]
    assert path.median_seg_median_over_reps == 1436 and path.max_seg_max_over_reps == 1448
    assert path.icmp_frag_needed_per_rep == [6, 3, 3] and path.icmp_frag_needed_total == 12
    pub = Published.model_validate({**PUB.model_dump(), "values": [
        {"id": "m", "scenario": "s1", "metric": "median_seg", "path": "B", "value": 1448, "unit": "B", "where": "x"}]})
    row = published_table(pub, reps, "6.18")[0]
    assert (row.this_value, row.this_statistic, row.this_std) == (1436, "median over reps", None)


def test_published_rows_state_both_kernels():
    rows = {r.id: r for r in published_table(PUB, [rec("s1", 1, 90.0, 0.4), rec("s1", 2, 100.0, 0.2)], "6.18")}
    assert rows["g"].paper_value == 44.3 and rows["g"].this_value == 95.0 and rows["g"].this_n == 2
    assert rows["g"].this_statistic == "mean over reps" and rows["g"].this_std == pytest.approx(7.071, abs=1e-3)
    assert rows["g"].paper_kernel == "5.4" and rows["g"].this_kernel == "6.18"
    assert rows["seg"].this_value == 1448 and rows["seg"].this_statistic == "max over reps"
    assert rows["none"].this_value is None and rows["none"].paper_kernel == "5.4 + patch"


def test_findings_are_evaluated_not_assumed():
    f = {r.id: r for r in findings_table(PUB, [rec("s1", k, 90.0, 0.4) for k in range(1, 6)])}
    assert f["idle"].verdict == "does not hold" and "0.4" in f["idle"].evidence
    f = {r.id: r for r in findings_table(PUB, [rec("s1", k, 90.0, 0.0) for k in range(1, 6)])}
    assert f["idle"].verdict == "holds"
    assert f["free"].verdict == "not measurable"
    one = {r.id: r for r in findings_table(PUB, [rec("s1", 1, 90.0, 0.0)])}
    assert one["idle"].verdict == "inconclusive" and one["idle"].checks[0].leans is True


def test_missing_segments_are_absent_not_zero():
    r = rec("s1", 1, 90.0, 0.0)
    r["subflows"][1]["max_seg"] = None
    assert per_rep_values(repetitions([r]), "max_seg", "B") == [None]
    assert scenario_value(repetitions([r]), "max_seg", "B").value is None


def test_summary_round_trips_through_the_model(tmp_path):
    s = build_summary("lab", "id", "6.18", True, False, [rec("s1", 1, 90.0, 0.4)], PUB, [], KVM,
                      repetitions_per_scenario=1)
    assert s["format_version"] == FORMAT_VERSION
    assert s["scenarios"][0]["warnings"] == [{"code": "unclassified", "message": "odd", "path": None}]
    back = parse_summary(json.loads(json.dumps(s)))
    assert back.to_json() == s


def test_warning_codes_and_plain_text():
    r = Repetition.model_validate({**rec("s1", 1, 90.0, 0.4),
                                   "warnings": ["text", {"code": "weak-subflow", "message": "B weak", "path": "B"}]})
    assert [(w.code, w.path) for w in r.warnings] == [("unclassified", None), ("weak-subflow", "B")]
    assert str(r.warnings[1]) == "B weak"
    # a runner that appends Warning objects: the summary dumps them as {code, message, path}
    obj = {**rec("s1", 2, 90.0, 0.4), "warnings": [Warning(code="transfer-failed", message="iperf3 stopped")]}
    s = build_summary("lab", "id", "6.18", True, False, [obj], None, [], KVM)
    assert json.loads(json.dumps(s))["scenarios"][0]["warnings"] == [
        {"code": "transfer-failed", "message": "iperf3 stopped", "path": None}]


def test_version0_summary_is_read_with_aggregates_recomputed():
    """A summary.json written before format_version: repetitions and paper rows read as they
    are, aggregates recomputed with today's definitions (format 0's median_seg was a max)."""
    old = {"lab": "lab", "run_id": "id", "kernel": "6.18", "complete": True, "quick": False, "valid": True,
           "scenarios": [rec("s1", 1, 90.0, 0.4, max_seg_b=1436), rec("s1", 2, 90.0, 0.4, max_seg_b=536),
                         rec("s1", 3, 90.0, 0.4, max_seg_b=1448)],
           "aggregates": [{"scenario": "s1", "n": 3, "segments": {"B": {"median_seg": 1448}}}],
           "published": [{"id": "g", "scenario": "s1", "metric": "goodput_mbps", "paper_value": 44.3,
                          "this_mean": 90.0, "this_std": 0.0, "this_n": 3}]}
    s = parse_summary(old)
    assert s.format_version == FORMAT_VERSION
    assert s.aggregates[0].paths["B"].median_seg_median_over_reps == 1436
    assert s.published[0].this_value == 90.0 and s.published[0].this_statistic == "mean over reps"
    assert s.scenarios[0].warnings[0].code == "unclassified"


def test_newer_or_broken_summary_is_refused_in_one_line(tmp_path, capsys):
    with pytest.raises(ResultsFormatError, match=r"format_version: 99 is newer") as e:
        parse_summary({"format_version": 99, "lab": "x", "run_id": "y"}, "run/summary.json")
    assert "\n" not in str(e.value) and "run/summary.json" in str(e.value)
    with pytest.raises(ResultsFormatError, match="format_version: '1' is not a version number"):
        parse_summary({"format_version": "1", "lab": "x", "run_id": "y"}, "s.json")
    with pytest.raises(ResultsFormatError, match="s.json: run_id: not a readable summary: Field required") as e:
        parse_summary({"format_version": 1, "lab": "x"}, "s.json")
    assert "\n" not in str(e.value)
    (tmp_path / "summary.json").write_text("{")
    with pytest.raises(ResultsFormatError, match="not JSON"):
        load_summary(tmp_path)
    # the CLI: one line, exit status 2, as any bad input
    from mptcplab.cli import main

    assert main(["report", str(tmp_path)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_run_kind_follows_the_cpu():
    records = [rec("s1", 1, 90.0, 0.4)]
    tcg = {"virtualization": "qemu", "software_emulated_cpu": True, "source": "systemd-detect-virt"}
    s = build_summary("lab", "id", "6.18", True, False, records, PUB, [], tcg)
    assert s["run_kind"] == "functional-check" and "QEMU without KVM" in s["run_kind_reason"]
    for cpu in ({**tcg, "virtualization": "kvm", "software_emulated_cpu": False},
                {"virtualization": None, "software_emulated_cpu": None, "source": "unknown"}):
        s = build_summary("lab", "id", "6.18", True, False, records, PUB, [], cpu)
        assert s["run_kind"] == "measurement" and s["run_kind_reason"]


def test_timing_problems_invalidate_a_measurement_but_not_a_functional_check():
    """Link calibration and CPU are timing matters: a measurement is invalid with them, a
    functional check lists them; iperf3 errors and capture drops invalidate both."""
    from types import SimpleNamespace

    from mptcplab.run import run_summary as _summary

    bad_links = Repetition.model_validate({**rec("s1", 1, 90.0, 0.4), "calibration_ok": False,
                                          "cpu": {"client": 97.0}})
    dropped = Repetition.model_validate({**rec("s1", 2, 90.0, 0.4), "calibration_ok": True,
                                        "capture_stats": {"client:eth1": {"dropped": 5}}})
    # stand-ins for Lab and RunOptions: _summary reads these attributes only
    lab: Any = SimpleNamespace(name="lab", published=PUB, scale=1.0, scenarios=[])
    opts: Any = SimpleNamespace(quick=True, warnings=[])
    kvm = {"virtualization": "kvm", "software_emulated_cpu": False, "source": "systemd-detect-virt"}
    tcg = {"virtualization": "qemu", "software_emulated_cpu": True, "source": "systemd-detect-virt"}

    m = _summary(lab, "id", {"kernel": "6.18", "platform": kvm}, True, opts, [bad_links, dropped], 2)
    assert not m["valid"] and m["timing_notes"] == []
    assert any("out of tolerance" in r for r in m["invalid_reasons"])
    assert any("CPU-bound" in r for r in m["invalid_reasons"])
    assert any("dropped 5" in r for r in m["invalid_reasons"])

    f = _summary(lab, "id", {"kernel": "6.18", "platform": tcg}, True, opts, [bad_links, dropped], 2)
    assert f["run_kind"] == "functional-check"
    assert f["invalid_reasons"] == ["s1 rep 2: capture at client:eth1 dropped 5 packets"]
    assert any("out of tolerance" in n for n in f["timing_notes"])

    ok = _summary(lab, "id", {"kernel": "6.18", "platform": tcg}, True, opts, [bad_links], 1)
    assert ok["valid"] and ok["timing_notes"]


def test_a_server_that_died_by_itself_invalidates_the_run():
    """A traffic server killed from outside after its client finished: the client's numbers
    look whole, but the server's side of the record is lost (servers_died)."""
    from types import SimpleNamespace

    from mptcplab.run import run_summary as _summary

    died = Repetition.model_validate({**rec("s1", 1, 90.0, 0.4), "calibration_ok": True,
                                     "servers_died": {"main": -9}})
    lab: Any = SimpleNamespace(name="lab", published=PUB, scale=1.0, scenarios=[])
    opts: Any = SimpleNamespace(quick=True, warnings=[])
    kvm = {"virtualization": "kvm", "software_emulated_cpu": False, "source": "systemd-detect-virt"}
    m = _summary(lab, "id", {"kernel": "6.18", "platform": kvm}, True, opts, [died], 1)
    assert not m["valid"]
    assert m["invalid_reasons"] == ["s1 rep 1: the server of flow main died before the run stopped it "
                                    "(killed by signal 9)"]
    sound = died.model_copy(update={"servers_died": {}})
    assert _summary(lab, "id", {"kernel": "6.18", "platform": kvm}, True, opts, [sound], 1)["valid"]
