"""Metrics of the socket-memory probe (``probes: {ss_interval: ...}``, probes/memory.py):
the most memory one connection of a flow held at once, summed over its subflows and its
MPTCP socket, as ``ss -m`` sampled it. Read from the repetition record's probe summary
(rep.json ``probes.ss_interval``), so they need no file; a repetition without the probe
has no value (None).

``flow`` selects a flow of experiment.yml by name; without it, the primary measured flow.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .base import Metric, Select, register
from .latency import FLOW, selected_flow

if TYPE_CHECKING:
    from ..results.model import Repetition

PROBE = "ss_interval"


def _flow_summary(r: Repetition, sel: Select) -> dict[str, Any] | None:
    probes = getattr(r, "probes", None)
    f = selected_flow(r, sel)
    if not isinstance(probes, dict) or f is None:
        return None
    entry = (probes.get(PROBE) or {}).get("flows", {}).get(f.name)
    return entry if isinstance(entry, dict) else None


def _side(receiver: bool, field: str) -> Callable[[Repetition, Select], float | None]:
    def per_rep(r: Repetition, sel: Select) -> float | None:
        entry = _flow_summary(r, sel)
        if entry is None:
            return None
        sender = entry.get("sender", "client")
        role = ("server" if sender == "client" else "client") if receiver else sender
        v = (entry.get(role) or {}).get(field)
        return None if v is None else float(v)
    return per_rep


for _m in [
    Metric("skmem_rcv_max_bytes", _side(True, "rcv_max_bytes"), "max",
           "at the flow's receiver (the server of an upload), the largest sum over one connection's subflows "
           "and MPTCP socket of rmem_alloc (received, not yet read) in one ss sample", unit="bytes", accepts=FLOW),
    Metric("skmem_snd_max_bytes", _side(False, "snd_max_bytes"), "max",
           "at the flow's sender (the client of an upload), the largest sum over one connection's subflows "
           "and MPTCP socket of wmem_queued (written, not yet acknowledged) in one ss sample", unit="bytes",
           accepts=FLOW),
]:
    register(_m)
