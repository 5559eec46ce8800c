"""Intervals over a scenario's repetitions, and the verdict an interval gives a claim.

A finding's check compares a statistic of the repetitions with the paper's value (or two
scenarios with each other). The verdict comes from an interval of that statistic, not from
its point value: *holds* when the whole interval satisfies the claim, *does not hold* when
none of it does, *inconclusive* when it straddles the claim's boundary, or when the
repetitions are too few for an interval at the required confidence.

Convention (docs/findings-audit.md, "How a verdict is reached"): intervals are two-sided
at 90 %. A claim of order ("<", ">") is then decided at 95 % one-sided confidence, and a
claim of equality within a tolerance ("==") is the two one-sided tests (TOST) at 5 %
each, the usual equivalence test, which reads exactly a 90 % interval.

The intervals are distribution-free, because a handful of repetitions of a network
measurement are neither normal nor symmetric:

- the median of one scenario: the order statistics x(k) and x(n+1-k), with the exact
  binomial coverage 1 - 2 P(B <= k-1), B ~ Bin(n, 1/2);
- a difference or a ratio between two scenarios: the Hodges-Lehmann estimate (the
  median of all pairwise differences, or ratios) with Moses' interval, whose coverage
  comes from the exact Mann-Whitney distribution (a ratio is the shift of the logarithms,
  so its interval is the same order statistics of the pairwise ratios).

- the standard deviation of one scenario's repetitions, or the difference or ratio of two
  scenarios' standard deviations (a claim about spread): a percentile bootstrap, each
  scenario resampled on its own (``SPREAD_RESAMPLES`` times, a fixed seed, so the same
  repetitions give the same interval). Its coverage is nominal, not exact: with fewer than
  ``SPREAD_MIN_N`` repetitions in a scenario it is reported below the required level, and
  the verdict is inconclusive.

Written here because neither is in the pinned stack (pandas and numpy have no interval of
a median or of a Hodges-Lehmann shift; SciPy has neither either, and would add 35 MB for
the binomial and Mann-Whitney counts, which are a few lines of integer arithmetic).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Literal

from ..record.model import Verdict

#: the two-sided confidence an interval must reach for a decided verdict (module docstring)
CONFIDENCE = 0.90

HOLDS: Verdict = "holds"
FAILS: Verdict = "does not hold"
INCONCLUSIVE: Verdict = "inconclusive"
NOT_MEASURABLE: Verdict = "not measurable"


@dataclass(frozen=True)
class Interval:
    """A statistic's estimate and its interval [low, high] of coverage ``confidence``
    (exact for the methods here; below CONFIDENCE when the repetitions are too few)."""

    estimate: float
    low: float
    high: float
    confidence: float
    method: str

    @property
    def enough(self) -> bool:
        return self.confidence >= CONFIDENCE - 1e-12

    def text(self) -> str:
        return f"[{self.low:.4g}, {self.high:.4g}] ({self.confidence:.0%}, {self.method})"


def _binom_cdf_half(k: int, n: int) -> float:
    """P(B <= k) for B ~ Bin(n, 1/2)."""
    return sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n


def median_interval(xs: Sequence[float], level: float = CONFIDENCE) -> Interval:
    """The sample median and the narrowest symmetric order-statistic interval whose exact
    coverage reaches ``level``; the widest, [min, max], with its lower coverage when
    ``len(xs)`` is too small for ``level``."""
    if not xs:
        raise ValueError("no values")
    v = sorted(xs)
    n = len(v)
    alpha = 1 - level
    k = 1  # x(k) .. x(n+1-k), 1-based
    while k + 1 <= (n + 1) // 2 and _binom_cdf_half(k, n) <= alpha / 2:
        k += 1
    cover = 1 - 2 * _binom_cdf_half(k - 1, n)
    return Interval(float(statistics.median(v)), v[k - 1], v[n - k], cover, "order statistics of the median")


@cache
def _mann_whitney_counts(m: int, n: int) -> tuple[int, ...]:
    """The number of arrangements of m x's and n y's with U = u (pairs x > y), for every u
    from 0 to m n: the coefficients of the Gaussian binomial [m+n choose m]."""
    if m == 0 or n == 0:
        return (1,)
    # U(m, n) = U(m-1, n) + n when the largest value is an x, else U(m, n-1)
    a = _mann_whitney_counts(m - 1, n)
    b = _mann_whitney_counts(m, n - 1)
    out = [0] * (m * n + 1)
    for u, c in enumerate(a):
        out[u + n] += c
    for u, c in enumerate(b):
        out[u] += c
    return tuple(out)


def _shift_k(m: int, n: int, level: float) -> tuple[int, float]:
    """Moses' k (1-based order statistic of the m n pairwise differences) and its exact
    coverage 1 - 2 P(U <= k-1): the largest k whose coverage still reaches ``level``;
    k = 1 with its lower coverage when none does."""
    counts = _mann_whitney_counts(m, n)
    total = math.comb(m + n, m)
    alpha = 1 - level
    k = 1
    while k + 1 <= (m * n + 1) // 2 and sum(counts[:k + 1]) / total <= alpha / 2:
        k += 1
    return k, 1 - 2 * sum(counts[:k]) / total


def shift_interval(xs: Sequence[float], ys: Sequence[float], how: Literal["difference", "ratio"],
                   level: float = CONFIDENCE) -> Interval:
    """The Hodges-Lehmann estimate of x - y (or x / y) over two scenarios' repetitions and
    Moses' interval at ``level`` (module docstring). A ratio needs every y > 0 and x >= 0."""
    if not xs or not ys:
        raise ValueError("no values")
    if how == "ratio":
        if any(y <= 0 for y in ys) or any(x < 0 for x in xs):
            raise ValueError("a ratio needs positive denominators and non-negative numerators")
        pairs = sorted(x / y for x in xs for y in ys)
    else:
        pairs = sorted(x - y for x in xs for y in ys)
    m, n = len(xs), len(ys)
    k, cover = _shift_k(m, n, level)
    name = "Hodges-Lehmann, Moses interval"
    return Interval(float(statistics.median(pairs)), pairs[k - 1], pairs[m * n - k], cover, name)


