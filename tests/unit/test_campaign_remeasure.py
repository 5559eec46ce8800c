"""Per-repetition validity (issue 32, item 3): a repetition with a problem of its own is
dropped from the merged run and listed, the findings are judged on the others, the campaign
re-measures (bounded by ``remeasure``) until each scenario has the planned n valid ones, and
a problem that names no repetition still voids the merged run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mptcplab.campaign import executor
from mptcplab.campaign.compare import lab_section
from mptcplab.campaign.merge import ItemRun, merge, merge_runs
from mptcplab.campaign.planner import WorkItem, plan
from mptcplab.campaign.schema import load_campaign
from mptcplab.cli import main
from mptcplab.lab.loader import load_lab
from mptcplab.record import store
from mptcplab.record.model import Manifest, MptcpVerdict, Repetition, Subflow, Summary
from mptcplab.results.summary import build_summary_model

REPO = Path(__file__).resolve().parents[2]
MTU = REPO / "labs" / "mtu"
FINDING = "tcp-segments-fit-bottleneck"  # labs/mtu: median segment on path B <= 1460, in tcp-b
BAD = "tcp-b rep 1: capture at client:eth0 dropped 5 packets"
CAMPAIGN = f"""name: rm
labs:
  - lab: {MTU}
    scenarios: [tcp-b]
targets:
  - name: here
repetitions: 3
remeasure: 2
shuffle: false
"""


def _summary(run_id: str, reasons: list[str], seg: float = 1448) -> Summary:
    rep = Repetition(name="tcp-b", rep=1, goodput_mbps=90.0, calibration_ok=True, mptcp=MptcpVerdict(requested=False),
                     subflows=[Subflow(path="B", share=1.0, median_seg=seg, max_seg=int(seg), established=True,
                                       icmp_frag_needed=1, icmp_mtus=[1500])])
    return build_summary_model("mtu", run_id, "6.18.0", True, False, [rep], load_lab(MTU).published, list(reasons),
                               {"emulated": False}, [], repetitions_per_scenario=1)


def _runs(tmp: Path, reasons: dict[int, list[str]], rounds: int) -> list[ItemRun]:
    """``rounds`` rounds of tcp-b, in memory; ``reasons``: each round's invalid reasons (such a
    round's segments do not fit the bottleneck: were it counted, the finding would not hold)."""
    return [ItemRun(f"mtu__here__r{k}__abcd0000", "here", "mtu", k, tmp / f"r{k}",
                    _summary(f"20261128T0000{k:02d}Z-abcd", reasons.get(k, []), 8948 if reasons.get(k) else 1448),
                    Manifest.model_validate({"lab": "mtu", "run_id": f"r{k}", "complete": True, "kernel": "6.18.0"}))
            for k in range(1, rounds + 1)]


def _merged(tmp: Path, reasons: dict[int, list[str]], rounds: int, planned: int | None = 3,
            remeasure: int = 0) -> Summary:
    return merge_runs("rm", "mtu", "here", {}, _runs(tmp, reasons, rounds), load_lab(MTU).published, set(),
                      planned, remeasure).summary


def _finding_n(s: Summary) -> list[int]:
    f = next(f for f in s.findings if f.id == FINDING)
    return f.checks[0].n


def test_a_repetition_with_its_own_problem_is_dropped_and_listed(tmp_path: Path) -> None:
    s = _merged(tmp_path, {2: [BAD]}, 3)
    assert [r.rep for r in s.reps_of("tcp-b")] == [1, 3], "the findings and aggregates use the others"
    assert [(d.scenario, d.rep, d.reasons, d.surplus) for d in s.dropped] == [("tcp-b", 2, [BAD], False)]
    agg = s.aggregate("tcp-b")
    assert _finding_n(s) == [2] and agg is not None and agg.n == 2
    assert not s.valid
    assert s.invalid_reasons == ["tcp-b: 2 of 3 planned repetitions valid (1 dropped; re-measure bound 0 reached)"]


