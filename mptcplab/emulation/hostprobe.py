"""What the kernel can do for link emulation, asked in a throwaway network namespace.

A probe namespace is a run's resource like any other: it is named like a run's
namespaces (``mpl<6 hex>-probe``) and its ownership record is written before it
exists, so a kill during a probe leaves something ``mptcplab clean`` removes (issue
12 item 6: the former ``mpltprobe<hex>`` names were unknown to clean). A dry run never
probes (it creates nothing).
"""

from __future__ import annotations

import secrets
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

from ..runstate import STATE_DIR, write_state

PROBE_NODE = "probe"


def _run_quiet(argv: list[str]) -> bool:
    try:
        return subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10,
                              check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@contextmanager
def probe_namespace() -> Iterator[str | None]:
    """A namespace for one probe (None when it cannot be made), recorded before it
    exists and removed, with its record, on every exit path."""
    prefix = f"mpl{secrets.token_hex(3)}"
    ns = f"{prefix}-{PROBE_NODE}"
    state = STATE_DIR / f"{prefix}.json"
    write_state(state, {"prefix": f"{prefix}-", "nodes": [PROBE_NODE], "namespaces": [ns], "probe": True})
    try:
        yield ns if _run_quiet(["ip", "netns", "add", ns]) else None
    finally:
        _run_quiet(["ip", "netns", "del", ns])
        state.unlink(missing_ok=True)


def netem_available() -> bool:
    """Whether the kernel can add a netem qdisc. Probed, not guessed: in a throwaway
    network namespace (so no host interface is touched), on its loopback device
    (every namespace has one; this kernel has no dummy devices). On kernels with
    loadable modules this also loads sch_netem, which is what a lab would do."""
    with probe_namespace() as ns:
        if ns is None:
            return False
        return _run_quiet(["ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "lo", "root", "netem",
                           "delay", "1ms"])


def nft_queue_available() -> bool:
    """Whether nftables' native ``queue`` statement works (nft_queue). This machine's
    kernel lacks it while iptables' NFQUEUE target (via nft_compat) works, which is
    why the nfqueue emulator defaults to iptables rules."""
    with probe_namespace() as ns:
        if ns is None:
            return False
        ok = _run_quiet(["ip", "netns", "exec", ns, "nft", "add", "table", "inet", "probe"])
        ok = ok and _run_quiet(
            ["ip", "netns", "exec", ns, "nft", "add", "chain", "inet", "probe", "c",
             "{ type filter hook prerouting priority 0 ; }"]
        )
        return ok and _run_quiet(["ip", "netns", "exec", ns, "nft", "add", "rule", "inet", "probe", "c", "queue",
                                  "num", "0"])
