"""The NFQUEUE emulator: loss + delay line (with the rate stage) at the receiver.

For a DirectedLink ``src -> dst``:

* rate and queue limit: by default in the delay line itself for a delayed
  direction (``NfqueueEmulator.rate_in_delayline``), else tbf on ``src``'s
  egress (tc.py), as with netem;
* random loss and delay: at ``dst``'s ingress, in the PREROUTING hook, matched by
  ``dst``'s interface: first a random drop, then NFQUEUE to the delay line
  (``mptcplab-delayline``) running in ``dst``'s namespace.
* a delivery trace (``shape.trace``, instead of a rate): only in the delay line
  (``--trace``, its trace stage, through the link's drop-tail queue, then the delay),
  whether or not the direction has a delay; never tbf.

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

import os
import re
import zlib
from collections.abc import Mapping
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
    """A direction needs a receive-side rule when it has loss, delay or a trace."""
    return shape.loss > 0 or needs_delayline(shape)


def needs_delayline(shape: LinkShape) -> bool:
    """Delay, jitter or a trace: what only the delay line does."""
    return shape.needs_delay or shape.trace is not None


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
        if needs_delayline(s):
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
    if needs_delayline(s):
        # no "bypass": fail closed when the delay line is not running
        out.append(cmd("nft", "add", "rule", "inet", NFT_TABLE, chain, *iif,
                       "counter", "queue", "num", str(queue_num),
                       node=node, why=_why(dl, f"to delay line queue {queue_num}")))
    return out


def iptables_loss_change_cmds(dl: DirectedLink, new_loss: float) -> list[Cmd]:
    """A new loss probability for an installed direction: the statistic rule is the
    chain's first (iptables_rule_cmds), so it is replaced, inserted or deleted as
    rule 1; a direction without a chain gets one holding only the loss rule."""
    old = dl.shape.loss
    if new_loss == old:
        return []
    if not needs_rule(dl.shape):
        return iptables_rule_cmds(DirectedLink(dl.src, dl.dst, LinkShape(loss=new_loss), dl.mtu), 0)
    chain, node, out = iptables_chain(dl.dst.iface), dl.dst.node, []
    stat = ("-m", "statistic", "--mode", "random", "--probability", f"{new_loss:.9g}", "-j", "DROP")
    for ipt in ("iptables", "ip6tables"):
        base = (ipt, "-w", "-t", "raw")
        if old > 0 and new_loss > 0:
            out.append(cmd(*base, "-R", chain, "1", *stat, node=node, why=_why(dl, f"random loss {new_loss:.6g}")))
        elif old > 0:
            out.append(cmd(*base, "-D", chain, "1", node=node, why=_why(dl, "no more random loss")))
        else:
            out.append(cmd(*base, "-I", chain, "1", *stat, node=node, why=_why(dl, f"random loss {new_loss:.6g}")))
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


def control_path(dl: DirectedLink, queue_num: int, workdir: Path) -> Path:
    """The delay line's control file (native/delayline/dlcontrol.h): a run-time delay
    change writes it and signals the delay line (mptcplab-delayline-ctl)."""
    return stats_path(dl, queue_num, workdir).with_suffix(".ctl")


def delay_change_cmd(dl: DirectedLink, new: LinkShape, control: Path, ctl_binary: Path) -> Cmd:
    """A new delay/jitter for a running delay line, run in its node (its pid namespace)."""
    return cmd(str(ctl_binary), str(control), round(new.delay_s * 1e6), round(new.jitter_s * 1e6),
               node=dl.dst.node, why=_why(dl, f"delay {new.delay_s * 1e3:g} ms, jitter {new.jitter_s * 1e3:g} ms"))


def trace_switch_cmd(dl: DirectedLink, new: LinkShape, control: Path, ctl_binary: Path) -> Cmd:
    """A running delay line's trace stage switched to ``new.trace`` from ``new.trace_offset_s``
    now (dlcontrol.h: the control file's trace line); its delay and jitter are ``new``'s."""
    assert new.trace is not None
    return cmd(str(ctl_binary), str(control), round(new.delay_s * 1e6), round(new.jitter_s * 1e6),
               str(new.trace.path), round(new.trace_offset_s * 1000), node=dl.dst.node,
               why=_why(dl, f"trace -> {new.trace.name} from {new.trace_offset_s:g} s "
                        f"(mean {new.trace.mean_rate_bps / 1e6:.3g} Mbit/s)"))


#: SCHED_FIFO priority of the delay lines. Measured on the 2-core CI host while
#: other jobs kept it busy (load 5): release lateness p99 went from 19.5 ms
#: (normal scheduling) to 21 us. The two delay lines of a 100 Mbit/s link use
#: about 25% of a core (most of it the kernel's receive path, which runs in the
#: delay line's verdict call), at most ~70% around 400 Mbit/s, less above
#: (packets then come in batches); the kernel's RT throttling keeps 5% of the
#: CPU for everyone else whatever happens.
DEFAULT_RT_PRIO = 10

#: Release lateness p99 a delay line may have and still be said to keep time:
#: ``max(LATENESS_FLOOR_US, LATENESS_FRACTION x its configured one-way delay)``.
#: Relative, because what lateness distorts is the delay: 1 ms late on a 40 ms
#: path is 2.5% of it (inside what the RTT check tolerates, 2% + 0.3 ms of the
#: RTT), while 1 ms late on a 1 ms path doubles it. The floor is the scheduling
#: noise of a 2-core host that keeps a 1 ms path within 50%.
LATENESS_FLOOR_US = 500
LATENESS_FRACTION = 0.05


def max_lateness_p99_us(delay_us: float | None) -> float:
    """The release-lateness p99 allowed for a delay line of ``delay_us`` one way
    (``None``, e.g. stats without the field: the floor)."""
    return max(LATENESS_FLOOR_US, LATENESS_FRACTION * (delay_us or 0))


#: Longest release slot of a delay line (``--slot-us``): it releases at most once
#: per slot, so packets due meanwhile wait up to that long. Each release is a
#: sleep (a timer armed) and a wake-up (an interrupt), and in a VM both exit to
#: the hypervisor, so at high rates fewer releases save the delay line CPU, at the
#: cost of lateness (compare with bench/emulation_bench.py --papers and
#: MPTCPLAB_DELAYLINE_SLOT_US). A lone packet (ping) is never held back: the slot
#: counts from the previous release.
RELEASE_SLOT_MAX_US = 200
#: The slot never takes more than this share of the lateness a delay line may have:
#: with the 0.5 ms floor, 200 us for every delay.
RELEASE_SLOT_SHARE = 0.4


def release_slot_us(delay_us: float) -> int:
    """The release slot for a delay line of ``delay_us`` one way: 200 us (two fifths of
    the 0.5 ms lateness floor, and never more than RELEASE_SLOT_MAX_US)."""
    return int(min(RELEASE_SLOT_MAX_US, RELEASE_SLOT_SHARE * max_lateness_p99_us(delay_us)))


#: Packets the kernel queue may hold beyond the link's own need: the delay line
#: can stall (measured: tens of ms, up to ~250 ms, at 400 Mbit/s on a loaded
#: 2-core host), and a queue sized for the delay alone then drops (1024 packets
#: at 400 Mbit/s and 2 ms were exceeded). Held packets cost kernel memory only.
STALL_HEADROOM_S = 0.25


def queue_maxlen(shape: LinkShape, mtu: int) -> int:
    """NFQUEUE length (and the delay line's FIFO): what the delay needs plus
    ``STALL_HEADROOM_S`` of full-size frames at the link rate."""
    rate = shape.nominal_rate_bps or 10_000_000_000
    headroom = rate * STALL_HEADROOM_S / 8 / (mtu + 14)
    return int(min(shape.delay_queue_packets(mtu) + headroom, 1_000_000))


#: Switches of the delay line for comparing runs and for diagnosis (docs/link-emulation.md),
#: environment variable -> option. The engine turns them into options, which reach the
#: delay line on every backend (``docker exec`` does not pass the environment); each
#: delay line's stats record the values it ran with (``timer``, ``offcpu_min_batch``).
DELAYLINE_ENV_OPTIONS = {
    "MPTCPLAB_DELAYLINE_TIMER": "--timer",                        # abs (default) | rel (the former default)
    "MPTCPLAB_DELAYLINE_OFFCPU_MIN_BATCH": "--offcpu-min-batch",  # 1: off-CPU time of every verdict
    # the release slot in us for every delay line, instead of release_slot_us's (after it in
    # argv, so it wins); 0: none
    "MPTCPLAB_DELAYLINE_SLOT_US": "--slot-us",
}


def env_options(env: Mapping[str, str]) -> tuple[str, ...]:
    """The delay line's options that ``DELAYLINE_ENV_OPTIONS`` set in ``env``."""
    out: tuple[str, ...] = ()
    for var, opt in DELAYLINE_ENV_OPTIONS.items():
        if env.get(var):
            out += (opt, env[var])
    return out


def paces(dl: DirectedLink, rate_in_delayline: bool) -> bool:
    """Whether the delay line, not tbf, does this direction's rate and queue."""
    return rate_in_delayline and needs_delayline(dl.shape) and dl.shape.rate_bps is not None


def replays(dl: DirectedLink) -> bool:
    """Whether the delay line replays a delivery trace for this direction (and does its queue)."""
    return dl.shape.trace is not None


def trace_args(shape: LinkShape, mtu: int) -> tuple[str, ...]:
    """The delay line's trace stage: the trace file (absolute), where it starts, the
    link's drop-tail queue in bytes."""
    if shape.trace is None:
        return ()
    return ("--trace", str(shape.trace.path), "--trace-offset-ms", str(round(shape.trace_offset_s * 1000)),
            "--limit-bytes", str(shape.queue_bytes(mtu)))


def delayline_daemon(dl: DirectedLink, queue_num: int, workdir: Path, binary: Path,
                     rt_prio: int = DEFAULT_RT_PRIO, rate_in_delayline: bool = False,
                     env: Mapping[str, str] | None = None) -> Daemon:
    """The delay line for ``dl``, run in the receiving node's namespace.
    ``rt_prio`` 0 keeps normal scheduling. ``rate_in_delayline``: the delay line
    also serializes at the link rate through the link's drop-tail queue (see
    ``NfqueueEmulator``). ``env`` (default: the engine's environment) may carry
    ``DELAYLINE_ENV_OPTIONS``."""
    s = dl.shape
    stats = stats_path(dl, queue_num, workdir)
    argv: tuple[str, ...] = (
        str(binary),
        "--queue", str(queue_num),
        "--delay-us", str(round(s.delay_s * 1e6)),
        "--jitter-us", str(round(s.jitter_s * 1e6)),
        "--seed", str(daemon_seed(dl, queue_num)),
        "--maxlen", str(queue_maxlen(s, dl.mtu) + (s.queue_bytes(dl.mtu) * 4 // (dl.mtu + 14)
                                                   if paces(dl, rate_in_delayline) or replays(dl) else 0)),
        "--stats", str(stats),
        "--control", str(control_path(dl, queue_num, workdir)),
    )
    if paces(dl, rate_in_delayline):
        argv += ("--rate-bps", str(s.rate_bps), "--limit-bytes", str(s.queue_bytes(dl.mtu)))
    argv += trace_args(s, dl.mtu)
    argv += ("--slot-us", str(release_slot_us(s.delay_s * 1e6)))
    if rt_prio > 0:
        argv += ("--rt-prio", str(rt_prio))
    argv += env_options(os.environ if env is None else env)
    return Daemon(node=dl.dst.node, argv=argv, name=f"delayline {dl.dst}<-{dl.src}", stats_path=str(stats),
                  delay_line=True)


def ctl_binary(binary: Path | None = None) -> Path:
    """mptcplab-delayline-ctl, next to the delay line (native/Makefile builds both)."""
    return (binary or delayline_binary(must_exist=False)).with_name("mptcplab-delayline-ctl")


#: Fewest released packets for which a delay line is judged on its lateness p99; below, on its p50.
#: The delay line's p99 is nearest-rank (rank ceil(0.99 n), native/delayline/dlstats.c): with
#: n <= 100 packets that is the worst packet, so one host stall of a few ms (issue 13: they
#: come host-wide, whatever a line carries) would alone decide a sparse direction (a 1 Mbit/s
#: line, the ACKs of a slow flow, an idle backup path); from 101 packets on the p99 is at
#: least the second worst, and one stall no longer suffices. The p50 still catches a sparse
#: line that delays its packets systematically; its few late ones are not held against it.
P99_MIN_PACKETS = 101


def lateness_judged(stats: dict[str, Any]) -> tuple[str, float | None, int | None]:
    """(the lateness statistic a delay line is judged on, its value in us, the released packets
    counted), by ``P99_MIN_PACKETS``: ("p50", ...) for a sparse line, else ("p99", ...). The
    count is the lateness histogram's ``n``, else ``released``, else ``packets``; unknown
    (stats of an older delay line): the p99."""
    late = stats.get("lateness_us") or {}
    n = next((int(v) for v in (late.get("n"), stats.get("released"), stats.get("packets")) if v is not None), None)
    stat = "p50" if n is not None and n < P99_MIN_PACKETS else "p99"
    return stat, late.get(stat), n


def lateness_problem(stats: dict[str, Any]) -> str | None:
    """Why a delay line did not keep time, or None: its judged lateness (``lateness_judged``)
    beyond ``max_lateness_p99_us`` of the configured delay, which the stats carry as
    ``delay_us``."""
    stat, value, n = lateness_judged(stats)
    allowed = max_lateness_p99_us(stats.get("delay_us"))
    if value is None or value <= allowed:
        return None
    sparse = (f"; judged on p50: {n} packets, too few for a p99 (it would be the worst packet, "
              f"{(stats.get('lateness_us') or {}).get('max') or 0:.0f} us)") if stat == "p50" else ""
    return (f"release lateness {stat} {value:.0f} us > {allowed:.0f} us allowed for a "
            f"{(stats.get('delay_us') or 0) / 1000:g} ms delay (CPU-starved?){sparse}")


def delayline_losses(stats: dict[str, Any]) -> list[str]:
    """Packets a delay line lost of its own, from its stats JSON: losses the link model did
    not configure, so a run with any is invalid."""
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
    return out


def delayline_problems(stats: dict[str, Any]) -> list[str]:
    """Why a delay line's run cannot be trusted, from its stats JSON; empty when it kept
    time (``lateness_problem``) and lost nothing it was not asked to lose (``delayline_losses``)."""
    late = lateness_problem(stats)
    return [*delayline_losses(stats), *([late] if late else [])]


class NfqueueEmulator:
    """Emulation without sch_netem: netfilter + mptcplab-delayline (+ tbf).

    ``rate_in_delayline`` (the default; measured by bench/emulation_bench.py
    --papers --paced and `mptcplab calibrate --rate-in-tbf` A/B): a delayed
    direction gets no tbf; the delay line serializes packets at the link rate
    through a virtual drop-tail queue of the link's size, then delays them.
    tbf's watchdog fires once per packet at line rate, and that timer and
    softirq work run inside the delay lines' verdict calls: with tbf the lines
    fell 12-100 ms behind at 400 Mbit/s (lateness p99), with the rate stage
    0.2-3 ms (docs/architecture.md). It also moves the bottleneck queue to
    where the skb no longer counts against the sending socket, so TCP Small
    Queues no longer hides that queue from a local sender: the sender sees the
    configured drop-tail queue, as behind a router. Directions without delay
    keep tbf (no delay line runs for them). ``rate_in_delayline=False`` (CLI
    ``--rate-in-tbf``) restores tbf at the sender for every direction. Rate
    changes at run time need tbf: not supported for paced directions."""

    name = "nfqueue"

    def __init__(self, firewall: Firewall = "iptables", binary: Path | None = None,
                 rt_prio: int = DEFAULT_RT_PRIO, rate_in_delayline: bool = True) -> None:
        if firewall not in ("iptables", "nft"):
            raise ValueError(f"firewall must be 'iptables' or 'nft', got {firewall!r}")
        if not 0 <= rt_prio <= 99:
            raise ValueError(f"rt_prio must be 0..99, got {rt_prio}")
        self.firewall: Firewall = firewall
        self.rt_prio = rt_prio
        self.rate_in_delayline = rate_in_delayline
        self._binary = binary
        #: the delay line each direction got in the latest plan: (src, dst) -> its control
        #: file, so a run-time delay change reaches it (set by link_cmds)
        self.controls: dict[tuple[str, str], Path] = {}

    @property
    def binary(self) -> Path:
        # resolved lazily: a lab with no delayed link does not need the binary built
        if self._binary is None:
            self._binary = delayline_binary()
        return self._binary

    def rule_cmds(self, dl: DirectedLink, queue_num: int) -> list[Cmd]:
        return (iptables_rule_cmds if self.firewall == "iptables" else nft_rule_cmds)(dl, queue_num)

    def link_cmds(self, dl: DirectedLink, queue_num: int, workdir: Path) -> tuple[list[Cmd], list[Daemon]]:
        cmds = ([] if paces(dl, self.rate_in_delayline) else tc.tbf_cmds(dl)) + self.rule_cmds(dl, queue_num)
        daemons = ([delayline_daemon(dl, queue_num, workdir, self.binary, self.rt_prio, self.rate_in_delayline)]
                   if needs_delayline(dl.shape) else [])
        if daemons:
            self.controls[(str(dl.src), str(dl.dst))] = control_path(dl, queue_num, workdir)
        return cmds, daemons

    def clear_cmds(self, dl: DirectedLink) -> list[Cmd]:
        rules = iptables_clear_cmds(dl) if self.firewall == "iptables" else nft_clear_cmds(dl)
        return tc.clear_cmds(dl) + (rules if needs_rule(dl.shape) else [])

    def rate_change_cmds(self, dl: DirectedLink, new_rate_bps: int) -> list[Cmd]:
        if replays(dl):
            raise ValueError("a trace link's capacity is its trace: its rate cannot change at run time")
        if paces(dl, self.rate_in_delayline):
            raise ValueError("rate changes need tbf: not available with rate_in_delayline "
                             "(the default for delayed directions; --rate-in-tbf)")
        return tc.rate_change_cmds(dl, new_rate_bps)

    def change_cmds(self, dl: DirectedLink, new: LinkShape) -> list[Cmd]:
        """Rate and queue: the tbf at the sender (tc replace). Loss: the receiver's
        statistic rule (iptables; the nft layout has no stable rule position, so a
        loss change there is refused). Delay and jitter: the running delay line's
        control (mptcplab-delayline-ctl); a direction that started without a delay
        has no delay line, and no rule steering packets to one: refused."""
        old = dl.shape
        out: list[Cmd] = []
        if old.trace is not None and (new.rate_bps, new.queue, new.trace) != (old.rate_bps, old.queue, old.trace):
            raise ValueError("a trace link's capacity and queue are the delay line's trace stage: "
                             "they cannot change at run time")
        if (new.delay_s, new.jitter_s) != (old.delay_s, old.jitter_s):
            if not needs_delayline(old) or not needs_delayline(new):
                raise ValueError("the nfqueue emulator changes the delay of a link that has one from the start, "
                                 "to a non-zero delay (a delay line runs only there); give the link a delay")
            # before the plan exists (the lab check) the control file is not known yet
            control = self.controls.get((str(dl.src), str(dl.dst)), Path("<control file>"))
            out.append(delay_change_cmd(dl, new, control, ctl_binary(self._binary)))
        if (new.rate_bps, new.queue) != (old.rate_bps, old.queue):
            if paces(dl, self.rate_in_delayline):
                raise ValueError("rate changes need tbf: not available with rate_in_delayline")
            out += tc.tbf_change_cmds(dl, new)
        if new.loss != old.loss:
            if self.firewall != "iptables":
                raise ValueError("loss changes at run time need the iptables rule layout (firewall=iptables)")
            out += iptables_loss_change_cmds(dl, new.loss)
        return out

    def trace_switch_cmds(self, dl: DirectedLink, new: LinkShape) -> list[Cmd]:
        """The delay line's control (mptcplab-delayline-ctl with a trace): packets already
        in the link's queue leave as the old trace scheduled them, the new trace's
        opportunities follow (delaysched.h, dl_sched_switch_trace). Only a direction that
        replays a trace from the start has a trace stage to switch."""
        if dl.shape.trace is None or new.trace is None:
            raise ValueError(f"{dl.src}->{dl.dst} replays no trace: only a trace link can switch traces")
        control = self.controls.get((str(dl.src), str(dl.dst)), Path("<control file>"))
        return [trace_switch_cmd(dl, new, control, ctl_binary(self._binary))]
