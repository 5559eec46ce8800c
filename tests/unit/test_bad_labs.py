"""The bad-lab suite (tests/data/bad-labs/, written by make_bad_labs.py): every broken
lab is refused by `mptcplab validate`, `mptcplab run --dry-run` and `mptcplab run`
with exit status 2 and one line on stderr naming the file and the field, and nothing
is created: no command runs but the preflight's read-only questions to the host
(`sysctl -a -N` in a throwaway `unshare --net`), no results directory, no process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mptcplab.cli import main

REPO = Path(__file__).resolve().parents[2]
BAD = REPO / "tests" / "data" / "bad-labs"
CASES = sorted(p for p in BAD.iterdir() if (p / "expect").is_file())
#: the only commands a refused run may execute: reading the host's sysctl names
READ_ONLY = {("unshare", "--net", "--", "sysctl", "-a", "-N"), ("sysctl", "-a", "-N")}


def expect(case: Path) -> dict[str, str]:
    return dict(line.split(": ", 1) for line in (case / "expect").read_text().splitlines())


def test_suite_is_large_and_covers_every_file() -> None:
    files = [expect(c)["file"] for c in CASES]
    assert len(CASES) >= 40
    assert {f: files.count(f) >= 5 for f in set(files)} == {
        "topology.clab.yml": True, "experiment.yml": True, "published.yml": True}
    assert sum(expect(c)["stage"] == "preflight" for c in CASES) >= 4


@pytest.fixture
def spawned(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """Every command started through subprocess while the test runs."""
    seen: list[tuple[str, ...]] = []
    real = subprocess.Popen.__init__

    def spy(self: Any, args: Any, *a: Any, **kw: Any) -> None:
        seen.append(tuple(str(x) for x in args) if not isinstance(args, (str, bytes)) else (str(args),))
        real(self, args, *a, **kw)

    monkeypatch.setattr(subprocess.Popen, "__init__", spy)
    return seen


def _children() -> set[int]:
    out: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            out |= {int(p) for p in (task / "children").read_text().split()}
        except OSError:
            pass
    return out


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str], case: Path) -> str:
    rc = main(argv)
    err = capsys.readouterr().err
    exp = expect(case)
    assert rc == 2, (argv, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert f"{case / exp['file']}: {exp['field']}" in lines[0], lines[0]
    assert exp["problem"] in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_lab_is_refused_before_anything_exists(case: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    spawned: list[tuple[str, ...]]) -> None:
    results = tmp_path / "results"
    children = _children()
    stage = expect(case)["stage"]
    if stage == "preflight":
        # only the host can tell: the lab files alone are fine
        assert main(["validate", str(case)]) == 0
        capsys.readouterr()
        _refused(capsys, ["validate", "--host", str(case)], case)
    else:
        _refused(capsys, ["validate", str(case)], case)
    _refused(capsys, ["run", str(case), "--dry-run", "--quick", "--results", str(results)], case)
    _refused(capsys, ["run", str(case), "--quick", "--results", str(results)], case)
    assert not results.exists()
    assert set(spawned) <= READ_ONLY, spawned
    assert _children() <= children


def test_huge_file_is_refused_unread(copy_lab: Any, capsys: pytest.CaptureFixture[str]) -> None:
    lab = copy_lab()
    topo = lab / "topology.clab.yml"
    topo.write_text(topo.read_text() + "# padding\n" * 200_000)
    assert main(["validate", str(lab)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{topo}: <top>: file is" in err


@pytest.mark.parametrize("name", ["topo-billion-laughs", "host-cc-missing"])
def test_real_cli_prints_one_line_no_traceback(name: str, tmp_path: Path) -> None:
    """The same through the installed entry point, as a user runs it."""
    case = BAD / name
    p = subprocess.run([sys.executable, "-m", "mptcplab.cli", "run", str(case), "--quick", "--results",
                        str(tmp_path / "r")], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert not (tmp_path / "r").exists()
