"""The send buffer an MPTCP connection needs (Kato et al.'s Eq (1)) and the one it gets.

Eq (1) of Kato et al. 2019, printed in their 2020 paper (Section II): for paths of
bandwidth bw_i and the largest round-trip time RTT_max,

    Buffer = (sum_i bw_i) x RTT_max x 2

bytes (bandwidths in bytes/s): the connection-level buffer must hold a round of data for
every path while the slow path's data wait for their acknowledgements, and twice that so a
retransmission does not stall the others. For the papers' 2 x 100 Mbit/s: RTT 50 ms
-> 2.5 MB, 75 -> 3.75 MB, 80 -> 4.0 MB, 100 -> 5.0 MB.

What the kernel gives. The papers' out-of-tree MPTCP bounded the connection-level (meta)
socket's buffer by tcp_wmem[2]. Upstream (net/mptcp/protocol.h, __mptcp_sync_sndbuf) sets
the MPTCP socket's sk_sndbuf to tcp_wmem[0] plus the sum of its subflows' sk_sndbuf, each
autotuned up to tcp_wmem[2], unless the application locked it with SO_SNDBUF (then it is
the doubled request, capped by net.core.wmem_max unless forced, on the MPTCP socket and
every subflow: tools/latency's expected_locked_buffer).
"""

from __future__ import annotations

from collections.abc import Iterable


def eq1_required_bytes(rates_bps: Iterable[float], rtts_s: Iterable[float]) -> float | None:
    """Eq (1): sum of the paths' rates (bit/s) x the largest RTT (s) x 2, in bytes; None
    when a rate or an RTT is missing."""
    rates, rtts = list(rates_bps), list(rtts_s)
    if not rates or not rtts or any(r is None or r <= 0 for r in rates) or any(x is None or x < 0 for x in rtts):
        return None
    return sum(rates) / 8.0 * max(rtts) * 2.0


def upstream_unlocked_sndbuf(tcp_wmem: tuple[int, int, int], subflows: int) -> int:
    """The largest MPTCP-socket send buffer upstream allows without SO_SNDBUF:
    tcp_wmem[0] + subflows x tcp_wmem[2] (each subflow autotunes up to tcp_wmem[2])."""
    return tcp_wmem[0] + subflows * tcp_wmem[2]


def parse_wmem(value: str | int | None) -> tuple[int, int, int] | None:
    """"4096 16384 4194304" -> (4096, 16384, 4194304); None for anything else."""
    if value is None:
        return None
    parts = str(value).split()
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        return None
    a, b, c = (int(p) for p in parts)
    return a, b, c
