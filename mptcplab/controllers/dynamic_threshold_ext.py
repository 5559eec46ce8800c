"""dynamic_threshold_ext: Algorithm 4 of the asymmetric-subflows paper (Extended
Dynamic Threshold): Algorithm 3 (dynamic_threshold.py: how it samples, demotes and
why through the endpoint flag), plus a timer that lets a demoted path transmit
again: ``reprobe_every`` (T) after its demotion the endpoint is set ``nobackup`` for
``reprobe_for`` (W); at the first step after W it is demoted again if Algorithm 3's
condition still names it the bad path, else it stays in use (restored). The paper
gives neither T, W nor the unmark rule: these are ours (_dynthresh.py, docs/controllers.md).

events.csv rows: ``decision=demote`` / ``reprobe`` / ``redemote`` (endpoint_flags
actions) and ``decision=restore`` (action ``decision``: nothing to run, the re-probe
already set nobackup), each with the step's numbers in ``detail``.
"""

from __future__ import annotations

from pydantic import Field, field_validator

from ..units import parse_time
from ..values.fields import check_unit
from . import _dynthresh as dt
from .dynamic_threshold import DynamicThreshold
from .dynamic_threshold import Params as Alg3Params


class Params(Alg3Params):
    #: T: a demoted path is re-probed this long after its (re)demotion
    reprobe_every: str | float = Field(default="2s", description="T: re-probe a demoted path this long after demotion")
    #: W: how long a re-probe lets it transmit before it is judged again (rounded up to a step)
    reprobe_for: str | float = Field(default="500ms", description="W: how long a re-probe lets it transmit")

    @field_validator("reprobe_every", "reprobe_for")
    @classmethod
    def _time(cls, v: str | float) -> str | float:
        check_unit(parse_time, v)
        if not 0.01 <= parse_time(v) <= 3600:
            raise ValueError(f"{v!r} must be between 10 ms and 1 h")
        return v


class DynamicThresholdExt(DynamicThreshold):
    Params = Params

    def new_core(self) -> dt.DynamicThreshold:
        p = self.params
        # half a step of slack: a timer falls due at the step nearest to it (steps come a
        # little late each, by the ss spawn), not one Δ after it
        return dt.DynamicThreshold(parse_time(p.reprobe_every), parse_time(p.reprobe_for), warmup=p.warmup_s,
                                     slack=self.spec.interval_s / 2)


CONTROLLER = DynamicThresholdExt
