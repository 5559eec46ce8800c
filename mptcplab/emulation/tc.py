"""tc command generation: tbf (rate + queue) and netem (delay, jitter, loss).

Everything here acts on the sender's egress interface of a DirectedLink
(``dl.src``), the only place a qdisc can queue and shape a direction.

Layouts:

* rate only, or the nfqueue emulator: ``root 1: tbf``
* netem emulator with delay/loss:     ``root 1: netem`` -> ``parent 1:1 10: tbf``
  (tbf as netem's child: netem delays, then tbf paces at the link rate, with the
  link's queue limit in bytes).
* netem emulator with jitter:         ``root 1: netem ... rate R`` (no child).
  netem only keeps packet order under jitter when its own ``rate`` is set (it
  then schedules each packet no earlier than the one before it, the same
  "max(arrival + delay + jitter, previous release)" rule as our delay line);
  with a tbf child its tfifo would reorder. Its queue limit is then in packets.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..commands import Cmd, cmd
from ..errors import HostNotReady
from ..units import fmt_rate, fmt_time_tc
from .base import Daemon
from .linkmodel import ETH_HEADER, DirectedLink, LinkShape

ROOT_HANDLE = "1:"
NETEM_CHILD_PARENT = "1:1"
NETEM_CHILD_HANDLE = "10:"
#: netem's rate when a link has jitter but no rate (only there to keep order)
JITTER_ONLY_RATE_BPS = 100_000_000_000


def tbf_params(shape: LinkShape, mtu: int) -> list[str]:
    """``tbf rate R burst B limit L`` for a shaped direction (shape.rate_bps set)."""
    if not shape.rate_bps:
        raise ValueError("tbf needs a rate")
    return [
        "tbf",
        "rate", fmt_rate(shape.rate_bps),
        "burst", str(shape.burst_bytes(mtu)),
        "limit", str(shape.queue_bytes(mtu)),
    ]


def tbf_cmds(dl: DirectedLink) -> list[Cmd]:
    """Rate and queue limit at the sender's egress; nothing when unshaped."""
    if not dl.shape.rate_bps:
        return []
    return [
        cmd(
            "tc", "qdisc", "replace", "dev", dl.src.iface, "root", "handle", ROOT_HANDLE,
            *tbf_params(dl.shape, dl.mtu),
            node=dl.src.node,
            why=f"{dl.src}->{dl.dst}: rate {fmt_rate(dl.shape.rate_bps)}, queue {dl.shape.queue_bytes(dl.mtu)} B",
        )
    ]


def _percent(p: float) -> str:
    return f"{p * 100:.6g}%"


def netem_limit_packets(dl: DirectedLink) -> int:
    """netem's limit counts every packet it holds: those in flight on the delay
    plus the link's queue (in full frames)."""
    frame = dl.mtu + ETH_HEADER
    return dl.shape.delay_queue_packets(dl.mtu) + dl.shape.queue_bytes(dl.mtu) // frame + 2


def uses_netem(shape: LinkShape) -> bool:
    return shape.needs_delay or shape.loss > 0


def netem_cmds(dl: DirectedLink) -> list[Cmd]:
    """netem (+ tbf child) at the sender's egress; only tbf when there is neither
    delay nor loss. See the module docstring for the layouts."""
    s = dl.shape
    if not uses_netem(s):
        return tbf_cmds(dl)
    args = ["netem", "limit", str(netem_limit_packets(dl))]
    if s.needs_delay:
        args += ["delay", fmt_time_tc(s.delay_s)]
        if s.jitter_s:
            args += [fmt_time_tc(s.jitter_s)]
    if s.loss:
        args += ["loss", "random", _percent(s.loss)]
    if s.jitter_s:
        args += ["rate", fmt_rate(s.rate_bps or JITTER_ONLY_RATE_BPS)]
    where = f"{dl.src}->{dl.dst}"
    out = [cmd("tc", "qdisc", "replace", "dev", dl.src.iface, "root", "handle", ROOT_HANDLE, *args,
               node=dl.src.node, why=f"{where}: delay/jitter/loss (netem)")]
    if s.rate_bps and not s.jitter_s:
        out.append(
            cmd("tc", "qdisc", "replace", "dev", dl.src.iface, "parent", NETEM_CHILD_PARENT,
                "handle", NETEM_CHILD_HANDLE, *tbf_params(s, dl.mtu),
                node=dl.src.node, why=f"{where}: rate {fmt_rate(s.rate_bps)} after the delay (tbf under netem)")
        )
    return out


