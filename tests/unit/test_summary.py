"""Aggregation and the published-vs-this-run comparison, on hand-made records
(rendering and arithmetic only; real measurements are in tests/integration)."""

from mptcplab.lab.schema import Published
from mptcplab.results.summary import aggregates, build_summary, findings_table, metric_values, published_table


def rec(name, rep, goodput, share_b, max_seg_b=1448, icmp_b=3):
    return {"name": name, "rep": rep, "goodput_mbps": goodput, "warnings": [],
            "mptcp": {"requested": True, "verified": share_b > 0},
            "subflows": [
                {"path": "A", "share": 1 - share_b, "median_seg": 8948, "max_seg": 8948, "icmp_frag_needed": 0},
                {"path": "B", "share": share_b, "median_seg": max_seg_b, "max_seg": max_seg_b, "icmp_frag_needed": icmp_b},
            ]}


PUB = Published.model_validate({
    "source": {"id": "x", "title": "t", "authors": ["a"], "year": 2025, "document": "d", "kernel": "5.4", "testbed": "m"},
    "values": [{"id": "g", "scenario": "s1", "metric": "goodput_mbps", "value": 44.3, "unit": "Mbit/s", "where": "Fig 1"},
               {"id": "seg", "scenario": "s1", "metric": "max_seg", "path": "B", "value": 1448, "unit": "B", "where": "Fig 2"},
               {"id": "none", "scenario": None, "metric": "goodput_mbps", "value": 56.8, "unit": "Mbit/s",
                "where": "Fig 3", "kernel": "5.4 + patch"}],
    "findings": [{"id": "idle", "scenario": "s1", "statement": "B carries nothing", "where": "10.5.1",
                  "expect": {"metric": "subflow_share", "path": "B", "op": "==", "value": 0}},
                 {"id": "free", "scenario": "s1", "statement": "prose only", "where": "11"}],
})


def test_aggregates_mean_and_spread():
    records = [rec("s1", 1, 90.0, 0.4), rec("s1", 2, 100.0, 0.2), rec("s2", 1, 50.0, 0.0)]
    agg = {a["scenario"]: a for a in aggregates(records)}
    assert agg["s1"]["n"] == 2 and agg["s1"]["goodput_mean"] == 95.0
    assert round(agg["s1"]["goodput_std"], 3) == 7.071
    assert round(agg["s1"]["share"]["B"], 3) == 0.3
    assert agg["s2"]["verified_reps"] == 0


def test_published_rows_state_both_kernels():
    rows = {r["id"]: r for r in published_table(PUB, [rec("s1", 1, 90.0, 0.4), rec("s1", 2, 100.0, 0.2)], "6.18")}
    assert rows["g"]["paper_value"] == 44.3 and rows["g"]["this_mean"] == 95.0 and rows["g"]["this_n"] == 2
    assert rows["g"]["paper_kernel"] == "5.4" and rows["g"]["this_kernel"] == "6.18"
    assert rows["seg"]["this_mean"] == 1448
    assert rows["none"]["this_mean"] is None and rows["none"]["paper_kernel"] == "5.4 + patch"


def test_findings_are_evaluated_not_assumed():
    f = {r["id"]: r for r in findings_table(PUB, [rec("s1", 1, 90.0, 0.4)])}
    assert f["idle"]["holds_here"] is False and "0.4" in f["idle"]["evidence"]
    f = {r["id"]: r for r in findings_table(PUB, [rec("s1", 1, 90.0, 0.0)])}
    assert f["idle"]["holds_here"] is True
    assert f["free"]["holds_here"] is None


def test_metric_values_skip_missing_segments():
    r = rec("s1", 1, 90.0, 0.0)
    r["subflows"][1]["max_seg"] = None
    assert metric_values([r], "max_seg", "B") == []


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

    from mptcplab.labrun import _summary

    bad_links = {**rec("s1", 1, 90.0, 0.4), "calibration_ok": False, "cpu": {"client": 97.0}}
    dropped = {**rec("s1", 2, 90.0, 0.4), "calibration_ok": True,
               "capture_stats": {"client:eth1": {"dropped": 5}}}
    lab = SimpleNamespace(name="lab", published=PUB)
    opts = SimpleNamespace(quick=True)
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
