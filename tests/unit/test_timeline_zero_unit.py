"""``traffic.timeline_zero`` without a network: the schema (default spawn, ``connection``,
anything else refused on one line), the dry run's poll, the wait's outcomes on a fake clock,
and events.csv's ``timeline_zero`` row (tests/integration/test_timeline_zero.py runs it)."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml

from mptcplab.cli import main
from mptcplab.lab.loader import load_lab
from mptcplab.timeline.step import zero_event
from mptcplab.traffic.control import Zero, established_cmd, wait_established

BASE = Path(__file__).resolve().parents[1] / "data" / "bad-labs" / "_base"
POLL = "ss -tnH state established dst "


def _lab(tmp_path: Path, zero: Any) -> Path:
    lab = tmp_path / "zero"
    shutil.copytree(BASE, lab)
    exp = yaml.safe_load((lab / "experiment.yml").read_text())
    if zero is not None:
        exp["traffic"]["timeline_zero"] = zero
    exp["traffic"]["events"] = [{"at": 0.5, "action": "sysctl", "node": "client",
                                 "key": "net.ipv4.tcp_no_metrics_save", "value": "1"}]
    (lab / "experiment.yml").write_text(yaml.safe_dump(exp, sort_keys=False))
    return lab


def test_default_is_the_spawn_and_connection_is_accepted(tmp_path: Path) -> None:
    assert load_lab(_lab(tmp_path, None)).scenarios[0].body.traffic.timeline_zero == "spawn"
    shutil.rmtree(tmp_path / "zero")
    assert load_lab(_lab(tmp_path, "connection")).scenarios[0].body.traffic.timeline_zero == "connection"


def test_another_value_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(_lab(tmp_path, "syn"))]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "traffic.timeline_zero" in err[0], err


def test_dry_run_shows_the_poll_after_the_measured_client_only_when_asked(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(_lab(tmp_path, "connection")), "--dry-run", "--scenario", "tcp-a"]) == 0
    lines = capsys.readouterr().out.splitlines()
    polls = [i for i, line in enumerate(lines) if POLL in line]
    assert len(polls) == 1, [line for line in lines if "ss " in line]
    assert lines[polls[0]].startswith("ip netns exec mpl000000-client ") and "at most 30 s" in lines[polls[0]]
    # the timeline names its zero; the poll comes right after the measured client it waits for
    assert any(line.startswith("#   timeline at +0.5 s after the connection: sysctl") for line in lines), lines
    assert "flow main (" in lines[polls[0] - 1] and lines[polls[0] - 1].split("#")[0].rstrip().endswith("&")
    shutil.rmtree(tmp_path / "zero")
    assert main(["run", str(_lab(tmp_path, None)), "--dry-run", "--scenario", "tcp-a"]) == 0
    out = capsys.readouterr().out
    assert POLL not in out and "#   timeline at +0.5 s: sysctl" in out


def test_established_cmd_brackets_ipv6() -> None:
    assert established_cmd("c", "10.0.1.1", 7100).argv[-5:] == ("dst", "10.0.1.1", "dport", "=", ":7100")
    assert established_cmd("c", "dead:beef:1::1", 7100).argv[5] == "[dead:beef:1::1]"


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        self.t += 0.25
        return self.t


def test_wait_returns_the_clock_after_the_first_poll_that_sees_it() -> None:
    answers = iter([False, False, True])
    clock = FakeClock()
    epoch, polls, problem = wait_established(lambda: next(answers), lambda: True, clock=clock)
    assert (epoch, polls, problem) == (1000.25, 3, "")


def test_wait_gives_up_on_an_exited_client_a_timeout_or_the_traffic_end() -> None:
    epoch, polls, problem = wait_established(lambda: False, lambda: False)
    assert epoch is None and polls == 1 and "exited" in problem
    epoch, polls, problem = wait_established(lambda: False, lambda: True, timeout_s=0.1)
    assert epoch is None and polls >= 2 and "within 0.1 s" in problem
    ended = threading.Event()
    ended.set()
    epoch, _, problem = wait_established(lambda: False, lambda: True, stop=ended)
    assert epoch is None and "traffic ended" in problem
    # a client that connected and exited between two polls is still seen if ss lists it
    assert wait_established(lambda: True, lambda: False)[0] is not None


def test_events_row_says_where_the_zero_fell() -> None:
    spawn = Zero("spawn", "spawn", "main", 100.0, 100.0)
    assert spawn.record()["after_spawn_s"] == 0 and zero_event(spawn.record()) is None
    late = Zero("connection", "connection", "main", 100.0, 101.7, polls=40, command=POLL)
    row = zero_event(late.record())
    assert row is not None and row.action == "timeline_zero" and row.target == "connection"
    assert row.epoch_s == 101.7 and row.actual_s == 0.0 and row.planned_s == 0.0 and row.rc == 0
    assert row.duration_ms == pytest.approx(1700.0) and row.flow == "main" and row.commands == POLL
    assert "1.700 s after" in row.result
    fell = Zero("connection", "spawn", "main", 100.0, 100.0, polls=3, problem="the client exited first")
    row = zero_event(fell.record())
    assert row is not None and row.target == "spawn" and row.epoch_s == 100.0 and "exited" in row.result
