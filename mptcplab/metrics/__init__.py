"""The metrics a run reports (base.py: Metric, Select, the registry).

One module per family; importing this package registers them all. A new family: a module
here calling ``register``, and one import line below.
"""

from . import core  # noqa: F401  (registers on import)
from .base import METRICS, SELECTORS, Metric, Select, Statistic, refusal, register

__all__ = ["METRICS", "SELECTORS", "Metric", "Select", "Statistic", "refusal", "register"]
