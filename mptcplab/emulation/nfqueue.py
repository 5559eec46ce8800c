"""The NFQUEUE emulator: tbf at the sender, loss + delay line at the receiver.

For a DirectedLink ``src -> dst``:

* rate and queue limit: tbf on ``src``'s egress (tc.py), as with netem;
* random loss and delay: at ``dst``'s ingress, in the PREROUTING hook, matched by
  ``dst``'s interface: first a random drop, then NFQUEUE to the delay line
  (``mptcplab-delayline``) running in ``dst``'s namespace.

Why at the receiver and not at the sender's egress: a packet held at the
sender's OUTPUT/POSTROUTING hook is still charged to its socket
(sk_wmem_alloc), and TCP Small Queues caps those bytes at about a millisecond
of data per flow, so the sender would stall while the delay line holds a whole
BDP. At the receiver, veth has handed the skb over and the IP receive path
(ip_rcv_core / ip6_rcv_core) orphans it before PREROUTING runs, so holding it
there no longer throttles the sender. Holding in PREROUTING also delays packets
a router forwards, and sits before conntrack and NAT (priority "raw").

Fail closed: the NFQUEUE rule has NO bypass, so when no delay line listens on
the queue (not started yet, crashed, killed) the kernel drops the packets; a link
is never measured without its delay.

Consequences for measurements (the lab's analysis must know them):

* Packet taps (tcpdump, AF_PACKET) and kernel receive timestamps run before
  PREROUTING, so at the receiving interface a packet is seen when it leaves the
  sender's tbf, *before* its delay. (netem, at the sender's egress, has the
  mirror effect: its taps see packets after the delay.) With either backend,
  a capture's RTT at one end of a symmetric link shows one direction's delay.
* ``ping`` takes the reply's receive time from the kernel timestamp (SO_TIMESTAMP)
  and so misses the delay on the reply's way in (it reports half the RTT of a
  symmetric link): use ``ping -U`` (user-to-user latency), as calibration must.
  ``PING_RTT_FLAGS`` says so in code; it is right for netem links too.

Rule syntax: iptables/ip6tables (``-m statistic`` + ``-j NFQUEUE``) by default,
because that works on this project's CI kernel, which has nft_compat and
xt_NFQUEUE but not nftables' native ``queue`` expression; ``firewall="nft"``
generates the native nftables equivalent (``numgen random`` + ``queue num``) in
table ``inet mptcplab`` for kernels built the other way round.
"""

from __future__ import annotations

import re
import zlib
from pathlib import Path
from typing import Any, Literal

from ..commands import Cmd, cmd
from . import tc
from .base import Daemon, delayline_binary
from .linkmodel import DirectedLink, LinkShape

Firewall = Literal["iptables", "nft"]
#: flags any ping that measures an emulated link's RTT needs (see the docstring)
PING_RTT_FLAGS: tuple[str, ...] = ("-U",)
NFT_TABLE = "mptcplab"
#: nft loss rule: drop when numgen random mod LOSS_SCALE < round(loss * LOSS_SCALE)
LOSS_SCALE = 1_000_000
_IPT_CHAIN_PREFIX = "mptcplab-rx-"  # + iface (<= 15 chars) stays under iptables' 28


def needs_rule(shape: LinkShape) -> bool:
    """A direction needs a receive-side rule when it has loss or delay."""
    return shape.loss > 0 or shape.needs_delay


def needs_delayline(shape: LinkShape) -> bool:
    return shape.needs_delay


def loss_threshold(loss: float) -> int:
    """nft numgen threshold for a loss probability, at 1e-6 resolution."""
    return round(loss * LOSS_SCALE)


def iptables_chain(iface: str) -> str:
    return _IPT_CHAIN_PREFIX + iface


def nft_chain(iface: str) -> str:
    return "rx_" + re.sub(r"[^A-Za-z0-9_]", "_", iface)


def _why(dl: DirectedLink, what: str) -> str:
    return f"{dl.src}->{dl.dst}: {what} at {dl.dst.iface} ingress"


