"""Planning: the matrix as work items, the shuffle's determinism, overrides, the dry run."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from mptcplab.campaign.planner import Overrides, ordered, plan
from mptcplab.campaign.schema import load_campaign
from mptcplab.cli import main

REPO = Path(__file__).resolve().parents[2]
CAMPAIGN = f"""name: c2
labs:
  - lab: {REPO / 'labs/mtu'}
    scenarios: [tcp-a, tcp-b]
  - lab: {REPO / 'labs/sndbuf'}
targets:
  - name: here
  - {{name: box-a, kind: ansible, host: alpha}}
inventory: hosts.ini
repetitions: 3
"""


@pytest.fixture
def campaign_file(tmp_path: Path) -> Path:
    (tmp_path / "hosts.ini").write_text("alpha ansible_connection=local\n")
    f = tmp_path / "c.yml"
    f.write_text(CAMPAIGN)
    return f


def test_matrix_is_labs_x_targets_x_rounds(campaign_file: Path) -> None:
    c, base = load_campaign(campaign_file)
    items = plan(c, base, str(campaign_file))
    assert len(items) == 2 * 2 * 3
    assert len({i.id for i in items}) == len(items)
    mtu = [i for i in items if i.lab == "mtu"]
    assert {i.scenarios for i in mtu} == {("tcp-a", "tcp-b")}
    sndbuf = next(i for i in items if i.lab == "sndbuf")
    assert len(sndbuf.scenarios) > 1  # no list: every scenario of the lab
    assert sorted(i.round for i in mtu if i.target.name == "here") == [1, 2, 3]


def test_shuffle_is_determined_by_the_seed(campaign_file: Path) -> None:
    c, base = load_campaign(campaign_file)
    items = plan(c, base, str(campaign_file))
    a, b = ordered(items, 42, True), ordered(items, 42, True)
    assert [i.id for i in a] == [i.id for i in b]
    assert sorted(i.id for i in a) == sorted(i.id for i in items)  # a permutation: nothing lost or doubled
    others = {tuple(i.id for i in ordered(items, s, True)) for s in range(5)}
    assert len(others) > 1, "different seeds must be able to give different orders"
    assert [i.id for i in ordered(items, 42, False)] == [i.id for i in items]


def test_overrides_make_other_items(campaign_file: Path) -> None:
    c, base = load_campaign(campaign_file)
    full = plan(c, base, str(campaign_file))
    quick = plan(c, base, str(campaign_file), Overrides(quick=True))
    assert not {i.id for i in full} & {i.id for i in quick}, "a quick result must never count as a full one"
    only = plan(c, base, str(campaign_file), Overrides(scenarios=["tcp-b"], repetitions=1, targets=["here"]))
    assert [(i.lab, i.scenarios, i.target.name) for i in only] == [("mtu", ("tcp-b",), "here")]


def test_dry_run_lists_items_and_exact_commands(campaign_file: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    argv = ["campaign", str(campaign_file), "--out", str(out), "--dry-run", "--seed", "7", "--quick",
            "--lab", "mtu", "--reps", "1"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert not out.exists(), "a dry run creates nothing"
    assert "2 work item(s), shuffled with seed 7" in text
    cmds = [shlex.split(line) for line in text.splitlines() if line and not line.startswith("#")]
    local = next(c for c in cmds if c[0] == sys.executable)
    assert local[1:4] == ["-m", "mptcplab.cli", "run"]
    assert local[local.index("--reps") + 1] == "1" and "--quick" in local
    assert [local[k + 1] for k, w in enumerate(local) if w == "--scenario"] == ["tcp-a", "tcp-b"]
    res = Path(local[local.index("--results") + 1])
    assert res.parent.parent == out / "items" and res.name == "results"
    ans = next(c for c in cmds if c[0] == "ansible-playbook")
    assert ans[ans.index("--limit") + 1] == "alpha"
    assert ans[ans.index("-i") + 1] == str(tmp_path / "hosts.ini")
    assert ans[3].endswith("ansible/campaign-item.yml") and Path(ans[3]).is_file()
    vars_line = next(line for line in text.splitlines() if "ansible-vars.json:" in line)
    v = json.loads(vars_line.split(": ", 1)[1])
    assert v["campaign_target"] == "box-a" and "--quick" in v["campaign_engine_args"]
    assert v["campaign_engine_args"][:2] == ["run", "@LAB@"]
    # the same seed, the same order
    assert main(argv) == 0
    assert capsys.readouterr().out == text


SUBSET_CAMPAIGN = f"""name: c3
labs:
  - lab: {REPO / 'labs/rcvbuf'}
    subset: paper
targets:
  - name: here
