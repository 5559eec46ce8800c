"""The CPU-bound rule of a run's validity, in one place for the run (labrun) and the campaign
merge: iperf3's own CPU accounting above ``CPU_BOUND_PERCENT`` means the sender or receiver,
not the link, set the rate, so the numbers say nothing about the network. A scenario that
measures exactly that (``cpu_bound: true``: labs/rcvbuf's DSS-checksum scenarios, unshaped on
veth) is exempt: full CPU is its result.

A run recorded before its lab declared a scenario CPU-bound carries the reason in its
summary; the merge drops it for the scenarios the lab now declares (``exempt``), and says so."""

from __future__ import annotations

import re
from collections.abc import Iterable

CPU_BOUND_PERCENT = 90.0
_REASON = re.compile(r"^(?P<scenario>.+) rep \d+: iperf3 reports \d+% CPU: the measurement was CPU-bound$")


def cpu_bound_reason(scenario: str, rep: int, cpu: Iterable[float | None], declared: bool) -> str | None:
    """Why a repetition's timing is void for the CPU, or None (below the bound, or declared)."""
    seen = [c for c in cpu if c is not None]
    if declared or not seen or max(seen) <= CPU_BOUND_PERCENT:
        return None
    return f"{scenario} rep {rep}: iperf3 reports {max(seen):.0f}% CPU: the measurement was CPU-bound"


def exempt(reason: str, declared: set[str]) -> bool:
    """Whether ``reason`` is the CPU-bound rule's, for a scenario in ``declared``."""
    m = _REASON.match(reason)
    return bool(m and m.group("scenario") in declared)
