"""How a declared metric is computed, and the one registry of computations.

A metric is defined in two steps (docs/results-format.md, "Aggregates"): ``per_rep`` gives
one value per repetition for a selection (a path, a named flow, a time window), and
``over_reps`` combines those values over a scenario's repetitions. What a metric is (its
name, ``over_reps``, unit, scaling, selectors) is declared in mptcplab/metricdecl.py, which
the loader's check of published.yml and the scaling read without this package; the families
here compute ``per_rep`` and ``register`` it against the declared name on import. The
aggregates and the findings read this registry: a declaration with its computation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from ..metricdecl import DECLARED, MetricDecl, Select
from ..record import model as _record  # noqa: F401  (loads the traffic kinds' result modules, which declare their metrics)

if TYPE_CHECKING:
    from ..record.model import Repetition

#: value of one repetition for a selection; None: absent (not measured, an older run)
PerRep = Callable[["Repetition", Select], float | None]


@dataclass(frozen=True, kw_only=True)
class Metric(MetricDecl):
    """A declared metric with its computation."""

    per_rep: PerRep


METRICS: dict[str, Metric] = {}


def register(name: str, per_rep: PerRep) -> Metric:
    """Register the computation of declared metric ``name`` (a family module at import)."""
    if name not in DECLARED:
        raise ValueError(f"metric {name} is not declared (mptcplab/metricdecl.py)")
    if name in METRICS:
        raise ValueError(f"metric {name} is registered twice")
    d = DECLARED[name]
    m = METRICS[name] = Metric(**{f.name: getattr(d, f.name) for f in fields(d)}, per_rep=per_rep)
    return m


def check_registry() -> None:
    """Every declared metric has a computation (one: ``register`` refuses a second, and a
    name not declared); run when the package has imported its families."""
    missing = sorted(set(DECLARED) - set(METRICS))
    if missing:
        raise RuntimeError(f"metrics declared without a computation: {', '.join(missing)}")
