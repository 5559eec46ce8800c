"""The notebooks' helpers (mptcplab/notebook/) and the notebooks themselves against runs that
lack fields: the lab catalogue of the landing notebook, where a quick run can happen, the
list of what a run lacks; mtu.ipynb and index.ipynb executed headless against an old-format
run with no CSV files, no manifest and no findings must say so in a cell, not raise."""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from mptcplab.notebook import quickrun
from mptcplab.notebook.catalog import (
    find_root,
    findings_verdicts,
    latest_run,
    list_labs,
    other_notebooks,
    verdict_table,
)
from mptcplab.notebook.gaps import run_gaps
from mptcplab.record.model import load_manifest
from mptcplab.results.read import load_icmp, load_summary, load_timeseries

REPO = Path(__file__).resolve().parents[2]


def old_run(root: Path) -> Path:
    """A format-0 summary.json (no format_version, kernel, run_kind, published or findings), no
    manifest and no per-repetition CSV files: what an older engine or a copied summary leaves."""
    run = root / "mtu" / "19990101T000000Z-old"
    run.mkdir(parents=True)
    summary: dict[str, Any] = {"lab": "mtu", "run_id": run.name, "complete": True, "quick": True, "scenarios": [
        {"name": "tcp-a", "rep": 1, "goodput_mbps": 91.5, "mptcp": {"requested": False},
         "subflows": [{"path": "A", "bytes": 1000, "share": 1.0}]},
        {"name": "mptcp-bottleneck", "rep": 1, "goodput_mbps": 120.0,
         "mptcp": {"requested": True, "negotiated": True, "verified": True, "subflows": 2,
                   "expected_paths": ["A", "B"]},
         "subflows": [{"path": "A", "bytes": 600, "share": 0.6}, {"path": "B", "bytes": 400, "share": 0.4}]},
    ]}
    (run / "summary.json").write_text(json.dumps(summary))
    (run.parent / "latest").symlink_to(run.name)
    return run


def test_catalog_lists_the_shipped_labs_with_their_papers() -> None:
    labs = {lab.name: lab for lab in list_labs(REPO)}
    assert {"mtu", "sndbuf"} <= set(labs)
    mtu, sndbuf = labs["mtu"], labs["sndbuf"]
    assert mtu.problem is None and mtu.paper and "Manoratne" in mtu.paper and "2025" in mtu.paper
    assert "5.4.230" in (mtu.paper_kernel or "") and "PMTUD" in mtu.description.replace("path MTU discovery", "PMTUD")
    assert mtu.notebook == REPO / "notebooks" / "mtu.ipynb"
    assert sndbuf.paper and "Kato et al." in sndbuf.paper
    assert find_root(REPO / "notebooks") == REPO


def test_catalog_reports_a_broken_lab_and_goes_on(tmp_path: Path) -> None:
    (tmp_path / "labs" / "broken").mkdir(parents=True)
    (tmp_path / "labs" / "broken" / "experiment.yml").write_text("nodes: [\n")
    (tmp_path / "labs" / "notalab").mkdir()
    labs = list_labs(tmp_path)
    assert [lab.name for lab in labs] == ["broken"]
    assert labs[0].problem and labs[0].notebook is None


def test_catalog_finds_labs_and_notebooks_on_disk(tmp_path: Path) -> None:
    """Nothing is listed by hand: a lab directory appears with or without a notebook, a notebook
    of no lab is listed apart, a directory without experiment.yml is not a lab."""
    for lab in ("mtu", "newlab"):
        shutil.copytree(REPO / "labs" / "mtu", tmp_path / "labs" / lab)
    (tmp_path / "labs" / "drafts").mkdir()
    nbs = tmp_path / "notebooks"
    nbs.mkdir()
    for name in ("index.ipynb", "mtu.ipynb", "walkthrough.ipynb", "notes.txt"):
        (nbs / name).write_text("{}")
    labs = list_labs(tmp_path)
    assert [(lab.name, lab.notebook.name if lab.notebook else None, lab.problem) for lab in labs] == [
        ("mtu", "mtu.ipynb", None), ("newlab", None, None)]
    assert [p.name for p in other_notebooks(tmp_path, labs)] == ["walkthrough.ipynb"]
    assert other_notebooks(tmp_path / "nowhere", []) == []


def test_latest_run_and_its_verdicts(tmp_path: Path) -> None:
    never = latest_run(tmp_path, "mtu")
    assert never.summary is None and (never.problem or "").startswith("no run yet")
    # a run that never finished (killed, or still going) has a directory but no latest link
    (tmp_path / "mtu" / "20260101T000000Z-dead").mkdir(parents=True)
    (tmp_path / "mtu" / ".staging-1").mkdir()
    unfinished = latest_run(tmp_path, "mtu")
    assert unfinished.summary is None and (unfinished.problem or "").startswith("no complete run yet (1 run(s)")
    old_run(tmp_path)
    run = latest_run(tmp_path, "mtu")
    assert run.summary is not None and run.problem is None
    table = verdict_table(run.summary)
    assert list(table["scenario"]) == ["tcp-a", "mptcp-bottleneck"]
    assert list(table["MPTCP verified"]) == ["TCP", "1/1"]
    assert findings_verdicts(run.summary).empty
    (tmp_path / "mtu" / "latest" / "summary.json").write_text('{"format_version": 99, "lab": "mtu"}')
    bad = latest_run(tmp_path, "mtu")
    assert bad.summary is None and "newer than this engine" in (bad.problem or "")


