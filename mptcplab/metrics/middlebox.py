"""Middlebox-lab metrics (labs/middlebox): the MPTCP MIB counters of each end, the client's
time to give up on MP_CAPABLE SYNs and what the routers' middlebox rules matched. (Whether
the transfer arrived intact is the transfer kind's: traffic/transfer_metrics.py.)

* ``mib_<side>_<Counter>``: a counter's delta over the traffic on the measured flow's client
  or server, read from the nstat probe's record by node name: the lab's two hosts are named
  ``client`` and ``server``. A counter that did not move is 0; no probe, None.
* ``syn_fallback_s``: first SYN -> first SYN without MPTCP option on the initial subflow, from
  the capture (analysis/flows.py).
* ``middlebox_packets``: packets the routers' middlebox rules counted (the run's nft counters).
* ``mbox_split``, ``mbox_merged``: segments the rewriting middleboxes (mptcplab-mbox) split or
  merged, summed over the repetition's boxes (rep.json ``daemon_stats``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..metricdecl import COUNTERS, SIDES
from .base import Select, register

if TYPE_CHECKING:
    from ..record.model import Repetition


def mib_delta(r: Repetition, node: str, counter: str) -> int | None:
    """``MPTcpExt<counter>``'s delta on ``node`` (the nstat probe's record); None: no probe."""
    probes = (r.model_extra or {}).get("probes") or {}
    nstat = probes.get("nstat") if isinstance(probes, dict) else None
    if not isinstance(nstat, dict):
        return None
    counters = nstat.get(node) or {}
    return int(counters.get(f"MPTcpExt{counter}", 0)) if isinstance(counters, dict) else None


def _mib(side: str, counter: str) -> Callable[[Repetition, Select], float | None]:
    def per_rep(r: Repetition, _sel: Select) -> float | None:
        v = mib_delta(r, side, counter)
        return None if v is None else float(v)
    return per_rep


def _syn_fallback(r: Repetition, _sel: Select) -> float | None:
    vals = [s.syn_fallback_s for s in r.subflows if s.initial and s.syn_fallback_s is not None]
    return min(vals) if vals else None


def _middlebox_packets(r: Repetition, _sel: Select) -> float | None:
    counts = (r.model_extra or {}).get("middlebox")
    if not isinstance(counts, dict):
        return None
    return float(sum(int(v) for v in counts.values() if isinstance(v, int) and v >= 0))


def _mbox(counter: str) -> Callable[[Repetition, Select], float | None]:
    def per_rep(r: Repetition, _sel: Select) -> float | None:
        stats = r.daemon_stats
        boxes = [st for st in stats.values() if isinstance(st, dict) and "mbox" in st] \
            if isinstance(stats, dict) else []
        if not boxes:  # no rewriting box ran: nothing to count, not zero
            return None
        return float(sum(int(st.get(counter) or 0) for st in boxes))
    return per_rep


register("mbox_split", _mbox("split"))
register("mbox_merged", _mbox("merged"))
register("syn_fallback_s", _syn_fallback)
register("middlebox_packets", _middlebox_packets)
for _side in SIDES:
    for _counter in COUNTERS:
        register(f"mib_{_side}_{_counter}", _mib(_side, _counter))
