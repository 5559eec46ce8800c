"""Any kernel MIB counter's delta over a repetition's traffic, per node, by name
(``MPTcpExtRmAddr``, ``TcpExtTCPTimeouts``): what a finding's counter check reads
(mptcplab/checks/counter.py).

The nstat probe (probes/nstat.py) writes every counter of every node, moved or not, with
its delta into the repetition's ``probes/nstat.csv``; that table is read here, so a
counter that exists in the kernel but did not move reads 0 and a counter the kernel does
not have reads as absent (not 0: an older kernel lacks counters a newer one added). A
record whose directory is gone (only rep.json kept) still has the probe's summary in
rep.json: the MPTcpExt counters that moved; from it an MPTcpExt counter that is not
listed reads 0, a TcpExt counter cannot be told (absent).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .model import Repetition

#: the probe that records the counters (its `probes:` field), and its table of every counter
#: (probes/analysis.py writes probes/<probe>.csv)
PROBE = "nstat"
TABLE = f"probes/{PROBE}.csv"
#: the families a finding may name: what the nstat probe keeps besides Tcp* (probes/nstat.py)
FAMILIES = ("MPTcpExt", "TcpExt")


@dataclass(frozen=True)
class CounterReading:
    """One counter of one node in one repetition: its delta, or why there is none."""

    value: int | None
    #: why ``value`` is None (no probe record, node not recorded, counter not in this kernel)
    missing: str | None = None
    #: where it was read: the full table or rep.json's summary of moved MPTcpExt counters
    source: str = TABLE
    #: the kernel has no such counter (the node's full table lists every counter it has, and
    #: not this one): an older kernel, not a missing record
    absent: bool = False


@dataclass(frozen=True)
class NodeCounters:
    """Every counter delta of a repetition, per node; ``complete``: all counters are listed
    (the probe's table), not only the MPTcpExt ones that moved (rep.json's summary)."""

    nodes: dict[str, dict[str, int]]
    complete: bool

    def reading(self, node: str, counter: str) -> CounterReading:
        source = TABLE if self.complete else "rep.json probes.nstat"
        if node not in self.nodes:
            return CounterReading(None, f"node {node} has no nstat record (recorded: "
                                        f"{', '.join(sorted(self.nodes)) or 'none'})", source)
        got = self.nodes[node]
        if counter in got:
            return CounterReading(got[counter], None, source)
        if self.complete:
            return CounterReading(None, f"this kernel has no counter {counter} (not in {TABLE})", source,
                                  absent=True)
        if counter.startswith("MPTcpExt"):
            return CounterReading(0, None, source)  # the summary lists the MPTcpExt counters that moved
        return CounterReading(None, f"{counter} is not in rep.json's summary (MPTcpExt only) and "
                                    f"{TABLE} is not on disk", source)


def _table(r: Repetition) -> dict[str, dict[str, int]] | None:
    d = r.files_dir()
    path = None if d is None else d / TABLE
    if path is None or not path.is_file():
        return None
    out: dict[str, dict[str, int]] = {}
    with path.open(newline="") as f:
        for row in csv.DictReader(f):
            name = row.get("counter") or ""
            if name.startswith(FAMILIES):
                out.setdefault(row["node"], {})[name] = int(float(row["delta"]))
    return out


def _summary(r: Repetition) -> dict[str, dict[str, int]] | None:
    probes = (r.model_extra or {}).get("probes")
    nstat = probes.get("nstat") if isinstance(probes, dict) else None
    if not isinstance(nstat, dict):
        return None
    return {str(n): {str(k): int(v) for k, v in c.items()} for n, c in nstat.items() if isinstance(c, dict)}


def node_counters(r: Repetition) -> NodeCounters | None:
    """The repetition's counter deltas per node; None: it ran without the nstat probe."""
    table = _table(r)
    if table is not None:
        return NodeCounters(table, complete=True)
    summary = _summary(r)
    return None if summary is None else NodeCounters(summary, complete=False)


def counter_reading(r: Repetition, node: str, counter: str) -> CounterReading:
    """``counter``'s delta over the traffic on ``node`` in repetition ``r``."""
    got = node_counters(r)
    if got is None:
        return CounterReading(None, "the repetition has no nstat record (probes: {nstat: true})", TABLE)
    return got.reading(node, counter)
