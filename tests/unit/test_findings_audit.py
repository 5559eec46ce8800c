"""docs/findings-audit.md is the labs' published.yml as written (mptcplab audit), and every
finding of every shipped lab can be audited: a source for each check's claim, what would
make it fail, no check that compares a statistic with itself."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from mptcplab.checks import stats
from mptcplab.cli import main
from mptcplab.lab import audit
from mptcplab.lab.schema import Finding

REPO = Path(__file__).resolve().parents[2]


def test_the_audit_document_is_the_lab_files(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["audit", "--labs", str(REPO / "labs"), "--out", str(REPO / "docs" / "findings-audit.md"), "--check"])
    assert rc == 0, capsys.readouterr().err


def test_every_shipped_finding_passes_the_audit() -> None:
    from mptcplab.lab.loader import load_lab

    bad = []
    for d in sorted((REPO / "labs").iterdir()):
        pub = load_lab(d).published
        assert pub is not None, d
        bad += [f"{d.name}/{f.id}: {p}" for f in pub.all_findings() for p in audit.problems(f)]
    assert not bad, "\n".join(bad)


def test_the_audit_states_the_engines_confidence() -> None:
    assert audit.CONFIDENCE == stats.CONFIDENCE


def _finding(expect: object, **kw: object) -> Finding:
    return Finding.model_validate({"id": "f", "scenario": "s", "statement": "x", "where": "y", "expect": expect,
                                   **kw})


def test_problems_name_what_is_missing_and_what_cannot_fail() -> None:
    f = _finding({"metric": "goodput_mbps", "op": ">", "value": 1})
    assert audit.problems(f) == ["no fails_if (what would make it fail)", "expect: no source"]
    itself = _finding({"metric": "goodput_mbps", "op": ">=", "than": {"scenario": "s"},
                       "source": "convention: x"}, fails_if="never")
    assert audit.problems(itself) == ["expect: compares a statistic with itself (true by construction)"]
    ok = _finding({"metric": "goodput_mbps", "op": ">", "value": 1, "source": "paper: p. 3"},
                  fails_if="goodput at most 1")
    assert audit.problems(ok) == []


def test_a_changed_lab_file_makes_the_check_fail(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    labs = tmp_path / "labs"
    shutil.copytree(REPO / "labs" / "mtu", labs / "mtu")
    out = tmp_path / "audit.md"
    assert main(["audit", "--labs", str(labs), "--out", str(out)]) == 0
    assert main(["audit", "--labs", str(labs), "--out", str(out), "--check"]) == 0
    pub = labs / "mtu" / "published.yml"
    doc = yaml.safe_load(pub.read_text())
    doc["findings"][0]["statement"] += " (edited)"
    pub.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert main(["audit", "--labs", str(labs), "--out", str(out), "--check"]) == 1
    assert "differs" in capsys.readouterr().err
