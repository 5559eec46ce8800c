"""Metrics over the congestion window in time (tcp_probe's ``probes/subflow_series.csv``):
where a path's or a flow's cwnd sits, how high it peaks (Kato et al. 2020, Fig 6: the slow
subflow's ~700 packets), and how much of the time it stays at the initial window (Kato et
al. 2019, Figures 11 and 13: LIA's subflows held at 10 packets).

A repetition's sample is one 100 ms bin of the series with a tcp_probe sample in it: the
data sender's cwnd at its last ACK in the bin (join.py). Bins are time-weighted where the
per-ACK samples are not (a fast flow has more ACKs, so a per-ACK median leans towards its
large windows); a bin with no ACK has no sample and is left out, not filled in. Samples above
``CWND_IMPLAUSIBLE`` (2^21 segments, more than any TCP window) are left out as well: the
analysis counts them per subflow in the record (``probes.tcp_probe.cwnd_implausible``, with a
warning) and ``cwnd_implausible`` reports that count, so a jump is visible, never averaged in.

Selection: ``flow`` (a flow of experiment.yml; default the measured flow), ``path`` (its
subflows on that path; all of them without), ``window`` (seconds from the measured flow's
start, on the series' axis as series.py converts it). A repetition without the series (no
tcp_probe probe), or with no sample in the selection, has no value.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..analysis.cwnd_events import implausible
from ..metricdecl import INITIAL_CWND
from .base import Select, register
from .cc_depth import _probes
from .flows import selected_flow
from .series import BIN_S, _csv, capture_offset

if TYPE_CHECKING:
    from ..record.model import Repetition

SERIES_FILE = "probes/subflow_series.csv"


def cwnd_samples(r: Repetition, sel: Select) -> np.ndarray | None:
    """The selection's plausible per-bin cwnd samples (module doc); None without any."""
    s = _csv(r, SERIES_FILE)
    if s is None or s.empty or "snd_cwnd" not in s.columns:
        return None
    f, measured = selected_flow(r, sel), selected_flow(r, Select())
    if f is None:
        return None
    # rows without a flow name (a series written before it had flows) are the measured flow's
    named = s["flow"] if "flow" in s.columns else pd.Series(np.nan, index=s.index)
    mine = named.astype(str) == f.name
    if measured is not None and f.name == measured.name:
        mine |= named.isna()
    s = s[mine]
    if sel.path is not None:
        s = s[s["path"].astype(str) == sel.path]
    s = s[pd.to_numeric(s["samples"], errors="coerce").fillna(0) > 0]
    if sel.window is not None:
        off = capture_offset(r)
        b = (pd.to_numeric(s["t"]) / BIN_S).round()
        lo = math.ceil(round((sel.window[0] + off) / BIN_S, 6))
        hi = math.ceil(round((sel.window[1] + off) / BIN_S, 6))
        s = s[(b >= lo) & (b < hi)]
    cwnd = pd.to_numeric(s["snd_cwnd"], errors="coerce").dropna()
    cwnd = cwnd[~implausible(cwnd)]
    return cwnd.to_numpy(dtype=float) if len(cwnd) else None


def _stat(fn: Callable[[np.ndarray], Any]) -> Callable[[Repetition, Select], float | None]:
    def per_rep(r: Repetition, sel: Select) -> float | None:
        x = cwnd_samples(r, sel)
        return None if x is None else float(fn(x))
    return per_rep


def _implausible(r: Repetition, sel: Select) -> float | None:
    tp = _probes(r).get("tcp_probe")
    if not isinstance(tp, dict):
        return None  # no tcp_probe probe
    f = selected_flow(r, sel)
    odd: dict[str, Any] = tp.get("cwnd_implausible") or {}
    mine = [v for v in odd.values() if isinstance(v, dict) and (f is None or v.get("flow") in (f.name, ""))
            and (sel.path is None or v.get("path") == sel.path)]
    return float(sum(int(v.get("samples", 0)) for v in mine))


register("cwnd_median", _stat(np.median))
register("cwnd_p95", _stat(lambda x: np.percentile(x, 95)))
register("cwnd_max", _stat(np.max))
register("cwnd_initial_share", _stat(lambda x: np.mean(x <= INITIAL_CWND)))
register("cwnd_implausible", _implausible)
