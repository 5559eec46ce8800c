"""docs/reproductions.md and the labs' generated verdict sections (mptcplab/reproductions/):
the repository's docs agree with its records, and on a small synthetic record set a
changed verdict, a missing file or an edited section is found."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from mptcplab.campaign.records import pack_items
from mptcplab.cli import main
from mptcplab.lab.loader import load_lab
from mptcplab.record import store
from mptcplab.record.model import MptcpVerdict, Repetition, Subflow
from mptcplab.reproductions import docs
from mptcplab.reproductions.docs import BEGIN, END
from mptcplab.reproductions.render import NO_RUN
from mptcplab.results.summary import build_summary_model

REPO = Path(__file__).resolve().parents[2]
LABS = REPO / "labs"
FINDING = "tcp-segments-fit-bottleneck"  # labs/mtu: median segment on path B <= 1460


def test_the_repository_docs_agree_with_its_records(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Restores and re-evaluates every record in campaigns/records/ (the five rcvbuf rounds:
    about 6 s here). When this fails, `make reproductions` regenerates the docs; read the
    diff before committing it: a verdict that moved is news."""
    monkeypatch.chdir(REPO)
    t0 = time.monotonic()
    status = main(["reproductions", "--check"])
    out = capsys.readouterr().out
    assert status == 0, f"the docs disagree with the records ({time.monotonic() - t0:.1f} s):\n{out}"


def _rep(rep_no: int, seg: float) -> Repetition:
    return Repetition(name="tcp-b", rep=rep_no, goodput_mbps=90.0 + rep_no, calibration_ok=True,
                      mptcp=MptcpVerdict(requested=False),
                      subflows=[Subflow(path="B", share=1.0, median_seg=seg, max_seg=int(seg), established=True,
                                        icmp_frag_needed=1, icmp_mtus=[1500])])


def _campaign(out: Path, segs: list[float], kernel: str = "6.18.0",
              reasons: dict[int, list[str]] | None = None) -> None:
    """A finished campaign of labs/mtu's tcp-b, one round per entry of ``segs``, on target
    ``here``: what `mptcplab campaign` leaves, with one item key for every round; ``reasons``:
    a round's invalid reasons."""
    pub = load_lab(LABS / "mtu").published
    items: dict[str, dict[str, object]] = {}
    for rnd, seg in enumerate(segs, 1):
        iid = f"mtu__here__r{rnd}__0000abcd"
        run_id = f"20261123T0000{rnd:02d}Z-abcd"
        items[iid] = {"target": "here", "kind": "local", "host": None, "lab": "mtu", "lab_dir": str(LABS / "mtu"),
                      "round": rnd, "scenarios": ["tcp-b"], "run": {}}
        d = out / "items" / iid / "results" / "mtu" / run_id
        d.mkdir(parents=True)
        s = build_summary_model("mtu", run_id, kernel, True, False, [_rep(1, seg)], pub,
                                list((reasons or {}).get(rnd, [])), {"emulated": False},
                                [], repetitions_per_scenario=1)
        store.write_json(d / "summary.json", s.to_json())
        store.write_json(d / "manifest.json", {"lab": "mtu", "run_id": run_id, "complete": True, "kernel": kernel,
                                               "hostname": "vm", "wall_seconds": 12.5,
                                               "git": {"commit": "0123456789abcdef", "dirty": False}})
    store.write_json(out / "campaign.json", {"name": "synthetic", "targets": {"here": {"kind": "local"}},
                                             "items": items})


