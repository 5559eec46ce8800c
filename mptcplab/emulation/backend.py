"""The interface both link-emulation implementations share, and how one is chosen.

Two implementations of the same link model (linkmodel.py):

* ``netem``   -- tc netem (delay, jitter, loss) with tbf for rate and queue, all
  at the sender's egress. Needs sch_netem in the kernel.
* ``nfqueue`` -- tbf at the sender's egress for rate and queue; loss and delay at
  the receiver's ingress: a netfilter rule (random drop, then NFQUEUE with no
  bypass) feeding ``mptcplab-delayline`` (native/delayline/), a process that
  holds each packet for the delay. Works on kernels without sch_netem.

An implementation only *describes* what to do: commands (``Cmd``) and long-running
processes (``Daemon``). Running them is the netns backend's job, supervising the
daemons is supervise.py's.
"""

from __future__ import annotations

import os
import secrets
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..backends.state import recorded_namespaces
from ..commands import Cmd
from ..errors import HostNotReady
from .linkmodel import DirectedLink

EMULATOR_NAMES = ("netem", "nfqueue")


@dataclass(frozen=True)
class Daemon:
    """A long-running process a link needs (started before traffic, stopped after)."""

    node: str
    argv: tuple[str, ...]
    name: str  # e.g. "delayline ra:eth1<-client:eth1"
    ready_marker: str = "ready"
    stats_path: str | None = None


class Emulator(Protocol):
    """One way of turning a DirectedLink into kernel state on its nodes."""

    name: str  # "netem" | "nfqueue"

    def link_cmds(self, dl: DirectedLink, queue_num: int, workdir: Path) -> tuple[list[Cmd], list[Daemon]]:
        """Commands that shape ``dl`` and daemons it needs. ``queue_num`` must be
        unique per receiving node (NFQUEUE numbers are per network namespace);
        ``workdir`` receives daemon stats files. Start the daemons (and wait for
        them to be ready) before running the commands: a packet steered to a
        queue nobody listens on is dropped, never passed."""
        ...

    def clear_cmds(self, dl: DirectedLink) -> list[Cmd]:
        """Commands that remove what ``link_cmds`` installed (never fail the caller)."""
        ...

    def rate_change_cmds(self, dl: DirectedLink, new_rate_bps: int) -> list[Cmd]:
        """Commands that change the rate of an installed link at run time."""
        ...


def select_emulator(force: str | None, netem_available: bool) -> Emulator:
    """The emulator to use: ``force`` ("netem"/"nfqueue") wins, else netem when the
    kernel has it (it needs no helper process), else the NFQUEUE delay line."""
    # imported here: nfqueue.py needs Daemon and delayline_binary from this module
    from .nfqueue import NfqueueEmulator
    from .tc import NetemEmulator

    if force is not None and force not in EMULATOR_NAMES:
        raise ValueError(f"unknown emulation backend {force!r}; use one of {', '.join(EMULATOR_NAMES)}")
    if force == "netem" and not netem_available:
        raise HostNotReady(
            "the netem backend was forced but this kernel has no sch_netem "
            "(tc answers 'Specified qdisc kind is unknown'); use --backend nfqueue"
        )
    if force == "netem" or (force is None and netem_available):
        return NetemEmulator()
    return NfqueueEmulator()


def _run_quiet(argv: list[str]) -> bool:
    try:
        return subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10,
                              check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def netem_available() -> bool:
    """Whether the kernel can add a netem qdisc. Probed, not guessed: in a throwaway
    network namespace (so no host interface is touched), on its loopback device
    (every namespace has one; this kernel has no dummy devices). On kernels with
    loadable modules this also loads sch_netem, which is what a lab would do."""
    ns = f"mpltprobe{secrets.token_hex(4)}"
    with recorded_namespaces(ns, [ns]):  # a kill mid-probe leaves it to `mptcplab clean`
        if not _run_quiet(["ip", "netns", "add", ns]):
            return False
        try:
            return _run_quiet(["ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay",
                               "1ms"])
        finally:
            _run_quiet(["ip", "netns", "del", ns])


def nft_queue_available() -> bool:
    """Whether nftables' native ``queue`` statement works (nft_queue). This machine's
    kernel lacks it while iptables' NFQUEUE target (via nft_compat) works, which is
    why the nfqueue emulator defaults to iptables rules."""
    ns = f"mpltprobe{secrets.token_hex(4)}"
    with recorded_namespaces(ns, [ns]):
        if not _run_quiet(["ip", "netns", "add", ns]):
            return False
        try:
            ok = _run_quiet(["ip", "netns", "exec", ns, "nft", "add", "table", "inet", "probe"])
            ok = ok and _run_quiet(
                ["ip", "netns", "exec", ns, "nft", "add", "chain", "inet", "probe", "c",
                 "{ type filter hook prerouting priority 0 ; }"]
            )
            return ok and _run_quiet(["ip", "netns", "exec", ns, "nft", "add", "rule", "inet", "probe", "c", "queue",
                                      "num", "0"])
        finally:
            _run_quiet(["ip", "netns", "del", ns])


def repo_root() -> Path:
    """The source checkout this package lives in (mptcplab/emulation/backend.py -> repo)."""
    return Path(__file__).resolve().parents[2]


def delayline_binary(must_exist: bool = True) -> Path:
    """Path of mptcplab-delayline: $MPTCPLAB_DELAYLINE, else <repo>/native/build/.
    With ``must_exist`` (the default) a missing or non-executable binary raises
    HostNotReady saying how to build it; ``must_exist=False`` is for --dry-run."""
    env = os.environ.get("MPTCPLAB_DELAYLINE")
    path = Path(env) if env else repo_root() / "native" / "build" / "mptcplab-delayline"
    if must_exist and not (path.is_file() and os.access(path, os.X_OK)):
        where = "$MPTCPLAB_DELAYLINE points to" if env else "expected"
        raise HostNotReady(
            f"the NFQUEUE delay line is not built ({where} {path}); build it with "
            f"`make -C {repo_root() / 'native'}` (needs gcc, pkg-config, libnetfilter-queue-dev, libmnl-dev)"
        )
    return path