def iptables_rule_cmds(dl: DirectedLink, queue_num: int) -> list[Cmd]:
    """Per family: a chain holding the loss drop and the NFQUEUE jump, then the
    PREROUTING jump into it last, so no packet sees a half-built chain."""
    s = dl.shape
    if not needs_rule(s):
        return []
    chain, node, out = iptables_chain(dl.dst.iface), dl.dst.node, []
    for ipt in ("iptables", "ip6tables"):
        base = (ipt, "-w", "-t", "raw")
        out.append(cmd(*base, "-N", chain, node=node, why=_why(dl, f"{ipt} chain for loss/delay")))
        if s.loss > 0:
            out.append(cmd(*base, "-A", chain, "-m", "statistic", "--mode", "random",
                           "--probability", f"{s.loss:.9g}", "-j", "DROP",
                           node=node, why=_why(dl, f"random loss {s.loss:.6g}")))
        if s.needs_delay:
            # no --queue-bypass: fail closed when the delay line is not running
            out.append(cmd(*base, "-A", chain, "-j", "NFQUEUE", "--queue-num", str(queue_num),
                           node=node, why=_why(dl, f"to delay line queue {queue_num}")))
        out.append(cmd(*base, "-A", "PREROUTING", "-i", dl.dst.iface, "-j", chain,
                       node=node, why=_why(dl, "hook")))
    return out


def iptables_clear_cmds(dl: DirectedLink) -> list[Cmd]:
    chain, node, out = iptables_chain(dl.dst.iface), dl.dst.node, []
    for ipt in ("iptables", "ip6tables"):
        base = (ipt, "-w", "-t", "raw")
        out += [
            cmd(*base, "-D", "PREROUTING", "-i", dl.dst.iface, "-j", chain, node=node, check=False),
            cmd(*base, "-F", chain, node=node, check=False),
            cmd(*base, "-X", chain, node=node, check=False),
        ]
    return out


def nft_rule_cmds(dl: DirectedLink, queue_num: int) -> list[Cmd]:
    """Native nftables: one base chain per receiving interface in ``inet mptcplab``
    (inet covers IPv4 and IPv6), so links can be added and removed independently."""
    s = dl.shape
    if not needs_rule(s):
        return []
    chain, node = nft_chain(dl.dst.iface), dl.dst.node
    iif = ("iifname", f'"{dl.dst.iface}"')  # quoted: nft would misparse names like "eth-1"
    out = [
        cmd("nft", "add", "table", "inet", NFT_TABLE, node=node, why=_why(dl, "nft table")),
        cmd("nft", "add", "chain", "inet", NFT_TABLE, chain,
            "{ type filter hook prerouting priority raw ; policy accept ; }",
            node=node, why=_why(dl, "nft chain")),
    ]
    if s.loss > 0:
        out.append(cmd("nft", "add", "rule", "inet", NFT_TABLE, chain, *iif,
                       "numgen", "random", "mod", str(LOSS_SCALE), "<", str(loss_threshold(s.loss)),
                       "counter", "drop", node=node, why=_why(dl, f"random loss {s.loss:.6g}")))
    if s.needs_delay:
        # no "bypass": fail closed when the delay line is not running
        out.append(cmd("nft", "add", "rule", "inet", NFT_TABLE, chain, *iif,
                       "counter", "queue", "num", str(queue_num),
                       node=node, why=_why(dl, f"to delay line queue {queue_num}")))
    return out


def nft_clear_cmds(dl: DirectedLink) -> list[Cmd]:
    chain, node = nft_chain(dl.dst.iface), dl.dst.node
    return [
        cmd("nft", "flush", "chain", "inet", NFT_TABLE, chain, node=node, check=False),
        cmd("nft", "delete", "chain", "inet", NFT_TABLE, chain, node=node, check=False),
    ]


def daemon_seed(dl: DirectedLink, queue_num: int) -> int:
    """Jitter seed derived from the link's identity, so reruns reproduce it."""
    return zlib.crc32(f"{dl.src}->{dl.dst}#{queue_num}".encode())


def stats_path(dl: DirectedLink, queue_num: int, workdir: Path) -> Path:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{dl.dst.node}_{dl.dst.iface}")
    return workdir / f"delayline-{safe}-q{queue_num}.json"


#: SCHED_FIFO priority of the delay lines. Measured on the 2-core CI host while
#: other jobs kept it busy (load 5): release lateness p99 went from 19.5 ms
#: (normal scheduling) to 21 us. The two delay lines of a 100 Mbit/s link use
#: about 25% of a core (most of it the kernel's receive path, which runs in the
#: delay line's verdict call), at most ~70% around 400 Mbit/s, less above
#: (packets then come in batches); the kernel's RT throttling keeps 5% of the
#: CPU for everyone else whatever happens.
DEFAULT_RT_PRIO = 10