def test_gaps_of_an_old_run_name_each_missing_field(tmp_path: Path) -> None:
    run = old_run(tmp_path)
    s = load_summary(run)
    gaps = run_gaps(s, load_manifest(run), load_timeseries(run, s), load_icmp(run, s))
    text = "\n".join(gaps)
    for what in ("`kernel`", "`run_kind`", "`manifest.json`", "`published`", "`findings`", "`median_seg`",
                 "`timeseries.csv`", "`icmp.csv`"):
        assert what in text, (what, text)
    assert "`aggregates`" not in text  # recomputed from the repetitions for format 0


def test_quick_run_plan_says_where_it_can_run(tmp_path: Path) -> None:
    on = tmp_path / "enabled"
    on.write_text("1\n")
    off = tmp_path / "disabled"
    off.write_text("0\n")
    here = quickrun.plan_quick_run("mtu", REPO, environ={}, euid=0, mptcp_enabled=on)
    assert here.command is not None and here.command[-3:] == ["run", "labs/mtu", "--quick"]
    assert here.cwd == REPO
    image = quickrun.plan_quick_run("mtu", REPO, environ={quickrun.IN_IMAGE_ENV: "1"}, euid=0, mptcp_enabled=on)
    assert image.command is None and "Jupyter container" in (image.reason or "")
    assert "make lab-mtu RUN_ARGS=--quick" in (image.elsewhere or "")
    assert quickrun.plan_quick_run("mtu", REPO, environ={}, euid=1000, mptcp_enabled=on).reason.startswith(  # type: ignore[union-attr]
        "a lab run needs root")
    assert "no MPTCP" in (quickrun.plan_quick_run("mtu", REPO, environ={}, euid=0, mptcp_enabled=off).reason or "")
    assert "no lab" in (quickrun.plan_quick_run("nosuch", REPO, environ={}, euid=0, mptcp_enabled=on).reason or "")


def test_run_quick_echoes_progress_lines_as_they_come(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # a stand-in engine printing two progress lines to stderr with a pause between them: the
    # first must be echoed before the child exits (streamed, not collected at the end)
    marker = tmp_path / "second-printed"
    script = (f"import sys, time, pathlib; print('[1/2] tcp-a', file=sys.stderr, flush=True); time.sleep(1); "
              f"pathlib.Path({str(marker)!r}).touch(); print('[2/2] mptcp-bottleneck'); sys.exit(3)")
    plan = quickrun.QuickRunPlan("mtu", [sys.executable, "-c", script], tmp_path)
    monkeypatch.setattr(quickrun, "plan_quick_run", lambda *a, **k: plan)
    seen: list[tuple[str, bool]] = []
    rc = quickrun.run_quick("mtu", tmp_path, echo=lambda line: seen.append((line, marker.exists())))
    assert rc == 3
    lines = [s for s, _ in seen]
    assert lines[1:3] == ["[1/2] tcp-a", "[2/2] mptcp-bottleneck"] and lines[-1].startswith("exit status 3")
    assert seen[1][1] is False  # echoed while the child was still running
    monkeypatch.setattr(quickrun, "plan_quick_run", lambda *a, **k: quickrun.QuickRunPlan(
        "mtu", None, tmp_path, "no MPTCP here", "elsewhere"))
    out: list[str] = []
    assert quickrun.run_quick("mtu", tmp_path, echo=out.append) is None
    assert out[0] == "Not run here: no MPTCP here."


def _execute(nb_name: str, params: str) -> str:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    nb_path = REPO / "notebooks" / nb_name
    nb = nbformat.read(nb_path, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")  # committed stripped
    cells = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(cells) == 1
    cells[0].source += "\n" + params
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(nb_path.parent)}}).execute()
    return json.dumps(nb)


def test_mtu_notebook_says_what_an_old_run_lacks(tmp_path: Path) -> None:
    run = old_run(tmp_path)
    text = _execute("mtu.ipynb", f"results_dir = {str(run)!r}\nrun_lab = False\n")
    assert '"output_type": "error"' not in text
    for said in ("**MISSING** `kernel`", "**MISSING** `findings`", "no repetition has `timeseries.csv`",
                 "no findings in this run", "run_lab is False"):
        assert said in text, said


def test_index_notebook_lists_labs_and_runs(tmp_path: Path) -> None:
    old_run(tmp_path)
    text = _execute("index.ipynb", f"results_root = {str(tmp_path)!r}\n")
    assert '"output_type": "error"' not in text
    assert "Manoratne" in text and "Kato et al." in text
    assert "[mtu.ipynb](mtu.ipynb)" in text and "19990101T000000Z-old" in text
    assert "no run yet" in text  # sndbuf has none under tmp_path
    assert "**MISSING** `findings`" in text


def test_deployability_notebook_says_which_lab_has_no_run(tmp_path: Path) -> None:
    """Each of its three sections in one sentence when its lab has no run, or an unreadable
    one; the notebook runs to the end (the sections with runs: the labs' integration tests)."""
    run = tmp_path / "setup" / "20260101T000000Z-bad"
    run.mkdir(parents=True)
    (run / "summary.json").write_text("{not json")
    (run.parent / "latest").symlink_to(run.name)
    text = _execute("deployability.ipynb", f"results_dir = {str(tmp_path)!r}\nrun_lab = False\n")
    assert '"output_type": "error"' not in text
    for lab in ("middlebox", "http"):
        assert f"**{lab}:** no run yet" in text, lab
    assert "**setup:** unreadable" in text
