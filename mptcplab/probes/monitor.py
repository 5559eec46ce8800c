"""``mptcp_monitor``: ``ip -ts mptcp monitor`` in each flow end node: the path
manager's events (connection created/established/closed, address announced/removed,
subflow established/closed, priority changes) with their time, parsed into a table.

``-ts`` stamps each event with the wall clock (local time, microseconds) as ip
receives it from the kernel's netlink multicast: the capture clock, within the
scheduling delay of one process. ip flushes each event as it prints it.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import pandas as pd

from ..commands import cmd
from ..steps.base import Planned
from ..values.capabilities import CAP_NODE_PIDS
from ..warncodes import PROCESS_DID_NOT_EXIT
from .base import Joined, Probe, Setting, probes_dir

if TYPE_CHECKING:
    from ..backends.base import Backend
    from ..steps.base import Rep

MONITOR_ARGV = ("ip", "-ts", "mptcp", "monitor")
#: ip prints nothing before the first event, so "subscribed" is read from the kernel:
#: its generic-netlink socket (protocol 16) with a multicast group joined, in
#: /proc/<pid>/net/netlink. Where that cannot be seen (the process is a `docker exec`,
#: or the group number is above the 32 the file shows) the step waits SUBSCRIBE_S, an
#: upper bound measured under load; the server's listener_created event shows it worked.
SUBSCRIBE_TIMEOUT_S = 2.0
SUBSCRIBE_S = 0.3
NETLINK_GENERIC = 16
COLUMNS = ["node", "t", "event", "token", "saddr", "daddr", "sport", "dport", "locid", "remid", "backup",
           "error", "server_side", "raw"]
#: iproute2 6.1 names events up to SF_PRIO; later ones print as [UNKNOWN n] (kernel enum mptcp_event_type)
UNKNOWN_EVENTS = {15: "listener_created", 16: "listener_closed"}

_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)\]\s*\[\s*([A-Z_]+(?: \d+)?)\s*\](.*)$")
_KV = re.compile(r"(\w+)=(\S+)")


def file_name(node: str) -> str:
    return f"mptcp-monitor-{node}.log"


def mptcp_nodes(rep: Rep) -> list[str]:
    flows = [f for f in rep.body.traffic.flows.values() if f.mptcp]
    return list(dict.fromkeys(n for f in flows for n in (f.client, f.server)))


class MptcpMonitor(Probe):
    name = "mptcp_monitor"
    setting = Setting(bool, False, "`ip mptcp monitor` events in the MPTCP flows' end nodes")

    def __init__(self) -> None:
        self._procs: list[tuple[str, subprocess.Popen[bytes], IO[bytes]]] = []

    def artifacts(self) -> list[str]:
        return [file_name(n) for n, _, _ in self._procs]

    def commands(self, rep: Rep) -> list[Planned]:
        return [Planned(cmd(*MONITOR_ARGV, node=n), background=True, note=f"probes/{file_name(n)}; SIGTERM after")
                for n in mptcp_nodes(rep)]

    def start(self, rep: Rep) -> None:
        for n in mptcp_nodes(rep):
            sink = (probes_dir(rep.out) / file_name(n)).open("wb")
            p = rep.backend.spawn(n, MONITOR_ARGV, stdout=sink, stderr=subprocess.STDOUT)
            self._procs.append((n, p, sink))
        wait_subscribed(rep.backend, [p for _, p, _ in self._procs])
        for n, p, _ in self._procs:
            if p.poll() is not None:
                raise RuntimeError(f"ip mptcp monitor on {n} exited with status {p.returncode}")

    def stop(self, rep: Rep) -> None:
        for _, p, _ in self._procs:
            rep.backend.signal(p, signal.SIGTERM)
        for n, p, sink in self._procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                rep.backend.signal(p, signal.SIGKILL)
                p.wait(timeout=5)
                rep.warn(PROCESS_DID_NOT_EXIT, f"mptcp_monitor on {n} did not stop on SIGTERM")
            sink.close()

    def close(self) -> None:
        # the processes belong to the backend, which stops them at teardown
        for _, _, sink in self._procs:
            sink.close()

    @classmethod
    def analyze(cls, rep_dir: Path) -> pd.DataFrame:
        rows: list[dict[str, Any]] = []
        for f in sorted(probes_dir(rep_dir).glob("mptcp-monitor-*.log")):
            node = f.name.removeprefix("mptcp-monitor-").removesuffix(".log")
            rows += parse_monitor(node, f.read_text(errors="replace"))
        return pd.DataFrame(rows, columns=COLUMNS)

    @classmethod
    def summarise(cls, table: pd.DataFrame, joined: Joined) -> tuple[Any, list[str]]:
        """Per node, how many events of each kind."""
        del joined
        return ({n: {str(k): int(v) for k, v in g["event"].value_counts().items()}
                 for n, g in table.groupby("node")} if not table.empty else {}), []


def subscribed(pid: int) -> bool | None:
    """Whether process pid holds a generic-netlink socket with a multicast group
    joined; None when /proc does not say (not a host process, or gone)."""
    try:
        inodes = {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
        table = Path(f"/proc/{pid}/net/netlink").read_text().splitlines()[1:]
    except OSError:
        return None
    for line in table:
        f = line.split()
        if len(f) >= 10 and f[1] == str(NETLINK_GENERIC) and int(f[3], 16) and f"socket:[{f[9]}]" in inodes:
            return True
    return False


def wait_subscribed(backend: Backend, procs: Sequence[subprocess.Popen[bytes]]) -> None:
    """Until every ``ip mptcp monitor`` in ``procs`` has joined its multicast group (events
    before that are lost), at most SUBSCRIBE_TIMEOUT_S; where /proc cannot show it (the
    backend's spawned processes are not the nodes' own, CAP_NODE_PIDS, or the file does not
    say) a fixed SUBSCRIBE_S instead."""
    if not procs:
        return
    pids = [p.pid for p in procs]
    deadline = time.monotonic() + SUBSCRIBE_TIMEOUT_S
    while CAP_NODE_PIDS in backend.capabilities and time.monotonic() < deadline:
        states = [subscribed(pid) for pid in pids]
        if None in states:
            break
        if all(states):
            return
        time.sleep(0.01)
    time.sleep(SUBSCRIBE_S)


def _event_name(s: str) -> str:
    if s.startswith("UNKNOWN"):
        n = int(s.split()[1])
        return UNKNOWN_EVENTS.get(n, f"unknown_{n}")
    return s.lower()


def parse_monitor(node: str, text: str) -> list[dict[str, Any]]:
    rows = []
    for line in text.splitlines():
        m = _LINE.match(line.strip())
        if not m:
            continue
        rest = m.group(3)
        kv = dict(_KV.findall(rest))
        ints = {k: int(kv[k]) if k in kv else None for k in ("sport", "dport", "locid", "remid", "backup", "error")}
        rows.append({
            "node": node,
            # ip prints local time; a naive datetime's timestamp() reads it as local time too
            "t": datetime.fromisoformat(m.group(1)).timestamp(),
            "event": _event_name(m.group(2)),
            "token": kv.get("token"),
            "saddr": kv.get("saddr4") or kv.get("saddr6"),
            "daddr": kv.get("daddr4") or kv.get("daddr6"),
            **ints,
            "server_side": " server_side" in rest or kv.get("flags") == "2",
            "raw": line.strip(),
        })
    return rows
