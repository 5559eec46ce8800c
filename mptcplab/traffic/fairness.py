"""Shares and Jain's fairness index across the measured flows of a repetition.

Jain's index (Jain, Chiu, Hawe 1984): J = (sum x)^2 / (n * sum x^2), 1/n (one flow takes
everything) to 1 (equal). The one definition: the repetition record and the summary's
aggregate both call these functions.
"""

from __future__ import annotations

from collections.abc import Mapping


def jain_index(values: list[float]) -> float | None:
    """None for no flow or when nothing was carried (the index is undefined at 0/0)."""
    if not values:
        return None
    sq = sum(v * v for v in values)
    return (sum(values) ** 2) / (len(values) * sq) if sq > 0 else None


def shares(goodputs: Mapping[str, float]) -> dict[str, float | None]:
    """Each flow's fraction of the summed goodput (None when the sum is 0)."""
    total = sum(goodputs.values())
    return {k: (v / total if total > 0 else None) for k, v in goodputs.items()}
