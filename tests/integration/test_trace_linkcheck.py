"""The run's trace replay check (steps/links.LinkCheck with tracecheck.ReplayCheck): a lab
whose one link replays the first 5 s of traces/verizon-lte-down-60s has its replay checked
on a throwaway line and recorded among the repetition's calibration entries (within
tolerance); a replay from an offset, compared with a wrong expectation (the trace 1 s
later, or a third of its rate), is out of tolerance, so the check can fail."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from mptcplab import tracecheck
from mptcplab.emulation.trace import Trace, trace_for

from .labkit import LINE_TOPOLOGY, assert_status, by_name, run_quick, write_lab

pytestmark = pytest.mark.netns

TRACE = "verizon-lte-down-60s"
SPAN = "5s"


def experiment() -> dict[str, Any]:
    return {
        "nodes": {"client": {"role": "host"}, "server": {"role": "host"}, "router": {"role": "router"}},
        "links": {"client:eth1": {"egress": {"trace": TRACE, "delay": "10ms", "queue": "150KB"}}},
        "traffic": {"flows": {"main": {"client": "client", "server": "server", "server_address": "server:eth1",
                                       "mptcp": False, "duration": "2s", "cc": "cubic"}}},
        "capture": [{"point": "server:eth1"}],
        "calibration": {"trace_seconds": SPAN},
        "quick": {"duration": "2s", "repetitions": 1},
        "scenarios": [{"name": "main"}],
    }


def _shifted(trace: Trace, ms: int) -> Trace:
    """The trace starting ``ms`` later: what a replay at the wrong offset would be judged by."""
    p = trace.period_ms
    stamps = sorted((s - 1 + ms) % p + 1 for s in trace.stamps_ms)
    return replace(trace, sha256="shifted", stamps_ms=tuple(stamps))


def test_the_run_checks_the_trace_replay(tmp_path: Path) -> None:
    lab = write_lab(tmp_path, "tracecheck", LINE_TOPOLOGY, experiment())
    rc, summary = run_quick(lab, tmp_path / "results")
    assert_status(rc, summary)
    (run,) = sorted((tmp_path / "results" / "tracecheck").glob("2*"))
    (rep_dir,) = [p.parent for p in run.rglob("trace-replay-*.txt")]
    entries = json.loads((run / "manifest.json").read_text())["calibration"]["main"]["rep1"]
    (entry,) = [e for e in entries if e["link"].startswith("client:eth1")]
    print((rep_dir / f"trace-replay-{TRACE}.txt").read_text())
    by_q = {c["quantity"]: c for c in entry["checks"] if c["direction"] != "both"}
    # the replay's verdict sits beside the link's RTT check, so calibration_ok sees it
    assert set(by_q) >= {"trace_windows_out", "trace_delivered_bytes"}, entry["checks"]
    assert by_q["trace_windows_out"]["ok"] and by_q["trace_delivered_bytes"]["ok"], by_q
    assert "at most 5%" in by_q["trace_windows_out"]["tolerance"]
    assert entry["ok"] and by_name(summary)["main"]["calibration_ok"] is True, entry
    (replay,) = entry["trace_replays"]
    # once per run: a repetition measured again (its first attempt disturbed by a loaded host,
    # kept under failed/) reuses the check its first attempt made, and says so
    retried = (run / "scenarios" / "main" / "failed").is_dir()
    assert replay["measured_in_this_rep"] or retried, (replay, retried)
    assert f"first {SPAN.rstrip('s')} s" in replay["check"], replay


def test_a_wrong_expectation_is_out_of_tolerance(delayline: Path, tmp_path: Path) -> None:
    """A 5 s replay from 17 s into the trace (labs/mobile's offset) on a throwaway line,
    within tolerance against its own trace; the same releases judged as the trace 1 s later,
    or at a third of its rate, are not."""
    trace = trace_for(TRACE, ".")
    check = tracecheck.ReplayCheck(trace, 0.010, 1500, tracecheck.replay_queue_bytes(trace, 150_000), 5.0, 17.0)
    report = check.run(delayline, tmp_path)
    print(report.render())
    assert report.ok and all(c.ok for c in report.checks()), report.render()
    assert len(report.windows) >= 35 and report.windows[0].at_ms >= 17_000, report.windows[:1]
    late = tracecheck.compare(_shifted(trace, 1000), report.packets, report.stage, 0.010)
    assert not late.ok and not all(c.ok for c in late.checks()), late.render()
    thinned = replace(trace, sha256="thinned", stamps_ms=trace.stamps_ms[::3])
    slow = tracecheck.compare(thinned, report.packets, report.stage, 0.010)
    assert not slow.ok and slow.total_error > 1, slow.render()
