"""Crossovers of a size sweep (mptcplab/results/crossover.py), on made-up ratios."""

from __future__ import annotations

import math

import pytest

from mptcplab.results.crossover import crossover

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
