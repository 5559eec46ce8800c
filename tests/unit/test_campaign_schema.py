"""CAMPAIGN.yml errors: one line naming the file and the field, exit status 2, nothing run."""

from __future__ import annotations

from pathlib import Path

import pytest

from mptcplab.cli import main

REPO = Path(__file__).resolve().parents[2]
GOOD = f"""name: c1
labs:
  - lab: {REPO / 'labs/mtu'}
    scenarios: [tcp-a]
targets:
  - name: here
"""


def run(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    f = tmp_path / "c.yml"
    f.write_text(text)
    rc = main(["campaign", str(f), "--out", str(tmp_path / "out"), *extra])
    return rc, capsys.readouterr().err.strip()


@pytest.mark.parametrize("text, field, words", [
    ("name: c1\ntargets: [{name: here}]\n", "labs", "Field required"),
    (GOOD.replace("name: here", "name: 'bad name'"), "targets.0.name", "directory name"),
    (GOOD + "  - name: here\n", "<top>", "given twice"),
    (GOOD + "  - {name: box, kind: ansible}\n", "<top>", "need an inventory"),
    (GOOD + "  - {name: box, host: x}\n", "targets.1", "host is for kind ansible"),
    (GOOD + "repetitions: 0\n", "repetitions", "greater than or equal to 1"),
    (GOOD + "colour: red\n", "colour", "Extra inputs"),
    (GOOD + "run: {emulation: dummynet}\n", "run.emulation", "netem"),
    (GOOD.replace("[tcp-a]", "[nope]"), "labs.0.scenarios", "no scenario 'nope'"),
    (GOOD.replace("[tcp-a]", "[]"), "labs.0.scenarios", "runs nothing"),
    (GOOD.replace("scenarios: [tcp-a]", "subset: nope"), "labs.0.subset", "no subset 'nope' in "),
    (GOOD.replace("scenarios: [tcp-a]", "subset: nope"), "labs.0.subset", "(have: none)"),
    (GOOD.replace("scenarios: [tcp-a]", "subset: papers").replace("labs/mtu", "labs/rcvbuf"),
     "labs.0.subset", "(have: paper, trace)"),
    (GOOD.replace("scenarios: [tcp-a]", "scenarios: [tcp-a]\n    subset: paper"), "labs.0", "exclude each other"),
    ("name: c1\nlabs: [\n", "line", "not YAML"),
    ("- just a list\n", "<top>", "a mapping"),
])
def test_schema_error_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                  text: str, field: str, words: str) -> None:
    rc, err = run(tmp_path, text, capsys)
    assert rc == 2, err
    assert "\n" not in err
    assert str(tmp_path / "c.yml") in err and f": {field}" in err and words in err, err
    assert not (tmp_path / "out").exists(), "a bad campaign must create nothing"


def test_missing_inventory_file_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, err = run(tmp_path, GOOD + "  - {name: box, kind: ansible}\ninventory: hosts.ini\n", capsys, "--dry-run")
    assert rc == 2 and "inventory" in err and "hosts.ini does not exist" in err, err


@pytest.mark.parametrize("extra, field", [
    (["--target", "nowhere"], "--target"), (["--scenario", "nope"], "--scenario"), (["--reps", "0"], "--reps"),
])
def test_bad_override_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                  extra: list[str], field: str) -> None:
    rc, err = run(tmp_path, GOOD, capsys, "--dry-run", *extra)
    assert rc == 2 and f"command line: {field}:" in err, err


def test_not_root_is_said_before_anything_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    rc, err = run(tmp_path, GOOD, capsys)
    assert rc == 3 and "run as root" in err and "\n" not in err, err
    assert not (tmp_path / "out").exists()
