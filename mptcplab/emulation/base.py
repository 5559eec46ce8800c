"""What every link-emulation implementation shares: the ``Emulator`` interface, the
``Daemon`` description of a helper process, and where the delay-line binary is.

This module imports no implementation (tc.py, nfqueue.py import it), so there is
no import cycle; choosing an implementation is select.py's job, asking the kernel
what it can do is hostprobe.py's.

Two implementations of the same link model (linkmodel.py):

* ``netem``   -- tc netem (delay, jitter, loss) with tbf for rate and queue, all
  at the sender's egress. Needs sch_netem in the kernel.
* ``nfqueue`` -- tbf at the sender's egress for rate and queue; loss and delay at
  the receiver's ingress: a netfilter rule (random drop, then NFQUEUE with no
  bypass) feeding ``mptcplab-delayline`` (native/delayline/), a process that
  holds each packet for the delay. Works on kernels without sch_netem.

An implementation only *describes* what to do: commands (``Cmd``) and long-running
processes (``Daemon``). Running them is a backend's job, supervising the daemons
is mptcplab/supervise.py's.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol

from ..commands import Cmd
from ..errors import HostNotReady
from ..supervise import Daemon  # what a link's helper process is: the supervisor's notion
from .linkmodel import DirectedLink, LinkShape

EMULATOR_NAMES = ("netem", "nfqueue")


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

    def change_cmds(self, dl: DirectedLink, new: LinkShape) -> list[Cmd]:
        """Commands that turn the installed direction ``dl`` (its shape as it is now)
        into ``new`` at run time (timeline link_change). Raises ValueError, saying
        why, for a change this emulator cannot make on a running link."""
        ...

    def trace_switch_cmds(self, dl: DirectedLink, new: LinkShape) -> list[Cmd]:
        """Commands that switch the installed trace direction ``dl`` to ``new.trace`` from
        ``new.trace_offset_s``, now (timeline link_change ``trace``: mobility). Raises
        ValueError, saying why, when this emulator or this direction cannot."""
        ...


def repo_root() -> Path:
    """The source checkout this package lives in (mptcplab/emulation/base.py -> repo)."""
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


__all__ = ["EMULATOR_NAMES", "Daemon", "Emulator", "delayline_binary", "repo_root"]