def clear_cmds(dl: DirectedLink) -> list[Cmd]:
    """Back to the default qdisc (deleting root removes any child too)."""
    return [cmd("tc", "qdisc", "del", "dev", dl.src.iface, "root", node=dl.src.node, check=False,
                why=f"{dl.src}: remove shaping")]


def rate_change_cmds(dl: DirectedLink, new_rate_bps: int, *, netem_layout: bool = False) -> list[Cmd]:
    """Change a direction's rate at run time (timed events). The queue limit keeps
    its meaning: a limit given as time ("80ms") is rescaled to the new rate, one
    given in bytes stays. ``replace`` changes an existing tbf in place (no packet
    is lost) and creates one if the link had no rate before.

    ``netem_layout``: the link was installed by the netem emulator, so tbf may sit
    under netem, or the rate may be netem's own (links with jitter)."""
    if new_rate_bps <= 0:
        raise ValueError(f"rate must be positive, got {new_rate_bps}")
    shaped = DirectedLink(dl.src, dl.dst, replace(dl.shape, rate_bps=new_rate_bps), dl.mtu)
    if not netem_layout or not uses_netem(dl.shape):
        return tbf_cmds(shaped)
    if dl.shape.jitter_s:
        return netem_cmds(shaped)
    return [c for c in netem_cmds(shaped) if "parent" in c.argv]


def netem_change_cmds(dl: DirectedLink, new: LinkShape) -> list[Cmd]:
    """The netem emulator's run-time change: the new layout installed with
    ``replace`` (a qdisc of the same kind is changed in place, so its queue is
    kept); back to the default qdisc when nothing is left to emulate."""
    nl = DirectedLink(dl.src, dl.dst, new, dl.mtu)
    if not (uses_netem(new) or new.rate_bps):
        return [replace(c, check=True) for c in clear_cmds(dl)]
    return netem_cmds(nl)


def tbf_change_cmds(dl: DirectedLink, new: LinkShape) -> list[Cmd]:
    """Rate and queue limit of a tbf-shaped direction (the nfqueue emulator's):
    ``tc qdisc replace`` changes the tbf in place; a rate removed deletes it."""
    if new.rate_bps == dl.shape.rate_bps and new.queue == dl.shape.queue:
        return []
    if not new.rate_bps:
        return [replace(c, check=True) for c in clear_cmds(dl)]
    return tbf_cmds(DirectedLink(dl.src, dl.dst, new, dl.mtu))


class NetemEmulator:
    """Emulation with tc netem where the kernel has sch_netem: no helper process."""

    name = "netem"

    def link_cmds(self, dl: DirectedLink, queue_num: int, workdir: Path) -> tuple[list[Cmd], list[Daemon]]:
        if dl.shape.trace is not None:
            raise HostNotReady(f"{dl.src}->{dl.dst}: netem cannot replay a delivery trace "
                               f"({dl.shape.trace.name}); use the delay line: --emulation nfqueue")
        return netem_cmds(dl), []

    def clear_cmds(self, dl: DirectedLink) -> list[Cmd]:
        return clear_cmds(dl)

    def rate_change_cmds(self, dl: DirectedLink, new_rate_bps: int) -> list[Cmd]:
        return rate_change_cmds(dl, new_rate_bps, netem_layout=True)

    def change_cmds(self, dl: DirectedLink, new: LinkShape) -> list[Cmd]:
        return netem_change_cmds(dl, new)

    def trace_switch_cmds(self, dl: DirectedLink, new: LinkShape) -> list[Cmd]:
        raise ValueError("netem replays no delivery trace: a trace switch needs the nfqueue emulation")
