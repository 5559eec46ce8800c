"""Progress: plain lines off a terminal (counters, elapsed time, an ETA from the repetitions
done so far), and on a terminal a live status line drawn on a fake console, with the
traffic seconds of a long repetition, that every logged line goes above."""

from __future__ import annotations

import io
import sys
import time

import pytest

from mptcplab.progress import CLEAR, Progress, bar, clock_text


def test_clock_text() -> None:
    assert clock_text(0) == "0:00"
    assert clock_text(65) == "1:05"
    assert clock_text(3665) == "1:01:05"


def test_eta_is_the_mean_repetition_time_times_those_left() -> None:
    now = [100.0]
    lines: list[str] = []
    p = Progress(total=4, log_line=lines.append, clock=lambda: now[0])
    assert p.begin("tcp-a", 1, 2) == "[1/4] tcp-a rep 1/2: elapsed 0:00, ETA after the first repetition"
    now[0] += 30
    p.finished()
    assert p.eta_s() == 90.0  # 30 s each, three left
    now[0] += 50
    p.finished()  # mean 40 s, two left
    assert p.begin("mptcp", 1, 2) == "[3/4] mptcp rep 1/2: elapsed 1:20, about 1:20 left"
    assert lines[-1].startswith("[3/4]")
    # inside a repetition the time spent in it counts down, by at most one mean
    now[0] += 10
    assert p.eta_s() == 70.0
    now[0] += 100
    assert p.eta_s() == 40.0  # the current one took longer than the mean: the rest still costs 40 s


def test_not_a_terminal_means_plain_lines_only(monkeypatch: pytest.MonkeyPatch) -> None:
    lines: list[str] = []
    p = Progress(total=2, log_line=lines.append, clock=lambda: 0.0)
    p.begin("s", 1, 2)
    p.traffic_started(60)
    p.log("something happened")
    p.traffic_ended()
    p.finished()
    p.close()
    assert lines == ["[1/2] s rep 1/2: elapsed 0:00, ETA after the first repetition", "something happened"]
    # a captured stdout (CI, pytest, a notebook) is not a terminal
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    assert Progress.for_run(3).console is None


def test_bar() -> None:
    assert bar(0.0, 4) == "[----]" and bar(0.5, 4) == "[##--]" and bar(2.0, 4) == "[####]"


def test_terminal_status_line_counts_traffic_seconds_and_stays_below_logged_lines() -> None:
    now = [0.0]
    out = io.StringIO()
    p = Progress(total=2, clock=lambda: now[0], console=out, tick_s=0, columns=200)
    p.begin("mptcp", 1, 2)
    now[0] = 5.0
    p.traffic_started(60.0)
    now[0] = 35.0  # half the traffic of the first of two repetitions: a quarter of the run
    status = p.status_text()
    assert status.startswith(bar(0.25) + " [1/2] mptcp rep 1/2 | traffic 30/60 s | elapsed 0:35")
    assert status.endswith("ETA after the first repetition")
    p.redraw()
    p.log("a line of the run")
    text = out.getvalue()
    # the logged line replaces the status line, then the status line is drawn again below it
    assert (CLEAR + status + CLEAR + "a line of the run\n" + CLEAR + status) in text
    now[0] = 70.0
    assert "traffic 60/60 s (finishing)" in p.status_text()
    p.traffic_ended()
    assert p.status_text().startswith(bar(0.5) + " [1/2] mptcp rep 1/2 | elapsed 1:10")  # traffic done
    now[0] = 80.0
    p.finished()
    assert p.status_text().startswith(bar(0.5) + " [1/2] mptcp rep 1/2 done | elapsed 1:20 | about 1:20 left")
    p.close()
    assert out.getvalue().endswith(CLEAR)  # the terminal is left on a clean line
    p.log("after the run")  # plain from now on: nothing more on the console
    assert not out.getvalue().endswith("after the run\n")


def test_status_line_fits_the_terminal() -> None:
    p = Progress(total=1, clock=lambda: 0.0, console=io.StringIO(), tick_s=0, columns=40)
    p.begin("a-very-long-scenario-name-" * 4, 1, 1)
    assert len(p.status_text()) == 39


def test_the_ticker_redraws_while_nothing_happens() -> None:
    out = io.StringIO()
    p = Progress(total=1, console=out, tick_s=0.01)
    try:
        p.begin("s", 1, 1)
        before = out.getvalue().count(CLEAR)
        for _ in range(200):
            if out.getvalue().count(CLEAR) > before + 2:
                break
            time.sleep(0.01)
        assert out.getvalue().count(CLEAR) > before + 2
    finally:
        p.close()
    assert p.console is None


@pytest.mark.parametrize("total", [0])
def test_no_repetition_is_not_a_division_by_zero(total: int) -> None:
    p = Progress(total=total, clock=lambda: 0.0, console=io.StringIO(), tick_s=0)
    assert p.status_text().startswith(bar(1.0))
