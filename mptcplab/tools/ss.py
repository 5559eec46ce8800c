"""MPTCP subflows as ``ss -tinM`` shows them: the argv, a parser into typed
per-subflow samples, and a live sampler a controller reads; and every socket's memory
as ``ss -tinmM`` shows it (``-m``: skmem), for the memory probe (probes/memory.py).

``ss -tinM`` lists TCP sockets with their tcp_info (``-i``), numeric (``-n``), and
the MPTCP sockets (``-M``). A subflow is a TCP socket whose info carries
``tcp-ulp-mptcp``; its ``token:R(id:r)/L(id:l)`` names the remote and the local
token (the local token identifies the MPTCP connection on this host) and the
address ids; ``flags:`` holds ``b`` when the subflow is a backup one (set locally
or by the peer's MP_PRIO), ``M``/``J`` for MP_CAPABLE/MP_JOIN subflows, ``e`` once it is
fully established (a join's handshake is over: only then does a flag change reach it,
measured: an endpoint change during a join's handshake was lost). The format
is iproute2's (6.1 here); tests/data/ss/ holds real captured output.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ..commands import Cmd, cmd

SS_ARGV: tuple[str, ...] = ("ss", "-tinM")


def ss_cmd(node: str) -> Cmd:
    return cmd(*SS_ARGV, node=node, check=False, why="MPTCP subflows and their tcp_info")


@dataclass(frozen=True)
class SubflowSample:
    """One subflow at one instant (units: bytes, milliseconds, bit/s)."""

    t: float  # time.time() of the sample
    local: str
    lport: int
    peer: str
    pport: int
    iface: str | None  # ss prints addr%iface for sockets bound to a device
    token: str  # local MPTCP token: which connection the subflow belongs to
    local_id: int | None  # address id of the local end (the endpoint id)
    join: bool  # an MP_JOIN subflow (else the initial MP_CAPABLE one)
    backup: bool
    established: bool  # fully established (ss flag ``e``)
    cwnd: int | None
    mss: int | None
    rtt_ms: float | None
    bytes_acked: int | None
    bytes_sent: int | None
    bytes_retrans: int | None
    delivery_rate_bps: int | None
    send_queue: int  # Send-Q: bytes not yet acknowledged plus unsent
    bytes_received: int | None = None  # what a receiver's subflow moved (timeline/upm.py)

    @property
    def est_rate_bps(self) -> float | None:
        """cwnd x mss / rtt: what the window allows (the asymmetric paper's estimate)."""
        if not (self.cwnd and self.mss and self.rtt_ms):
            return None
        return self.cwnd * self.mss * 8 / (self.rtt_ms / 1000)


_HEAD = re.compile(r"^(?P<netid>tcp|mptcp)\s+(?P<state>\S+)\s+(?P<recvq>\d+)\s+(?P<sendq>\d+)\s+"
                   r"(?P<local>\S+)\s+(?P<peer>\S+)")
_TOKEN = re.compile(r"token:(?P<rtok>[0-9a-f]+)\(id:(?P<rid>\d+)\)/(?P<ltok>[0-9a-f]+)\(id:(?P<lid>\d+)\)")
_FLAGS = re.compile(r"(?:^|\s)flags:(?P<flags>[A-Za-z]*)")


def _addr(text: str) -> tuple[str, str | None, int]:
    host, _, port = text.rpartition(":")
    host, _, iface = host.partition("%")
    return host.strip("[]"), iface or None, int(port) if port.isdigit() else 0


def _num(info: str, key: str, conv: Callable[[str], float | int]) -> float | int | None:
    m = re.search(rf"(?:^|\s){re.escape(key)}[:\s](\d+(?:\.\d+)?)", info)
    return conv(m.group(1)) if m else None


def _int(info: str, key: str) -> int | None:
    v = _num(info, key, int)
    return None if v is None else int(v)


def _rtt_ms(info: str) -> float | None:
    m = re.search(r"(?:^|\s)rtt:(\d+(?:\.\d+)?)/", info)
    return float(m.group(1)) if m else None


def _entries(text: str) -> Iterator[tuple[re.Match[str], str]]:
    """Each socket of ss output as (its head line, its info line); the header line and
    sockets without an info line are skipped. Both parsers below walk this."""
    head: re.Match[str] | None = None
    for line in text.splitlines():
        m = _HEAD.match(line)
        if m:
            head = m
        elif head is not None and line[:1].isspace():
            yield head, line.strip()
            head = None


def parse_ss(text: str, t: float = 0.0) -> list[SubflowSample]:
    """Every MPTCP subflow in ``ss -tinM`` / ``ss -tiM`` output (with or without
    the header line); plain TCP sockets and MPTCP sockets themselves are skipped."""
    out: list[SubflowSample] = []
    for head, info in _entries(text):
        tok = _TOKEN.search(info)
        if head["netid"] != "tcp" or "tcp-ulp-mptcp" not in info or tok is None:
            continue
        local, iface, lport = _addr(head["local"])
        peer, _, pport = _addr(head["peer"])
        fl = _FLAGS.search(info)
        flags = fl["flags"] if fl else ""
        out.append(SubflowSample(
            t=t, local=local, lport=lport, peer=peer, pport=pport, iface=iface,
            token=tok["ltok"], local_id=int(tok["lid"]), join="J" in flags, backup="b" in flags,
            established="e" in flags,
            cwnd=_int(info, "cwnd"), mss=_int(info, "mss"), rtt_ms=_rtt_ms(info),
            bytes_acked=_int(info, "bytes_acked"), bytes_sent=_int(info, "bytes_sent"),
            bytes_retrans=_int(info, "bytes_retrans"), delivery_rate_bps=_delivery(info),
            send_queue=int(head["sendq"]), bytes_received=_int(info, "bytes_received")))
    return out


def _delivery(info: str) -> int | None:
    m = re.search(r"(?:^|\s)delivery_rate (\d+)bps", info)
    return int(m.group(1)) if m else None


SS_MEM_ARGV: tuple[str, ...] = ("ss", "-tinmM")


def ss_mem_cmd(node: str) -> Cmd:
    return cmd(*SS_MEM_ARGV, node=node, check=False, why="socket memory (skmem) of TCP, subflow and MPTCP sockets")


#: skmem's letters (iproute2 misc/ss.c) -> the kernel's names (SK_MEMINFO_*)
SKMEM_FIELDS = {"r": "rmem_alloc", "rb": "rcvbuf", "t": "wmem_alloc", "tb": "sndbuf", "f": "fwd_alloc",
                "w": "wmem_queued", "o": "optmem", "bl": "backlog", "d": "drops"}
_SKMEM = re.compile(r"skmem:\(([^)]*)\)")
_MSK_TOKEN = re.compile(r"(?:^|\s)token:([0-9a-f]+)(?:\s|$)")


@dataclass(frozen=True)
class SocketMem:
    """One socket at one instant with its memory (``ss -m`` skmem, bytes) and, where ss
    gives them, its window state. ``kind``: "subflow" (a TCP subflow of an MPTCP
    connection), "msk" (the MPTCP socket itself), "tcp" (a plain TCP socket). ``conn``:
    the connection it belongs to, the local MPTCP token for subflows and msk (they share
    it), the 4-tuple for plain TCP."""

    t: float
    kind: str
    conn: str
    local: str
    lport: int
    peer: str
    pport: int
    recv_q: int
    send_q: int
    skmem: dict[str, int]
    cwnd: int | None
    srtt_ms: float | None
    snd_wnd: int | None
    rcv_space: int | None

    def mem(self, name: str) -> int | None:
        return self.skmem.get(name)


def parse_skmem(info: str) -> dict[str, int]:
    """``skmem:(r0,rb131072,t0,...)`` -> {"rmem_alloc": 0, "rcvbuf": 131072, ...}."""
    m = _SKMEM.search(info)
    if m is None:
        return {}
    out: dict[str, int] = {}
    for item in m.group(1).split(","):
        key = item.rstrip("0123456789")
        if key in SKMEM_FIELDS and item[len(key):].isdigit():
            out[SKMEM_FIELDS[key]] = int(item[len(key):])
    return out


def parse_ss_sockets(text: str, t: float = 0.0) -> list[SocketMem]:
    """Every established TCP and MPTCP socket in ``ss -tinmM`` output (with or without
    the header line), with its skmem; sockets without an info line are skipped."""
    out: list[SocketMem] = []
    for head, info in _entries(text):
        local, _, lport = _addr(head["local"])
        peer, _, pport = _addr(head["peer"])
        if head["netid"] == "mptcp":
            tok = _MSK_TOKEN.search(info)
            kind, conn = "msk", tok.group(1) if tok else f"{local}:{lport}-{peer}:{pport}"
        else:
            sub = _TOKEN.search(info) if "tcp-ulp-mptcp" in info else None
            kind, conn = ("subflow", sub["ltok"]) if sub else ("tcp", f"{local}:{lport}-{peer}:{pport}")
        out.append(SocketMem(
            t=t, kind=kind, conn=conn, local=local, lport=lport, peer=peer, pport=pport,
            recv_q=int(head["recvq"]), send_q=int(head["sendq"]), skmem=parse_skmem(info),
            cwnd=_int(info, "cwnd"), srtt_ms=_rtt_ms(info),
            snd_wnd=_int(info, "snd_wnd"), rcv_space=_int(info, "rcv_space")))
    return out


def busiest_connection(samples: list[SubflowSample]) -> list[SubflowSample]:
    """The subflows of the connection that has moved the most bytes (a tool's data
    connection, not its control connection), in a stable order (local address, port)."""
    by: dict[str, list[SubflowSample]] = {}
    for s in samples:
        by.setdefault(s.token, []).append(s)
    if not by:
        return []
    best = max(by.values(), key=lambda g: sum(s.bytes_acked or 0 for s in g))
    return sorted(best, key=lambda s: (s.local, s.lport))


class SsSampler:
    """Samples a node's subflows on demand through a command runner (a backend)."""

    def __init__(self, node: str, run: Callable[[Cmd], str], clock: Callable[[], float] = time.time) -> None:
        self.node = node
        self._run = run
        self._clock = clock

    def sample(self) -> list[SubflowSample]:
        t = self._clock()
        return parse_ss(self._run(ss_cmd(self.node)), t)
