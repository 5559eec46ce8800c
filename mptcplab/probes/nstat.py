"""``nstat``: each node's SNMP/MIB counters (MPTcpExt*, TcpExt*, Tcp*) read before and
after the traffic; the table holds both readings and the delta.

The counters are per network namespace, so each node is read inside its own.
``-a`` reads absolute values and ``-s`` leaves nstat's history file alone: the history
lives in /tmp, which every namespace of the host shares, and differencing against
another node's (or another run's) history would be wrong. The delta is ours.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..commands import Cmd, cmd
from ..steps.base import Planned
from .base import Joined, Probe, Setting, probes_dir

if TYPE_CHECKING:
    from ..steps.base import Rep

#: the counters kept in the table (nstat reports ~400 per namespace)
PREFIXES = ("MPTcpExt", "TcpExt", "Tcp")
COLUMNS = ["node", "counter", "before", "after", "delta"]
PHASES = ("before", "after")
#: the kernel's MPTCP black-hole detection (6.12+): an MP_CAPABLE SYN left unanswered until
#: the plain retry (net.mptcp.syn_retrans_before_tcp_fallback) counts as a middlebox black
#: hole, and new connections of that namespace then start without MP_CAPABLE for
#: net.mptcp.blackhole_timeout seconds
BLACKHOLE = "MPTcpExtBlackhole"
SYN_TX_DISABLED = "MPTcpExtMPCapableSYNTXDisabled"


def nstat_cmd(node: str) -> Cmd:
    return cmd("nstat", "-a", "-z", "-s", "-j", node=node, why="MIB counters of this node's namespace")


def file_name(node: str, phase: str) -> str:
    return f"nstat-{node}-{phase}.json"


class NstatProbe(Probe):
    name = "nstat"
    setting = Setting(bool, False, "each node's MIB counters (MPTcpExt*, TcpExt*, Tcp*) before and after the traffic")
    tools = {"nstat": "iproute2"}

    def __init__(self) -> None:
        self._nodes: list[str] = []

    def artifacts(self) -> list[str]:
        return [file_name(n, p) for n in self._nodes for p in PHASES]

    def commands(self, rep: Rep) -> list[Planned]:
        nodes = list(rep.plan.net.nodes)
        return [Planned(nstat_cmd(n), note=f"{phase}: probes/{file_name(n, phase)}")
                for phase in PHASES for n in nodes]

    def _read(self, rep: Rep, phase: str) -> None:
        for n in self._nodes:
            p = rep.backend.run([nstat_cmd(n)])[0]
            (probes_dir(rep.out) / file_name(n, phase)).write_text(p.stdout)

    def start(self, rep: Rep) -> None:
        self._nodes = list(rep.plan.net.nodes)
        self._read(rep, "before")

    def stop(self, rep: Rep) -> None:
        self._read(rep, "after")

    @classmethod
    def analyze(cls, rep_dir: Path) -> pd.DataFrame:
        d = probes_dir(rep_dir)
        rows: list[dict[str, Any]] = []
        for before in sorted(d.glob("nstat-*-before.json")):
            node = before.name.removeprefix("nstat-").removesuffix("-before.json")
            after = d / file_name(node, "after")
            if not after.exists():
                continue
            rows += counter_rows(node, before.read_text(), after.read_text())
        return pd.DataFrame(rows, columns=COLUMNS)

    @classmethod
    def summarise(cls, table: pd.DataFrame, joined: Joined) -> tuple[Any, list[str]]:
        """Per node, the MPTcpExt counters that moved (metrics/buffers.py reads them)."""
        del joined
        nz = table[(table["delta"] != 0) & table["counter"].str.startswith("MPTcpExt")] if not table.empty else table
        return ({n: dict(zip(g["counter"], g["delta"].astype(int), strict=True)) for n, g in nz.groupby("node")}
                if not nz.empty else {}), []


def _counters(text: str) -> dict[str, int]:
    data = json.loads(text)
    return {k: int(v) for k, v in data.get("kernel", {}).items()}


def counter_rows(node: str, before: str, after: str) -> list[dict[str, Any]]:
    b, a = _counters(before), _counters(after)
    return [{"node": node, "counter": k, "before": b.get(k, 0), "after": v, "delta": v - b.get(k, 0)}
            for k, v in sorted(a.items()) if k.startswith(PREFIXES)]


@dataclass(frozen=True)
class BlackHole:
    """A node whose kernel turned MPTCP off for new connections during the traffic."""

    node: str
    detected: int  #: MP_CAPABLE SYNs it took for a black hole
    disabled: int  #: connections it then started without MP_CAPABLE

    def message(self) -> str:
        return (f"{self.node}'s kernel started {self.disabled} connection(s) without MP_CAPABLE after it "
                f"took {self.detected} unanswered MP_CAPABLE SYN(s) for a middlebox black hole "
                f"({BLACKHOLE}, {SYN_TX_DISABLED.removeprefix('MPTcpExt')}): those connections are plain "
                "TCP by the kernel's choice, and new ones stay so for net.mptcp.blackhole_timeout seconds")


def blackholes(table: pd.DataFrame) -> list[BlackHole]:
    """The nodes of a counter table (NstatProbe.analyze) whose black-hole detection turned MPTCP
    off during the traffic: the delta of SYN_TX_DISABLED moved."""
    if table.empty:
        return []
    out = []
    for node, g in table.groupby("node", sort=True):
        delta = g.set_index("counter")["delta"]
        disabled = int(delta.get(SYN_TX_DISABLED, 0))
        if disabled > 0:
            out.append(BlackHole(str(node), int(delta.get(BLACKHOLE, 0)), disabled))
    return out
