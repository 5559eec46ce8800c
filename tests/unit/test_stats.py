"""The intervals behind every verdict (mptcplab/checks/stats.py), against their exact
coverages and a brute-force count."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from mptcplab.checks.stats import (
    agreement_verdict,
    decide,
    median_interval,
    proportion_interval,
    shift_interval,
)


@pytest.mark.parametrize(("n", "k", "coverage"), [
    (3, 1, 1 - 2 / 8), (5, 1, 1 - 2 / 32), (6, 1, 1 - 2 / 64), (10, 2, 1 - 2 * 11 / 1024),
    (20, 6, 1 - 2 * sum(math.comb(20, i) for i in range(6)) / 2 ** 20)])
def test_median_interval_is_the_binomial_order_statistics(n: int, k: int, coverage: float) -> None:
    xs = [float(i) for i in range(n)]
    iv = median_interval(xs)
    assert (iv.low, iv.high) == (xs[k - 1], xs[n - k])
    assert iv.confidence == pytest.approx(coverage)


def test_one_value_has_no_interval() -> None:
    iv = median_interval([4.0])
    assert iv.confidence == 0 and not iv.enough


def _brute_u_tail(m: int, n: int, u: int) -> float:
    """P(U <= u) by enumerating every arrangement of m x's among m + n ranks."""
    hits = total = 0
    for xs in itertools.combinations(range(m + n), m):
        ys = [r for r in range(m + n) if r not in xs]
        hits += sum(1 for x in xs for y in ys if x > y) <= u
        total += 1
    return hits / total


@pytest.mark.parametrize(("m", "n"), [(3, 3), (4, 5), (5, 5), (3, 7)])
def test_moses_interval_coverage_is_exact(m: int, n: int) -> None:
    rng = random.Random(m * 100 + n)  # distinct pairwise differences: no ties to place k
    xs, ys = [rng.uniform(0, 10) for _ in range(m)], [rng.uniform(0, 10) for _ in range(n)]
    iv = shift_interval(xs, ys, "difference")
    diffs = sorted(x - y for x in xs for y in ys)
    k = diffs.index(iv.low) + 1
    assert iv.high == diffs[m * n - k]
    assert iv.confidence == pytest.approx(1 - 2 * _brute_u_tail(m, n, k - 1))
    assert iv.confidence >= 0.9


def test_ratio_interval_is_the_pairwise_ratios() -> None:
    iv = shift_interval([94.0, 95.0, 96.0], [40.0, 44.0, 47.0], "ratio")
    assert (iv.low, iv.high) == (94 / 47, 96 / 40) and iv.estimate == pytest.approx(95 / 44)
    with pytest.raises(ValueError):
        shift_interval([1.0], [0.0], "ratio")


@pytest.mark.parametrize(("op", "target", "tol", "verdict"), [
    (">", 1.0, 0, "holds"), (">", 2.5, 0, "inconclusive"), (">", 4.0, 0, "does not hold"),
    ("<", 4.0, 0, "holds"), ("<=", 3.0, 0, "holds"), ("<", 3.0, 0, "inconclusive"),
    ("==", 2.5, 1.0, "holds"), ("==", 2.5, 0.2, "inconclusive"), ("==", 9.0, 1.0, "does not hold"),
    ("!=", 9.0, 1.0, "holds"), ("!=", 2.5, 1.0, "does not hold")])
def test_decide_reads_the_whole_interval(op: str, target: float, tol: float, verdict: str) -> None:
    iv = median_interval([2.0, 2.2, 2.5, 2.8, 3.0])  # [2, 3] at 94 %
    assert decide(iv, op, target, tol) == verdict


def test_too_few_repetitions_are_inconclusive_even_when_clear() -> None:
    assert decide(median_interval([2.0, 2.5, 3.0]), ">", 1.0) == "inconclusive"  # 75 % < 90 %


def test_proportion_interval_is_clopper_pearson() -> None:
    lo, hi = proportion_interval(5, 5)
    assert hi == 1.0 and lo == pytest.approx(0.05 ** (1 / 5), abs=1e-9)
    lo, hi = proportion_interval(0, 5)
    assert lo == 0.0 and hi == pytest.approx(1 - 0.05 ** (1 / 5), abs=1e-9)
    assert [agreement_verdict(k, 3) for k in (0, 1, 3)] == ["does not hold", "inconclusive", "holds"]
