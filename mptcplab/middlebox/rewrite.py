"""The rewriting middleboxes (``rewrite-isn``, ``modify-payload``, ``split-segments``,
``coalesce-segments``): a router's forwarded
IPv4 TCP is steered to NFQUEUE and rewritten by ``mptcplab-mbox`` (native/mbox/, which
says why it is hand-written), one daemon per box, run in the router's namespace.

Command generation only (pure); the plan starts the daemons through the supervisor
like the delay lines (``supervise.Daemon``: ready marker, SIGTERM writes the counters,
which the run keeps beside the delay lines' stats) and only then adds the rule, which
has no bypass: a box that is not running drops the router's TCP, never passes it
untouched. Why iptables and not nftables' own ``queue``: this kernel has nft_compat and
xt_NFQUEUE but not the native queue expression (``nft add rule ... queue num 7`` gives
"No such file or directory"; emulation/nfqueue.py found the same). Why the mangle
table's FORWARD hook: after the delay lines (raw PREROUTING) and the routing decision,
so the box sees what the router forwards, in both directions.

On a host (``modify-payload`` only: the schema refuses the others there) the rule is in
mangle POSTROUTING, for what the host sends (``iface``: leaving by it): the last netfilter
hook before the qdisc, as close as netfilter gets to where the selftests' tc pedit corrupts
(clsact egress), after the routing decision (so ``-o`` is the interface the segment really
leaves by, also when a mark set in OUTPUT re-routed it: balance_rr) and after the host's
own nftables filters saw the segment as TCP sent it. The kernel completes a partial
checksum before queueing (no NFQA_CFG_F_GSO), so the box's TCP checksum fix leaves a valid
TCP checksum; only MPTCP's DSS checksum (net.mptcp.checksum_enabled) can tell.

Queue numbers continue after the links' delay lines (net/plan.py's counter), so they never
collide with a delay line of the same router.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from ..commands import Cmd, cmd
from ..emulation.base import repo_root
from ..errors import HostNotReady
from ..lab.schema import REWRITING_KINDS, CoalesceSegments, ExperimentBody, ModifyPayload, RewriteIsn, SplitSegments
from ..supervise import Daemon

KINDS = REWRITING_KINDS
Box = RewriteIsn | ModifyPayload | SplitSegments | CoalesceSegments


def binary(must_exist: bool = True) -> Path:
    """mptcplab-mbox: $MPTCPLAB_MBOX, else <repo>/native/build/ (``must_exist=False``: dry run)."""
    env = os.environ.get("MPTCPLAB_MBOX")
    path = Path(env) if env else repo_root() / "native" / "build" / "mptcplab-mbox"
    if must_exist and not (path.is_file() and os.access(path, os.X_OK)):
        raise HostNotReady(f"the rewriting middlebox is not built (expected {path}); build it with "
                           f"`make -C {repo_root() / 'native'}` (needs libnetfilter-queue-dev, libmnl-dev)")
    return path


def stats_path(node: str, queue: int, workdir: Path) -> Path:
    return workdir / f"mbox-{re.sub(r'[^A-Za-z0-9_.-]', '_', node)}-q{queue}.json"


def mode_argv(box: Box) -> tuple[str, ...]:
    """The program's mode and its parameters, from the lab's box."""
    if isinstance(box, RewriteIsn):
        return ("isn-offset", str(box.offset))
    if isinstance(box, SplitSegments):
        return ("--after", str(box.after), "--every", str(box.every), "split")
    if isinstance(box, CoalesceSegments):
        return ("--after", str(box.after), "--every", str(box.every), "--max-len", str(box.max_len), "merge")
    count = ("--count", str(box.count)) if box.count is not None else ()
    return ("--after", str(box.after), "--every", str(box.every), "--byte-offset", str(box.byte_offset), *count,
            "payload-flip")


def daemon(node: str, box: Box, queue: int, workdir: Path, exe: Path) -> Daemon:
    argv = (str(exe), "--queue", str(queue), "--stats", str(stats_path(node, queue, workdir)), *mode_argv(box))
    return Daemon(node=node, argv=argv, name=f"mbox {box.kind} {node} q{queue}",
                  stats_path=str(stats_path(node, queue, workdir)))


def rule_cmds(node: str, box: Box, queue: int, role: str = "router") -> list[Cmd]:
    """The router's forwarded IPv4 TCP (arriving on ``box.iface`` when given), or the host's
    sent IPv4 TCP (leaving by ``box.iface``), to the box's queue; no ``--queue-bypass``:
    fail closed."""
    if role == "host":
        where = ("-o", box.iface) if box.iface else ()
        return [cmd("iptables", "-w", "-t", "mangle", "-A", "POSTROUTING", *where, "-p", "tcp",
                    "-j", "NFQUEUE", "--queue-num", queue, node=node,
                    why=f"host filter {box.kind}: TCP this host sends{' by ' + box.iface if box.iface else ''} "
                        f"to mptcplab-mbox queue {queue}")]
    where = ("-i", box.iface) if box.iface else ()
    return [cmd("iptables", "-w", "-t", "mangle", "-A", "FORWARD", *where, "-p", "tcp",
                "-j", "NFQUEUE", "--queue-num", queue, node=node,
                why=f"middlebox {box.kind}: forwarded TCP{' arriving on ' + box.iface if box.iface else ''} "
                    f"to mptcplab-mbox queue {queue}")]


def boxes(body: ExperimentBody) -> list[tuple[str, Box]]:
    return [(name, b) for name, spec in body.nodes.items() for b in spec.middlebox
            if isinstance(b, RewriteIsn | ModifyPayload | SplitSegments | CoalesceSegments)]


def plan(body: ExperimentBody, first_queue: int, workdir: Path,
         exe: Path | None = None) -> tuple[list[Cmd], list[Daemon]]:
    """Every rewriting box of the scenario: the rules (to run after the daemons are
    ready) and the daemons, queue numbers from ``first_queue`` on."""
    found = boxes(body)
    if not found:
        return [], []
    exe = exe or binary()
    cmds: list[Cmd] = []
    daemons: list[Daemon] = []
    for i, (node, box) in enumerate(found):
        daemons.append(daemon(node, box, first_queue + i, workdir, exe))
        cmds += rule_cmds(node, box, first_queue + i, body.nodes[node].role)
    return cmds, daemons


def problems(stats: dict[str, Any]) -> list[str]:
    """Why a box's run proves nothing or lost packets (empty: it did its job). Stats
    of other daemons (no ``mbox`` key) have none here."""
    mode = stats.get("mbox")
    if mode is None:
        return []
    out = [f"{stats[k]} {what}" for k, what in (
        ("enobufs", "netlink overflows (packets lost)"), ("verdict_errors", "verdicts the kernel rejected"),
        ("table_full", "connections not tracked (table full)"),
        ("raw_errors", "second halves of split segments not sent (lost)")) if stats.get(k)]
    if mode == "isn-offset" and not stats.get("seq_rewritten"):
        out.append("rewrote no sequence number (no SYN crossed it?)")
    if mode == "payload-flip" and not stats.get("flipped"):
        out.append(f"modified no segment ({stats.get('data_segments', 0)} data segments, "
                   f"first {stats.get('after')} left alone)")
    if mode == "split" and not stats.get("split"):
        out.append(f"split no segment ({stats.get('data_segments', 0)} data segments, first {stats.get('after')} "
                   "left alone)")
    if mode == "merge" and not stats.get("merged"):
        out.append(f"merged no segment ({stats.get('picked', 0)} held for a merge, {stats.get('merge_released', 0)} "
                   "released unmerged: none was followed in time by a continuation that fit max_len)")
    return out