def _records(tmp: Path, segs: list[float], reasons: dict[int, list[str]] | None = None) -> Path:
    """The campaign's items packed as records in <tmp>/campaigns/records/synthetic/."""
    camp = tmp / "camp-work"
    shutil.rmtree(camp, ignore_errors=True)
    _campaign(camp, segs, reasons=reasons)
    root = tmp / "campaigns" / "records"
    shutil.rmtree(root, ignore_errors=True)
    pack_items(camp, root / "synthetic", "synthetic", log=lambda _: None)
    return root


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A checkout in miniature: records of three rounds where the finding holds, a docs
    directory whose mtu doc has the markers amid text of its own."""
    monkeypatch.chdir(tmp_path)
    _records(tmp_path, [1448, 1448, 1448])
    (tmp_path / "docs" / "labs").mkdir(parents=True)
    (tmp_path / "docs" / "labs" / "mtu.md").write_text(f"# mtu\n\nhand text\n\n{BEGIN}\nold\n{END}\n\nmore text\n")
    (tmp_path / "docs" / "labs" / "cc.md").write_text("# cc\n\nno markers, no record: left alone\n")
    return tmp_path


def _run(*extra: str) -> int:
    return main(["reproductions", "--records", "campaigns/records", "--out", "docs/reproductions.md",
                 "--labs", str(LABS), *extra])


def _verdict_line(md: str) -> str:
    return next(line for line in md.splitlines() if line.startswith(f"| `{FINDING}`"))


def test_generated_then_checked_then_a_changed_verdict_is_found(
        site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run() == 0
    rep_md = (site / "docs" / "reproductions.md").read_text()
    lab_md = (site / "docs" / "labs" / "mtu.md").read_text()
    assert "| holds |" in _verdict_line(rep_md)
    assert "5 in each" not in rep_md and "3 record(s) of campaign `synthetic`" in rep_md
    assert "| 3 | `mtu__here__r3__0000abcd.tar.xz` | `20261123T000003Z-abcd` | 0123456 | 12 s | valid |" in rep_md
    # the lab doc: only the part between the markers is generated
    assert lab_md.startswith(f"# mtu\n\nhand text\n\n{BEGIN}\n") and lab_md.endswith(f"{END}\n\nmore text\n")
    assert "\nold\n" not in lab_md and "| holds |" in _verdict_line(lab_md)
    assert (site / "docs" / "labs" / "cc.md").read_text() == "# cc\n\nno markers, no record: left alone\n"
    # a lab without a record: the line, no numbers
    assert f"labs/cc: {NO_RUN}." in rep_md and f"labs/asym: {NO_RUN}." in rep_md
    capsys.readouterr()
    # regenerating gives the same bytes, and the check agrees
    assert _run() == 0 and (site / "docs" / "reproductions.md").read_text() == rep_md
    assert _run("--check") == 0
    capsys.readouterr()

    # round 2 measured again, with segments that do not fit: the verdict changes
    _records(site, [1448, 8948, 8948])
    assert _run("--check") == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["docs/reproductions.md: disagrees with the records; `make reproductions` rewrites it",
                     "docs/labs/mtu.md: disagrees with the records; `make reproductions` rewrites it"]
    assert (site / "docs" / "reproductions.md").read_text() == rep_md, "--check writes nothing"
    assert _run() == 0
    assert "| holds |" not in _verdict_line((site / "docs" / "reproductions.md").read_text())
    assert _run("--check") == 0


def test_a_hand_edit_between_the_markers_is_found(site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run() == 0
    doc = site / "docs" / "labs" / "mtu.md"
    doc.write_text(doc.read_text().replace("| holds |", "| does not hold |", 1))
    capsys.readouterr()
    assert _run("--check") == 1
    assert capsys.readouterr().out.splitlines() == [
        "docs/labs/mtu.md: disagrees with the records; `make reproductions` rewrites it"]


def test_a_lab_on_record_without_markers_fails_the_check_and_gets_them_written(
        site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = site / "docs" / "labs" / "mtu.md"
    doc.write_text("# mtu\n\nhand text\n")
    assert _run("--check") == 1
    out = capsys.readouterr().out.splitlines()
    assert "docs/reproductions.md: missing; `make reproductions` writes it from the records" in out
    assert any(x.startswith("docs/labs/mtu.md: labs/mtu has a record but the doc has no") for x in out)
    assert _run() == 0
    text = doc.read_text()
    assert text.startswith("# mtu\n\nhand text\n\n## Verdicts on record\n\n" + BEGIN + "\n")
    assert _run("--check") == 0


def test_a_dropped_repetition_is_listed_and_the_planned_n_read_from_the_campaign_file(
        site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Per-repetition validity: round 2's repetition has a problem of its own, so it is
    dropped (the verdict is judged on the others) and listed; the campaign file's
    ``repetitions`` is the planned n, met by the extra round 4."""
    bad = "tcp-b rep 1: capture at client:eth0 dropped 5 packets"
    _records(site, [1448, 8948, 1448, 1448], {2: [bad]})
    (site / "campaigns" / "synthetic.yml").write_text("name: synthetic\nrepetitions: 3\nremeasure: 1\n"
                                                       "targets: [{name: here}]\n")
    assert _run() == 0
    md = (site / "docs" / "reproductions.md").read_text()
    assert "| holds |" in _verdict_line(md) and "**valid**" in md
    assert "- **Repetitions**: 3 planned per scenario; 3 valid in each of the 1 scenario(s); 1 dropped (each" in md
    assert f"  - dropped: round 2 of `tcp-b`: {bad}\n" in md
    assert "| 2 | `mtu__here__r2__0000abcd.tar.xz` |" in md and "| 1 repetition(s) dropped |" in md
    capsys.readouterr()
    # without the extra round: 2 of the 3 planned, said as the reason the run is invalid
    _records(site, [1448, 8948, 1448], {2: [bad]})
    assert _run() == 0
    md = (site / "docs" / "reproductions.md").read_text()
    assert "- tcp-b: 2 of 3 planned repetitions valid (1 dropped; 0 of 1 re-measure round(s) run)" in md
    assert "**INVALID** (1 reason(s), below)" in md


def test_the_records_are_restored_outside_results(site: Path) -> None:
    assert _run() == 0
    assert not (site / "results").exists()
    assert {p.name for p in site.iterdir()} == {"campaigns", "camp-work", "docs"}


def test_splice_needs_each_marker_once_in_order() -> None:
    assert docs.splice(f"a\n{BEGIN}\nx\n{END}\nb\n", "new\n") == f"a\n{BEGIN}\nnew\n{END}\nb\n"
    assert docs.splice(f"a\n{END}\n{BEGIN}\n", "new\n") is None
    assert docs.splice(f"{BEGIN}{BEGIN}{END}", "new\n") is None
    assert docs.splice("no markers", "new\n") is None


def test_a_record_of_a_single_run_is_refused(tmp_path: Path) -> None:
    """Only a campaign's items are reproductions (a run's record has no round nor target)."""
    from mptcplab.errors import LabInputError
    from mptcplab.record import archive

    run = tmp_path / "results" / "mtu" / "20261123T000001Z-abcd"
    _campaign(tmp_path / "c", [1448])
    shutil.copytree(next((tmp_path / "c" / "items").glob("*/results/mtu/*")), run)
    archive.pack_run(run, tmp_path / "records" / "x")
    with pytest.raises(LabInputError, match="not a campaign item's record"):
        docs.expected(tmp_path / "records", tmp_path / "docs" / "reproductions.md", LABS)



def test_the_readme_states_no_verdict_the_records_do_not_hold() -> None:
    """The README's lab table links to the generated verdicts and types none of its own
    (counts of findings that hold, or a verdict per finding, belong to docs/reproductions.md)."""
    import re

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert "docs/reproductions.md" in readme
    typed = re.findall(r"\d+ (?:findings?|checks?) (?:hold|do not)", readme)
    assert not typed, typed
