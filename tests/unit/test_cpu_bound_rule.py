"""The CPU-bound rule (record/validity.py): iperf3 above 90 % CPU voids a repetition's
timing unless its scenario measures exactly that (``cpu_bound: true``: labs/rcvbuf's
DSS-checksum scenarios), and a campaign merge applies the lab's declaration to rounds
recorded before it."""

from __future__ import annotations

from pathlib import Path

from mptcplab.lab.loader import load_lab
from mptcplab.record.validity import cpu_bound_reason, exempt


def test_the_rule_and_its_exemption() -> None:
    why = cpu_bound_reason("dss-csum-off-mtu1500", 1, [93.2, None, 12.0], declared=False)
    assert why == "dss-csum-off-mtu1500 rep 1: iperf3 reports 93% CPU: the measurement was CPU-bound"
    assert cpu_bound_reason("dss-csum-off-mtu1500", 1, [93.2], declared=True) is None
    assert cpu_bound_reason("s", 1, [90.0, 5.0], declared=False) is None      # at the bound: not above
    assert cpu_bound_reason("s", 1, [None], declared=False) is None           # no accounting: nothing said
    assert exempt(why, {"dss-csum-off-mtu1500"}) and not exempt(why, {"dss-csum-on-mtu1500"})
    # another reason about the same scenario is never exempt
    assert not exempt("dss-csum-off-mtu1500 rep 1: emulated links out of tolerance", {"dss-csum-off-mtu1500"})


def test_rcvbuf_declares_its_checksum_scenarios_and_nothing_else() -> None:
    lab = load_lab("labs/rcvbuf")
    declared = {sc.name for sc in lab.scenarios if sc.body.cpu_bound}
    assert declared == {f"dss-csum-{c}-mtu{m}" for c in ("off", "on") for m in (1500, 4000, 9000)}


def test_merge_applies_the_declaration_to_rounds_recorded_before_it() -> None:
    from mptcplab.campaign.merge import ItemRun, merge_runs
    from mptcplab.record.model import Manifest, MptcpVerdict, Repetition
    from mptcplab.results.summary import build_summary_model

    def run(n: int, invalid: list[str]) -> ItemRun:
        reps = [Repetition(name="dss", rep=1, goodput_mbps=900.0, calibration_ok=True,
                           mptcp=MptcpVerdict(requested=True))]
        s = build_summary_model("lab", f"r{n}", "6.18", True, False, reps, None, invalid, {}, [],
                                repetitions_per_scenario=1)
        return ItemRun(f"i{n}", "host", "lab", n, Path(f"/nonexistent/{n}"), s,
                       Manifest.model_validate({"lab": "lab", "run_id": f"r{n}", "kernel": "6.18"}))

    flagged = cpu_bound_reason("dss", 1, [93.0], declared=False)
    assert flagged is not None
    other = "dss rep 1: emulated links out of tolerance"
    runs = [run(1, [flagged]), run(2, [])]
    before = merge_runs("c", "lab", "host", {}, runs, None)
    # undeclared, the flag drops round 1's repetition: one of two planned left
    assert not before.summary.valid
    assert [(d.scenario, d.rep, d.reasons) for d in before.summary.dropped] == [("dss", 1, [flagged])]
    assert before.summary.invalid_reasons == ["dss: 1 of 2 planned repetitions valid (1 dropped; "
                                              "re-measure bound 0 reached)"]
    after = merge_runs("c", "lab", "host", {}, runs, None, cpu_bound={"dss"})
    assert after.summary.valid and after.summary.invalid_reasons == []
    assert any("round 1: 1 CPU-bound flag(s)" in n for n in after.notes), after.notes
    # what else made a round invalid stays
    still = merge_runs("c", "lab", "host", {}, [run(1, [flagged, other])], None, cpu_bound={"dss"})
    assert [d.reasons for d in still.summary.dropped] == [[other]]
    assert not still.summary.valid
