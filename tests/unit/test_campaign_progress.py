"""A campaign item's output: all of it into the item's log, its progress lines (the
engine's ETA) to the campaign's console, and a process the item left behind holding the
pipe does not hold the campaign."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from mptcplab.campaign.executor import DRAIN_S, pump

ENGINE = """
import sys, time
print("preflight: fine", flush=True)
print("[1/2] tcp-a rep 1/1: elapsed 0:00", flush=True)
time.sleep(0.3)
sys.stdout.write("tcp-a rep 1/1: 90 Mbit/s\\n[2/2] tcp-b rep 1/1: elapsed 0:01, about 0:01 left\\n")
sys.stdout.write("no newline at the end")
sys.exit(3)
"""


def test_progress_lines_reach_the_console_and_everything_the_log(tmp_path: Path) -> None:
    p = subprocess.Popen([sys.executable, "-c", ENGINE], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    echoed: list[str] = []
    with open(tmp_path / "log.txt", "ab") as log:
        assert pump(p, log, echoed.append) == 3
    assert echoed == ["[1/2] tcp-a rep 1/1: elapsed 0:00", "[2/2] tcp-b rep 1/1: elapsed 0:01, about 0:01 left"]
    text = (tmp_path / "log.txt").read_text()
    assert text.startswith("preflight: fine\n") and text.endswith("90 Mbit/s\n[2/2] tcp-b rep 1/1: elapsed 0:01, "
                                                                  "about 0:01 left\nno newline at the end")


def test_a_process_left_holding_the_pipe_does_not_hold_the_campaign(tmp_path: Path) -> None:
    # the item exits at once; the sleep it started keeps the pipe's write end for 30 s
    p = subprocess.Popen(["sh", "-c", "sleep 30 & echo '[1/1] x rep 1/1: elapsed 0:00'"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    t0 = time.monotonic()
    echoed: list[str] = []
    try:
        with open(tmp_path / "log.txt", "ab") as log:
            assert pump(p, log, echoed.append) == 0
        assert time.monotonic() - t0 < DRAIN_S + 5
        assert echoed == ["[1/1] x rep 1/1: elapsed 0:00"]
    finally:
        subprocess.run(["pkill", "-s", str(p.pid)], check=False)  # the sleep, by its session