#: bootstrap resamples of a spread interval, and its seed (reproducible intervals)
SPREAD_RESAMPLES = 4000
SPREAD_SEED = 20261128
#: repetitions per scenario below which a spread's bootstrap interval is not trusted (a
#: standard deviation of four values resampled has too few distinct resamples): a convention
SPREAD_MIN_N = 8


def spread_interval(xs: Sequence[float], ys: Sequence[float] | None = None,
                    how: Literal["difference", "ratio"] = "difference", level: float = CONFIDENCE) -> Interval:
    """The sample standard deviation of ``xs`` (or, with ``ys``, the difference or ratio of
    the two scenarios' standard deviations) with a percentile-bootstrap interval at
    ``level`` (module docstring); inconclusive-grade coverage below SPREAD_MIN_N."""
    import random

    def sd(v: Sequence[float]) -> float:
        # the sample standard deviation in floats (statistics.stdev's exact fractions are
        # ~50x slower, and this runs thousands of times per check)
        n = len(v)
        if n < 2:
            return 0.0
        m = math.fsum(v) / n
        return math.sqrt(math.fsum((x - m) ** 2 for x in v) / (n - 1))

    if len(xs) < 2 or (ys is not None and len(ys) < 2):
        raise ValueError("a standard deviation needs at least 2 repetitions")

    def stat(a: Sequence[float], b: Sequence[float] | None) -> float:
        if b is None:
            return sd(a)
        db = sd(b)
        if how == "ratio":
            if db == 0:
                raise ZeroDivisionError
            return sd(a) / db
        return sd(a) - db

    try:
        point = stat(xs, ys)
    except ZeroDivisionError:
        raise ValueError("a ratio to a spread of zero is not defined") from None
    rng = random.Random(SPREAD_SEED)
    draws = []
    for _ in range(SPREAD_RESAMPLES):
        a = rng.choices(xs, k=len(xs))
        b = None if ys is None else rng.choices(ys, k=len(ys))
        try:
            draws.append(stat(a, b))
        except ZeroDivisionError:
            draws.append(math.inf)
    draws.sort()
    tail = (1 - level) / 2
    lo = draws[int(math.floor(tail * (len(draws) - 1)))]
    hi = draws[int(math.ceil((1 - tail) * (len(draws) - 1)))]
    enough = len(xs) >= SPREAD_MIN_N and (ys is None or len(ys) >= SPREAD_MIN_N)
    what = "standard deviation" if ys is None else f"{how} of standard deviations"
    return Interval(point, lo, hi, level if enough else min(level, 0.5),
                    f"{what}, percentile bootstrap ({SPREAD_RESAMPLES:,} resamples, nominal)")


