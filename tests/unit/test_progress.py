"""Progress lines: counters, elapsed time, and an ETA from the repetitions done so far."""

from __future__ import annotations

from mptcplab.progress import Progress, clock_text


def test_clock_text() -> None:
    assert clock_text(0) == "0:00"
    assert clock_text(65) == "1:05"
    assert clock_text(3665) == "1:01:05"


def test_eta_is_the_mean_repetition_time_times_those_left() -> None:
    now = [100.0]
    lines: list[str] = []
    p = Progress(total=4, log=lines.append, clock=lambda: now[0])
    assert p.begin("tcp-a", 1, 2) == "[1/4] tcp-a rep 1/2: elapsed 0:00, ETA after the first repetition"
    now[0] += 30
    p.finished()
    assert p.eta_s() == 90.0  # 30 s each, three left
    now[0] += 50
    p.finished()  # mean 40 s, two left
    assert p.begin("mptcp", 1, 2) == "[3/4] mptcp rep 1/2: elapsed 1:20, about 1:20 left"
    assert lines[-1].startswith("[3/4]")