def test_an_extra_round_makes_up_the_planned_n(tmp_path: Path) -> None:
    s = _merged(tmp_path, {2: [BAD]}, 4, remeasure=2)
    assert s.valid and s.invalid_reasons == [] and s.repetitions == 3
    assert [r.rep for r in s.reps_of("tcp-b")] == [1, 3, 4] and _finding_n(s) == [3]
    assert next(f for f in s.findings if f.id == FINDING).verdict == "holds", "judged without the dropped one"
    assert [d.rep for d in s.dropped] == [2]


def test_valid_repetitions_beyond_n_are_left_out_and_said_so(tmp_path: Path) -> None:
    col = merge_runs("rm", "mtu", "here", {}, _runs(tmp_path, {2: [BAD]}, 5), load_lab(MTU).published, set(), 3, 2)
    s = col.summary
    assert s.valid and [r.rep for r in s.reps_of("tcp-b")] == [1, 3, 4]
    assert [(d.rep, d.surplus) for d in s.dropped] == [(2, False), (5, True)]
    assert "round 5: `tcp-b` valid, beyond the planned 3: left out" in col.notes
    # compare says it too: the count in the columns table, each dropped one under the notes
    lines, _ = lab_section("mtu", [col])
    assert f"- here (6.18.0): dropped: round 2 of `tcp-b`: {BAD}" in lines
    assert any("| dropped |" in x for x in lines)


def test_a_short_scenario_with_rounds_left_says_how_many_ran(tmp_path: Path) -> None:
    s = _merged(tmp_path, {2: [BAD], 4: [BAD]}, 4, remeasure=2)
    assert s.invalid_reasons == ["tcp-b: 2 of 3 planned repetitions valid (2 dropped; 1 of 2 re-measure round(s) run)"]
    s = _merged(tmp_path, {}, 2)
    assert s.invalid_reasons == ["tcp-b: 2 of 3 planned repetitions valid (0 dropped; 2 of 3 planned rounds finished)"]


def test_a_reason_that_names_no_repetition_still_voids_the_run(tmp_path: Path) -> None:
    s = _merged(tmp_path, {1: ["the host's clock jumped"], 2: ["tcp-a rep 1: not a scenario of this round"]}, 3)
    assert not s.valid and s.dropped == []
    assert s.invalid_reasons == ["round 1: the host's clock jumped",
                                 "round 2: tcp-a rep 1: not a scenario of this round"]
    assert [r.rep for r in s.reps_of("tcp-b")] == [1, 2, 3]


def test_without_a_planned_n_every_round_is_planned(tmp_path: Path) -> None:
    """A campaign directory written before ``repetitions`` was recorded: n is its rounds."""
    s = _merged(tmp_path, {2: [BAD]}, 3, planned=None)
    assert s.invalid_reasons == ["tcp-b: 2 of 3 planned repetitions valid (1 dropped; re-measure bound 0 reached)"]


def test_an_old_summary_without_the_field_loads(tmp_path: Path) -> None:
    data = _summary("20261128T000001Z-abcd", []).to_json()
    data.pop("dropped")
    assert Summary.model_validate(data).dropped == []


# -- the executor: extra rounds, bounded

@pytest.fixture
def order(tmp_path: Path) -> list[WorkItem]:
    f = tmp_path / "c.yml"
    f.write_text(CAMPAIGN)
    c, base = load_campaign(f)
    items = plan(c, base, str(f))
    executor.write_state(tmp_path / "out", c, f, 1, False, items, None)
    return items


def _fake_runs(monkeypatch: pytest.MonkeyPatch, bad_rounds: set[int]) -> list[int]:
    """run_item writes a complete run of the item's round, with BAD when its round is in ``bad_rounds``."""
    ran: list[int] = []

    def fake(out: Path, item: WorkItem, inventory: Any, echo: Any) -> tuple[int, Path | None]:
        ran.append(item.round)
        d = executor.item_dir(out, item) / "results" / "mtu" / f"20261128T0000{item.round:02d}Z-abcd"
        d.mkdir(parents=True)
        store.write_json(d / "summary.json", _summary(d.name, [BAD] if item.round in bad_rounds else []).to_json())
        store.write_json(d / "manifest.json", {"lab": "mtu", "run_id": d.name, "complete": True, "kernel": "6.18.0"})
        return 0, d

    monkeypatch.setattr(executor, "run_item", fake)
    return ran


