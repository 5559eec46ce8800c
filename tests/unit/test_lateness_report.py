"""bench/lateness_report.py's attribution of a delay line's worst stall, from its stats
(the verdict call or the wake-up), and the stall logs' co-occurrence across lines."""

from __future__ import annotations

from typing import Any

import pytest
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


def host(steal_ms: float, softirq_ms: float = 100.0) -> Any:
    from mptcplab.record.model import CpuTime, HostCpu

    return HostCpu(interval_s=4.0, cpus=2, total=CpuTime(steal_ms=steal_ms, softirq_ms=softirq_ms),
                   psi_cpu_some_us=250_000)


def test_steal_beside_each_repetition_and_its_rank_correlation() -> None:
    b = bench()
    lines = [b.line_of("s1", r, "a", stats(p99, p99 * 3, 100)) for r, p99 in ((1, 300), (2, 900), (3, 2000))]
    lines.append(b.line_of("s1", 3, "b", stats(100, 200, 100)))
    hosts = {"s1#1": host(0), "s1#2": host(40), "s1#3": host(310)}
    df = b.host_frame(lines, hosts)
    assert list(df["rep"]) == ["s1#1", "s1#2", "s1#3"] and list(df["over"]) == [0, 1, 1]
    assert list(df["p99_max_us"]) == [300, 900, 2000] and df["steal_pct"].iloc[2] == pytest.approx(3.875)
    text = b.report(lines, 2000, 1000, hosts)
    assert "| s1#3 | 2 | 1 | 2000 | 6000 | 310 | 3.88 | 100 | 250 | 4.0 |" in text
    assert "steal vs p99 max +1.00; steal vs worst stall +1.00" in text
    # steal in 10 ms ticks is often 0 everywhere: no correlation is claimed
    flat = b.report(lines, 2000, 1000, {k: host(0) for k in hosts})
    assert "steal vs p99 max undefined" in flat
    assert "host's CPU" not in b.report(lines, 2000, 1000, {"s1#1": None})  # records before host_cpu


def test_spearman_is_pearson_on_average_ranks() -> None:
    import pandas as pd

    b = bench()
    assert b.spearman(pd.Series([1, 2, 3, 4]), pd.Series([10, 40, 20, 30])) == pytest.approx(0.4)
    assert b.spearman(pd.Series([1, 1, 2]), pd.Series([3, 2, 1])) == pytest.approx(-0.866, abs=1e-3)  # ties
    assert b.spearman(pd.Series([1, None, 3]), pd.Series([1, 2, 3])) is None  # 2 known pairs


def test_a_sparse_line_is_over_tolerance_as_the_run_judges_it() -> None:
    b = bench()
    sparse = {**stats(6000, 6000, 100), "packets": 80}  # one stall: its p99 is its worst packet
    assert not b.line_of("s1", 1, "a", sparse).over
    assert b.line_of("s1", 1, "a", {**sparse, "lateness_us": {"p50": 900, "p99": 6000, "max": 6000}}).over
