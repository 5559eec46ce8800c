"""Data ranges cut into elementary intervals, and the first arrival of each interval.

Hand-written numpy shared by the head-of-line delay (delivery.py) and the first-copy
accounting (usefulness.py): the boundaries of ranges [start, start + length), sorted and
unique, cut the data space into intervals [bounds[k], bounds[k + 1]) that every range covers
whole or not at all, so "when did this byte first arrive" is a per-interval minimum instead of
a per-byte one.
"""

from __future__ import annotations

import numpy as np


def cover(start: np.ndarray, length: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(bounds, si, n, idx): range i covers the n[i] intervals from si[i]; idx lists the
    covered intervals range after range (``np.repeat(x, n)`` pairs each with its range's x)."""
    end = start + length
    bounds = np.sort(np.concatenate((start, end)))
    bounds = bounds[np.r_[True, bounds[1:] != bounds[:-1]]]     # unique (faster than np.unique here)
    si = np.searchsorted(bounds, start)
    n = np.searchsorted(bounds, end) - si
    idx = np.repeat(si - np.cumsum(n) + n, n) + np.arange(int(n.sum()))
    return bounds, si, n, idx


def first_arrival(start: np.ndarray, length: np.ndarray, arrival: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bounds, si, first): ``first[k]`` the earliest arrival among the ranges covering
    interval k (inf: none; the last bound starts no interval)."""
    bounds, si, n, idx = cover(start, length)
    first = np.full(len(bounds), np.inf)
    np.minimum.at(first, idx, np.repeat(arrival, n))
    return bounds, si, first


def at(bounds: np.ndarray, first: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The first arrival of the bytes ``x`` (inf: in no range)."""
    k = np.searchsorted(bounds, x, side="right") - 1
    inside = (k >= 0) & (k < len(bounds) - 1)
    return np.where(inside, first[np.clip(k, 0, max(len(first) - 1, 0))], np.inf)