repetitions: 2
"""


def test_subset_entry_runs_the_labs_subset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from mptcplab.lab.loader import load_lab
    from mptcplab.run import RunOptions, select_scenarios

    f = tmp_path / "c.yml"
    f.write_text(SUBSET_CAMPAIGN)
    c, base = load_campaign(f)
    items = plan(c, base, str(f))
    lab = load_lab(REPO / "labs/rcvbuf")
    # the same selection as `run --subset paper`
    run_opts = RunOptions.with_subset(lab, "paper", quick=False, reps=1, scenarios=None, results_root=tmp_path)
    want = tuple(s.name for s in select_scenarios(lab, run_opts.scenarios))
    assert len(items) == 2 and {(i.subset, i.scenarios) for i in items} == {("paper", want)}
    assert 0 < len(want) < len(lab.scenarios)
    # a subset is another measurement than the same scenarios named one by one
    listed = f.read_text().replace("subset: paper", f"scenarios: [{', '.join(want)}]")
    f.write_text(listed)
    c2, _ = load_campaign(f)
    assert not {i.id for i in items} & {i.id for i in plan(c2, base, str(f))}
    # --scenario narrows a subset entry to plain scenarios: no longer the subset
    f.write_text(SUBSET_CAMPAIGN)
    narrowed = plan(c, base, str(f), Overrides(scenarios=[want[0]], repetitions=1))
    assert [(i.subset, i.scenarios) for i in narrowed] == [(None, (want[0],))]

    out = tmp_path / "out"
    assert main(["campaign", str(f), "--out", str(out), "--dry-run", "--seed", "3"]) == 0
    text = capsys.readouterr().out
    assert text.count(f"# runs subset paper: {' '.join(want)}") == 2, text
    cmds = [shlex.split(line) for line in text.splitlines() if line and not line.startswith("#")]
    assert len(cmds) == 2
    for cmd in cmds:
        # the engine applies the subset itself (selection, manifest `subset`); rounds are --reps 1
        assert cmd[cmd.index("--subset") + 1] == "paper" and "--scenario" not in cmd
        assert cmd[cmd.index("--reps") + 1] == "1"


def test_work_item_record_names_the_subset(tmp_path: Path) -> None:
    from mptcplab.campaign.executor import item_record
    from mptcplab.campaign.targets import ansible_vars

    f = tmp_path / "c.yml"
    f.write_text(SUBSET_CAMPAIGN)
    c, base = load_campaign(f)
    item = plan(c, base, str(f))[0]
    assert item_record(item)["subset"] == "paper"
    assert item.id.startswith("rcvbuf__here__r1__")
    args = ansible_vars(item, tmp_path)["campaign_engine_args"]
    assert args[args.index("--subset") + 1] == "paper"


def test_max_items_runs_that_many_and_leaves_the_rest_for_a_rerun(campaign_file: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A campaign longer than one sitting (labs/rcvbuf's five rounds of ~80 min) runs in parts:
    --max-items N runs N unfinished items, the rest are "left", and the same command again
    continues with them."""
    from mptcplab.campaign import executor

    c, base = load_campaign(campaign_file)
    order = [i for i in plan(c, base, str(campaign_file)) if i.target.name == "here"][:3]
    done: set[str] = set()
    ran: list[str] = []

    def fake_run(out: Path, item: Any, inventory: Any, echo: Any) -> tuple[int, Path | None]:
        echo("[1/2] tcp-a rep 1/1: elapsed 0:00")
        ran.append(item.id)
        done.add(item.id)
        return 0, tmp_path / item.id

    monkeypatch.setattr(executor, "run_item", fake_run)
    monkeypatch.setattr(executor, "finished", lambda out, i: (tmp_path / i.id) if i.id in done else None)
    lines: list[str] = []
    first = executor.execute(tmp_path / "out", order, None, log=lines.append, max_items=2)
    assert [o.status for o in first] == ["done", "done", "left"] and ran == [i.id for i in order[:2]]
    assert "2 of them now (--max-items)" in lines[0] and lines[1].startswith("[1/2] ")
    # the item's progress lines under its lab and round, then the campaign's own estimate
    assert lines[2] == f"    {order[0].lab} r{order[0].round}: [1/2] tcp-a rep 1/1: elapsed 0:00"
    assert next(x for x in lines if x.startswith("campaign: 1 of 2 item(s) run, about "))
    second = executor.execute(tmp_path / "out", order, None, log=lines.append, max_items=2)
    assert [o.status for o in second] == ["skipped", "skipped", "done"] and ran[-1] == order[2].id
    third = executor.execute(tmp_path / "out", order, None, log=lines.append)
    assert [o.status for o in third] == ["skipped"] * 3 and len(ran) == 3


def test_max_items_below_one_is_a_one_line_error(campaign_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["campaign", str(campaign_file), "--max-items", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--max-items" in err[0] and "0: must be 1 or more" in err[0]