def test_the_executor_remeasures_until_n_is_valid(order: list[WorkItem], tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    ran = _fake_runs(monkeypatch, {2})
    lines: list[str] = []
    outcomes = executor.execute(tmp_path / "out", order, None, log=lines.append, remeasure=2)
    assert ran == [1, 2, 3, 4] and [o.status for o in outcomes] == ["done"] * 4
    why = next(x for x in lines if "re-measuring" in x)
    assert why == (f"campaign: mtu on here: tcp-b has 2 of 3 planned repetitions valid (dropped: round 2: {BAD}); "
                   "re-measuring: round 4 (extra round 1 of at most 2)")
    state = json.loads((tmp_path / "out" / "campaign.json").read_text())
    assert state["repetitions"] == 3 and state["remeasure"] == 2
    assert [state["items"][i]["round"] for i in state["order"]] == [1, 2, 3, 4]
    (col,) = merge(tmp_path / "out", write=False)
    assert col.summary.valid and [d.rep for d in col.summary.dropped] == [2]
    # resumed: nothing more runs, and the extra round is still one of the campaign's
    again = executor.execute(tmp_path / "out", order, None, log=lines.append, remeasure=2)
    assert ran == [1, 2, 3, 4] and [o.status for o in again] == ["skipped"] * 4


def test_the_executor_stops_at_the_bound(order: list[WorkItem], tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    ran = _fake_runs(monkeypatch, {2, 4, 5})
    lines: list[str] = []
    executor.execute(tmp_path / "out", order, None, log=lines.append, remeasure=2)
    assert ran == [1, 2, 3, 4, 5]
    assert lines[-1].endswith("; re-measure bound 2 reached")
    (col,) = merge(tmp_path / "out", write=False)
    assert not col.summary.valid and [d.rep for d in col.summary.dropped] == [2, 4, 5]
    assert col.summary.invalid_reasons == [
        "tcp-b: 2 of 3 planned repetitions valid (3 dropped; re-measure bound 2 reached)"]


def test_no_remeasure_no_extra_round(order: list[WorkItem], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ran = _fake_runs(monkeypatch, {2})
    executor.execute(tmp_path / "out", order, None, log=lambda _: None)
    assert ran == [1, 2, 3]


def test_max_items_leaves_the_extra_round_for_a_rerun(order: list[WorkItem], tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    ran = _fake_runs(monkeypatch, {2})
    first = executor.execute(tmp_path / "out", order, None, log=lambda _: None, max_items=3, remeasure=2)
    assert ran == [1, 2, 3] and first[-1].status == "left" and first[-1].item.round == 4
    executor.execute(tmp_path / "out", order, None, log=lambda _: None, max_items=3, remeasure=2)
    assert ran == [1, 2, 3, 4]


def test_extra_items_are_the_rounds_after_the_planned(order: list[WorkItem]) -> None:
    extras = executor.extra_items(order, 2)
    assert [i.round for i in extras] == [4, 5] and extras[0].key == order[0].key


def test_remeasure_is_bounded_by_repetitions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "c.yml"
    f.write_text(CAMPAIGN.replace("remeasure: 2", "remeasure: 4"))
    assert main(["campaign", str(f), "--dry-run"]) == 2
    assert "remeasure (4) is at most repetitions (3)" in capsys.readouterr().err


def test_the_dry_run_says_the_bound(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "c.yml"
    f.write_text(CAMPAIGN)
    assert main(["campaign", str(f), "--dry-run", "--out", str(tmp_path / "out")]) == 0
    assert "; up to 2 extra round(s) per lab x target where repetitions are dropped" in capsys.readouterr().out