#: Release lateness (p99) above which a delay line is said not to keep time.
MAX_LATENESS_P99_US = 1000


def delayline_daemon(dl: DirectedLink, queue_num: int, workdir: Path, binary: Path,
                     rt_prio: int = DEFAULT_RT_PRIO) -> Daemon:
    """The delay line for ``dl``, run in the receiving node's namespace.
    ``rt_prio`` 0 keeps normal scheduling."""
    s = dl.shape
    stats = stats_path(dl, queue_num, workdir)
    argv: tuple[str, ...] = (
        str(binary),
        "--queue", str(queue_num),
        "--delay-us", str(round(s.delay_s * 1e6)),
        "--jitter-us", str(round(s.jitter_s * 1e6)),
        "--seed", str(daemon_seed(dl, queue_num)),
        "--maxlen", str(s.delay_queue_packets(dl.mtu)),
        "--stats", str(stats),
    )
    if rt_prio > 0:
        argv += ("--rt-prio", str(rt_prio))
    return Daemon(node=dl.dst.node, argv=argv, name=f"delayline {dl.dst}<-{dl.src}", stats_path=str(stats))


def delayline_problems(stats: dict[str, Any]) -> list[str]:
    """Why a delay line's run cannot be trusted, from its stats JSON; empty when
    it kept time and lost nothing it was not asked to lose. Packets lost here are
    losses the link model did not configure, so a run with any is invalid."""
    out = []
    for key, what in (
        ("enobufs", "netlink receive buffer overflows (ENOBUFS)"),
        ("user_drops", "packets the kernel could not hand to the delay line"),
        ("queue_full_drops", "packets dropped because the NFQUEUE was full (--maxlen)"),
        ("ring_full_drops", "packets dropped because the delay line's FIFO was full"),
        ("verdict_errors", "verdicts the kernel rejected"),
    ):
        n = stats.get(key)
        if n:
            out.append(f"{n} {what}")
    p99 = stats.get("lateness_us", {}).get("p99")
    if p99 is not None and p99 > MAX_LATENESS_P99_US:
        out.append(f"release lateness p99 {p99:.0f} us > {MAX_LATENESS_P99_US} us (CPU-starved?)")
    return out


class NfqueueEmulator:
    """Emulation without sch_netem: tbf + netfilter + mptcplab-delayline."""

    name = "nfqueue"

    def __init__(self, firewall: Firewall = "iptables", binary: Path | None = None,
                 rt_prio: int = DEFAULT_RT_PRIO) -> None:
        if firewall not in ("iptables", "nft"):
            raise ValueError(f"firewall must be 'iptables' or 'nft', got {firewall!r}")
        if not 0 <= rt_prio <= 99:
            raise ValueError(f"rt_prio must be 0..99, got {rt_prio}")
        self.firewall: Firewall = firewall
        self.rt_prio = rt_prio
        self._binary = binary

    @property
    def binary(self) -> Path:
        # resolved lazily: a lab with no delayed link does not need the binary built
        if self._binary is None:
            self._binary = delayline_binary()
        return self._binary

    def rule_cmds(self, dl: DirectedLink, queue_num: int) -> list[Cmd]:
        return (iptables_rule_cmds if self.firewall == "iptables" else nft_rule_cmds)(dl, queue_num)

    def link_cmds(self, dl: DirectedLink, queue_num: int, workdir: Path) -> tuple[list[Cmd], list[Daemon]]:
        cmds = tc.tbf_cmds(dl) + self.rule_cmds(dl, queue_num)
        daemons = [delayline_daemon(dl, queue_num, workdir, self.binary, self.rt_prio)] if needs_delayline(dl.shape) else []
        return cmds, daemons

    def clear_cmds(self, dl: DirectedLink) -> list[Cmd]:
        rules = iptables_clear_cmds(dl) if self.firewall == "iptables" else nft_clear_cmds(dl)
        return tc.clear_cmds(dl) + (rules if needs_rule(dl.shape) else [])

    def rate_change_cmds(self, dl: DirectedLink, new_rate_bps: int) -> list[Cmd]:
        return tc.rate_change_cmds(dl, new_rate_bps)
