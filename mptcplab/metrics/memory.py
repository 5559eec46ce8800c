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

from .base import Select, register
from .flows import selected_flow

if TYPE_CHECKING:
    from ..record.model import Repetition

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


register("skmem_rcv_max_bytes", _side(True, "rcv_max_bytes"))
register("skmem_snd_max_bytes", _side(False, "snd_max_bytes"))
