"""A campaign's run.scale: every item runs `--scale F --scale-reason TEXT`, the reason is
required below 1, and campaigns without a scale keep their item keys (their records match)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mptcplab.campaign.planner import plan
from mptcplab.campaign.schema import load_campaign
from mptcplab.campaign.targets import engine_args
from mptcplab.cli import main
from mptcplab.errors import LabInputError

REPO = Path(__file__).resolve().parents[2]
BASE = f"""name: sc
labs:
  - lab: {REPO / 'labs/mtu'}
    scenarios: [tcp-a]
targets:
  - name: host
repetitions: 1
shuffle: false
"""
REASON = "the 2 ms lines were late in 7 of 10 rounds at x1 (records/asym-full)"


def _items(tmp_path: Path, extra: str = "") -> list:
    f = tmp_path / "c.yml"
    f.write_text(BASE + extra)
    c, base = load_campaign(f)
    return plan(c, base, str(f))


def test_scale_and_its_reason_reach_every_items_command(tmp_path: Path) -> None:
    (item,) = _items(tmp_path, f"run:\n  scale: 0.5\n  scale_reason: {REASON}\n")
    args = engine_args(item, "labs/mtu", "out")
    i = args.index("--scale")
    assert args[i + 1] == "0.5"
    assert args[args.index("--scale-reason") + 1] == REASON


def test_items_without_a_scale_keep_their_keys(tmp_path: Path) -> None:
    (plain,) = _items(tmp_path)
    # the key of this item before run.scale existed: the run settings dumped without it
    assert "scale" not in plain.run.key_fields()
    assert "--scale" not in engine_args(plain, "labs/mtu", "out")
    (scaled,) = _items(tmp_path, f"run:\n  scale: 0.5\n  scale_reason: {REASON}\n")
    assert scaled.key != plain.key, "a scaled item measures something else"


@pytest.mark.parametrize("run, field", [
    ("run:\n  scale: 0.5\n", "run"),
    (f"run:\n  scale_reason: {REASON}\n", "run"),
    ("run:\n  scale: 1.5\n", "run.scale"),
])
def test_bad_scale_settings_are_one_line_errors(tmp_path: Path, run: str, field: str) -> None:
    with pytest.raises(LabInputError) as e:
        _items(tmp_path, run)
    assert e.value.field == field


def test_scale_reason_without_a_factor_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["run", str(REPO / "labs/mtu"), "--dry-run", "--scale-reason", REASON])
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--scale-reason" in err[0]


def test_the_reason_is_the_manifests_and_the_reports(capsys: pytest.CaptureFixture[str]) -> None:
    from mptcplab.lab.loader import load_lab
    from mptcplab.lab.scale import manifest_record
    from mptcplab.preflight import reachability

    lab = load_lab(REPO / "labs/mtu")
    reach = reachability(lab, None, "nfqueue", "0.5", cpus=2, scale_note=REASON)
    rec = manifest_record(reach.lab)
    assert rec["source"] == "command line"
    assert REASON in rec["reason"]
