"""Crossovers of a size sweep (mptcplab/results/crossover.py), on made-up ratios."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pytest

from mptcplab.record.model import Summary
from mptcplab.results.crossover import compared_pairs, crossover, family_crossover
from mptcplab.results.read import as_summary
from mptcplab.results.report import render_report

SIZES = [4.0, 30.0, 100.0, 150.0, 1000.0]


def test_interpolated_on_log_size_between_the_last_loss_and_the_next_win():
    x = crossover(SIZES, [0.5, 0.8, 0.9, 1.1, 2.0])
    assert x is not None and 100 < x < 150
    assert x == pytest.approx(math.exp((math.log(100) + math.log(150)) / 2))


def test_winning_everywhere_is_the_smallest_size_and_losing_at_the_largest_is_none():
    assert crossover(SIZES, [1.2, 1.5, 2, 2, 2]) == 4.0
    assert crossover(SIZES, [0.5, 1.5, 2, 2, 0.9]) is None
    assert crossover(SIZES, [0.5, None, 2, 2, 2]) is None


def test_the_last_rise_counts_when_the_ratio_dips_again():
    x = crossover(SIZES, [1.2, 0.8, 1.0, 1.5, 2.0])
    assert x == pytest.approx(30 * (100 / 30) ** 1.0)  # reaches exactly 1 at 100 KB


def web(name: str, rps: float | None, rep: int = 1) -> dict[str, Any]:
    return {"name": name, "rep": rep,
            "flows": [{"name": "web", "kind": "http", "role": "measured", "http": {"requests_per_s": rps}}]}


#: requests/s per size in KB, shaped like labs/http's full run (docs/labs/http.md)
RPS: dict[str, dict[int, float | None]] = {"tcp": {4: 2482, 30: 390, 100: 117, 1000: 10.3},
       "rr": {4: 2600, 30: 743, 100: 227, 1000: 21.5},
       "mptcp": {4: 1417, 30: 382, 100: 177, 1000: 21.3}}


def http_summary(rps: Mapping[str, Mapping[int, float | None]] = RPS) -> Summary:
    recs = [web(f"{fam}-{kb}k", v, rep) for fam, per in rps.items() for kb, v in per.items() for rep in (1, 2)]
    recs.append({"name": "reorder-2sf-download", "rep": 1})       # no family: left out
    return as_summary({"lab": "http", "run_id": "r1", "complete": True, "scenarios": recs})


def test_pairs_mptcp_against_each_family_then_later_over_earlier() -> None:
    assert compared_pairs(http_summary()) == [("mptcp", "tcp"), ("mptcp", "rr"), ("rr", "tcp")]
    one_size = http_summary({"tcp": {4: 1.0, 30: 2.0}, "mptcp": {4: 1.0}})
    assert compared_pairs(one_size) == []          # a family needs two sizes


def test_report_prints_the_crossovers_of_this_run() -> None:
    s = http_summary()
    x = family_crossover(s, "mptcp", "tcp").crossover_kb
    assert x is not None and 30 < x < 100
    md = render_report(s)
    section = md.split("## Crossovers of the size sweep")[1].split("\n## ")[0]
    rows = {ln.split("|")[1].strip(): [c.strip() for c in ln.split("|")[2:-1]]
            for ln in section.splitlines() if ln.startswith("| ") and " over " in ln}
    assert list(rows) == ["mptcp over tcp", "mptcp over rr", "rr over tcp"]
    metric, ratios, at = rows["mptcp over tcp"]
    assert metric == "requests_per_s" and ratios.startswith("4 KB 0.57, 30 KB 0.98") and at == f"≈ {x:.0f} KB"
    assert rows["mptcp over rr"][2] == "none in the measured range (4 KB-1000 KB)"
    assert rows["rr over tcp"][2] == "ahead at every size (4 KB-1000 KB)"


def test_a_size_without_a_value_leaves_the_crossover_unknown_and_no_families_no_section() -> None:
    gap: dict[str, dict[int, float | None]] = {"tcp": {4: 10.0, 30: 10.0}, "mptcp": {4: 5.0, 30: None}}
    assert "unknown: no value at 30 KB" in render_report(http_summary(gap))
    flat = as_summary({"lab": "x", "run_id": "r", "scenarios": [web("plain", 5.0)]})
    assert "Crossovers" not in render_report(flat)
