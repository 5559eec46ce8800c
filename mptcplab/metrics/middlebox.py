"""Middlebox-lab metrics (labs/middlebox): whether the transfer arrived intact, the MPTCP MIB
counters of each end, the client's time to give up on MP_CAPABLE SYNs and what the routers'
middlebox rules matched.

* ``transfer_intact``: 1 when the transfer kind's SHA-256 of what the server received equals
  the client's of what it sent (same length), else 0 (traffic/transfer.py).
* ``transfer_received_fraction``: bytes the server received over the bytes the flow was to
  send: below 1 when the transfer stalled and the run stopped it at its duration limit.
* ``transfer_differing_bytes``, ``transfer_foreign_bytes``: bytes where what arrived differs
  from the sent stream, and of those the ones not shown to be the stream's own bytes from
  another offset (the server's comparison, traffic/transfer_diff.py): 0 and 0 when intact;
  a receiver that misplaces data has differing bytes but no foreign ones.
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
from ..traffic.transfer_result import TransferMetrics
from .base import Select, register
from .flows import selected_flow

if TYPE_CHECKING:
    from ..record.model import Repetition


def _transfer_metrics(r: Repetition, sel: Select) -> TransferMetrics | None:
    f = selected_flow(r, sel)
    return None if f is None else f.metrics_of(TransferMetrics)


def _intact(r: Repetition, sel: Select) -> float | None:
    t = _transfer_metrics(r, sel)
    if t is None or t.verdict is None:
        return None
    return 1.0 if t.verdict == "equal" else 0.0


def _received_fraction(r: Repetition, sel: Select) -> float | None:
    t = _transfer_metrics(r, sel)
    if t is None or not t.size or t.received_bytes is None:
        return None
    return t.received_bytes / t.size


def _transfer(field: str) -> Callable[[Repetition, Select], float | None]:
    def per_rep(r: Repetition, sel: Select) -> float | None:
        t = _transfer_metrics(r, sel)
        v = None if t is None else getattr(t, field)
        return None if v is None else float(v)
    return per_rep


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


register("transfer_intact", _intact)
register("transfer_received_fraction", _received_fraction)
register("transfer_differing_bytes", _transfer("differing_bytes"))
register("transfer_foreign_bytes", _transfer("foreign_bytes"))
register("mbox_split", _mbox("split"))
register("mbox_merged", _mbox("merged"))
register("syn_fallback_s", _syn_fallback)
register("middlebox_packets", _middlebox_packets)
for _side in SIDES:
    for _counter in COUNTERS:
        register(f"mib_{_side}_{_counter}", _mib(_side, _counter))
