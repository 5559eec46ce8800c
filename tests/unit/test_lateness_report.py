"""bench/lateness_report.py's attribution of a delay line's worst stall, from its stats
(the verdict call or the wake-up), and the stall logs' co-occurrence across lines."""

from __future__ import annotations

from typing import Any

from benchmod import load_bench


def bench() -> Any:
    return load_bench("lateness_report")


def stats(p99: float, late_max: float, verdict_max: float,
          stalls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"delay_us": 2000, "rate_bps": 100_000_000, "packets": 5000, "slot_us": 100,
            "lateness_us": {"p50": 60, "p99": p99, "max": late_max}, "verdict_max_us": verdict_max,
            "verdict_offcpu_max_us": 0.0, **({"stalls": stalls} if stalls is not None else {})}


def test_worst_stall_attribution() -> None:
    b = bench()
    in_verdict = b.line_of("s2", 1, "a", stats(900, 10_000, 9_800))
    woke_late = b.line_of("s2", 1, "b", stats(900, 10_000, 300))
    assert in_verdict.where == "verdict" and woke_late.where == "wake"
    assert in_verdict.over and not b.line_of("s2", 1, "c", stats(400, 10_000, 300)).over  # 0.5 ms floor
    text = b.report([in_verdict, woke_late], 2000, 1000)
    assert "2 delay lines in 1 repetitions; 2 over tolerance in 1 repetitions" in text
    assert "Stall logs" not in text  # records without the stall log


def test_stall_log_cooccurrence() -> None:
    b = bench()
    a = b.line_of("s2", 1, "a", stats(900, 10_000, 9_800, [
        {"at_ms": 100.0, "kind": "verdict", "us": 9800.0, "offcpu_us": 4900.0, "batch": 80},
        {"at_ms": 500.0, "kind": "wake", "us": 3000.0, "offcpu_us": None, "batch": 0}]))
    c = b.line_of("s2", 1, "c", stats(900, 10_000, 300, [
        {"at_ms": 105.0, "kind": "wake", "us": 6000.0, "offcpu_us": None, "batch": 0}]))
    other_rep = b.line_of("s2", 2, "a", stats(900, 10_000, 300, [
        {"at_ms": 500.5, "kind": "wake", "us": 3000.0, "offcpu_us": None, "batch": 0}]))
    table = b.stall_log_table([a, c, other_rep], 2000)
    rows = {r.split(" | ")[0].strip("| "): r for r in table.splitlines()[2:]}
    # the verdict at 100-109.8 ms and c's wake-up at 105 ms overlap; a's wake-up at 500 ms
    # overlaps only a stall of another repetition, which does not count
    assert rows["verdict"] == "| verdict | 1 | 9800 | 9800 | 1 | 1: 0.50 |"
    assert rows["wake"] == "| wake | 3 | 3000 | 6000 | 1 | - |"