def paired_interval(pairs: Sequence[tuple[float, float]], how: Literal["difference", "ratio"],
                    level: float = CONFIDENCE) -> Interval:
    """Two statistics of the same repetitions (e.g. two time windows of one transfer): the
    median of the per-repetition differences (or ratios) with its order-statistic interval,
    the sign test's; pairing removes the variation between repetitions that Moses' interval,
    for independent samples, would have to carry."""
    if how == "ratio":
        if any(y <= 0 for _, y in pairs) or any(x < 0 for x, _ in pairs):
            raise ValueError("a ratio needs positive denominators and non-negative numerators")
        d = [x / y for x, y in pairs]
    else:
        d = [x - y for x, y in pairs]
    iv = median_interval(d, level)
    return Interval(iv.estimate, iv.low, iv.high, iv.confidence, f"paired {how}s, sign-test interval of the median")


def decide(iv: Interval, op: str, target: float, tolerance: float = 0.0) -> Verdict:
    """The verdict of the claim ``statistic op target`` (``==``/``!=`` within ``tolerance``)
    on an interval of the statistic; inconclusive below the required confidence."""
    eps = 1e-9 * max(1.0, abs(target))
    lo, hi = iv.low, iv.high
    if op == "==":
        inside, outside = lo >= target - tolerance - eps and hi <= target + tolerance + eps, \
            hi < target - tolerance - eps or lo > target + tolerance + eps
        verdict = HOLDS if inside else FAILS if outside else INCONCLUSIVE
    elif op == "!=":
        inside, outside = lo >= target - tolerance - eps and hi <= target + tolerance + eps, \
            hi < target - tolerance - eps or lo > target + tolerance + eps
        verdict = HOLDS if outside else FAILS if inside else INCONCLUSIVE
    elif op in ("<", "<="):
        strict = op == "<"
        yes = hi < target - eps if strict else hi <= target + eps
        no = lo >= target - eps if strict else lo > target + eps
        verdict = HOLDS if yes else FAILS if no else INCONCLUSIVE
    elif op in (">", ">="):
        strict = op == ">"
        yes = lo > target + eps if strict else lo >= target - eps
        no = hi <= target + eps if strict else hi < target - eps
        verdict = HOLDS if yes else FAILS if no else INCONCLUSIVE
    else:
        raise ValueError(f"unknown operator {op!r}")
    if verdict != INCONCLUSIVE and not iv.enough:
        return INCONCLUSIVE
    return verdict


def point_side(x: float, op: str, target: float, tolerance: float = 0.0) -> bool:
    """Whether the point estimate alone is on the claim's side (what an inconclusive
    verdict leans to)."""
    point = Interval(x, x, x, 1.0, "point")
    return decide(point, op, target, tolerance) == HOLDS


def proportion_interval(k: int, n: int, level: float = CONFIDENCE) -> tuple[float, float]:
    """The exact (Clopper-Pearson) interval of a proportion k/n, by bisection on the
    binomial tails (no beta quantile in the standard library)."""
    if n <= 0 or not 0 <= k <= n:
        raise ValueError("need 0 <= k <= n, n > 0")
    alpha = 1 - level

    def cdf(j: int, p: float) -> float:
        return sum(math.comb(n, i) * p ** i * (1 - p) ** (n - i) for i in range(j + 1))

    def solve(f: object, want: float, increasing: bool) -> float:
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = (lo + hi) / 2
            v = f(mid)  # type: ignore[operator]
            if (v < want) == increasing:
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2

    low = 0.0 if k == 0 else solve(lambda p: 1 - cdf(k - 1, p), alpha / 2, True)
    high = 1.0 if k == n else solve(lambda p: cdf(k, p), alpha / 2, False)
    return low, high


def agreement_verdict(k: int, n: int) -> Verdict:
    """A claim about what happens in a repetition (a capture fact), seen in k of n:
    holds when every repetition shows it, does not hold when none does, else inconclusive
    (the repetitions disagree; the proportion's interval says how much)."""
    if n == 0:
        return NOT_MEASURABLE
    return HOLDS if k == n else FAILS if k == 0 else INCONCLUSIVE


__all__ = ["CONFIDENCE", "FAILS", "HOLDS", "INCONCLUSIVE", "NOT_MEASURABLE", "Interval", "Verdict",
           "agreement_verdict", "decide", "median_interval", "paired_interval", "point_side",
           "proportion_interval", "shift_interval"]
