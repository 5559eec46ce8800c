"""A claim about spread (P002.10: a larger standard deviation in one scenario than in
another) is decided on an interval, like every other claim: a difference of spreads inside
the bootstrap's noise is inconclusive, a clear one holds or does not hold, and too few
repetitions are never decided."""

from __future__ import annotations

import pytest

from mptcplab.checks import stats


def test_a_clear_difference_of_spreads_decides() -> None:
    wide = [1.0, 9.0, 2.0, 8.0, 3.0, 7.0, 1.5, 8.5, 2.5, 7.5]
    narrow = [5.0, 5.1, 4.9, 5.05, 4.95, 5.0, 5.1, 4.9, 5.02, 4.98]
    iv = stats.spread_interval(wide, narrow)
    assert iv.enough and iv.low > 0
    assert stats.decide(iv, ">", 0.0) == stats.HOLDS
    assert stats.decide(stats.spread_interval(narrow, wide), ">", 0.0) == stats.FAILS


def test_spreads_alike_are_inconclusive_where_a_point_comparison_would_decide() -> None:
    a = [4.0, 6.0, 5.0, 5.5, 4.5, 6.5, 3.5, 5.2, 4.8, 5.9]
    b = [4.1, 5.9, 5.1, 5.4, 4.6, 6.4, 3.7, 5.1, 4.9, 5.8]
    assert stats.spread_interval(a, b).estimate > 0  # the point says "larger"
    assert stats.decide(stats.spread_interval(a, b), ">", 0.0) == stats.INCONCLUSIVE


def test_few_repetitions_are_not_decided_and_the_interval_is_reproducible() -> None:
    xs, ys = [1.0, 9.0, 2.0, 8.0, 5.0], [5.0, 5.1, 4.9, 5.0, 5.05]
    iv = stats.spread_interval(xs, ys)
    assert not iv.enough and stats.decide(iv, ">", 0.0) == stats.INCONCLUSIVE
    assert stats.spread_interval(xs, ys) == iv  # a fixed seed: the same repetitions, the same interval


def test_a_ratio_of_spreads_and_its_errors() -> None:
    wide = [1.0, 9.0, 2.0, 8.0, 3.0, 7.0, 1.5, 8.5, 2.5, 7.5]
    iv = stats.spread_interval(wide, [5.0, 5.2, 4.8, 5.1, 4.9, 5.0, 5.3, 4.7, 5.1, 4.9], "ratio")
    assert iv.low > 1
    with pytest.raises(ValueError):
        stats.spread_interval(wide, [5.0] * 10, "ratio")
    with pytest.raises(ValueError):
        stats.spread_interval([1.0])
