"""Which end of a TCP packet is the client: the packet goes to a server port.

A port alone cannot say it when the client's port is a server port too (a client bound to
the server's port number, as some test tools and NAT-less peer setups do): both directions
then go "to the server port". For those 4-tuples the handshake decides: the sender of the
SYN is the client; without one, the receiver of the SYN/ACK; without either (a capture
started mid-connection), the sender of the first packet seen.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np

from . import packets
from .packets import ACK, SYN
from .table import Table


def to_server(pk: Table, ports: Collection[int]) -> np.ndarray:
    """Per row of the packet table: does it go from the client to the server? (see the
    module docstring; rows without TCP, ICMP rows included, follow the port alone)."""
    sp, dp = pk.arr("sport"), pk.arr("dport")
    port_list = np.array(sorted(ports), dtype=float)
    to = np.isin(dp, port_list)
    both = np.flatnonzero(to & np.isin(sp, port_list) & np.isnan(pk.arr("icmp_type")))
    if not len(both):
        return to
    (src, dst), _ = packets.address_codes(pk, "ip_src", "ip_dst")
    a = src[both] * 65536 + sp[both].astype(np.int64)          # the endpoints, as one integer each
    b = dst[both] * 65536 + dp[both].astype(np.int64)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    flags = pk.arr("flags")[both]
    syn, synack = (flags & (SYN | ACK)) == SYN, (flags & (SYN | ACK)) == (SYN | ACK)
    groups, first = np.unique(np.stack([lo, hi]), axis=1, return_inverse=True)
    first = first.ravel()
    client = np.empty(groups.shape[1], dtype=np.int64)
    for g in range(groups.shape[1]):
        rows = np.flatnonzero(first == g)
        k = rows[syn[rows]]
        if len(k):
            client[g] = a[k[0]]
            continue
        k = rows[synack[rows]]
        client[g] = b[k[0]] if len(k) else a[rows[0]]
    to[both] = a == client[first]
    return to


#: how many times longer one handshake gap must be than the other to place the capture at an
#: end: an end host answers in microseconds to a millisecond, a path takes at least a few
#: times that; between the two (a capture on a router, or a path as fast as the host) no end
END_RATIO = 4.0
#: the longest an end host takes to answer in the handshake (s), for telling a point between
#: the ends from a path too short to place the point at all
HOST_TURNAROUND_S = 0.001


def capture_end(times: np.ndarray, flags: np.ndarray, from_client: np.ndarray) -> str | None:
    """Which end of a subflow a capture point sits at, from its handshake as captured there
    (one subflow's packets at one point, in capture order): ``"client"``, ``"server"``,
    ``"middle"``, or None without a captured SYN, SYN/ACK and the client's ACK after it, or
    when the gaps cannot tell (both alike and too short to hold any path).

    At the client, SYN -> SYN/ACK spans the whole path RTT and SYN/ACK -> ACK only the client's
    own turnaround; at the server the other way round; at a point between, each gap holds the
    part of the path on its side. The SYN is the last one before the SYN/ACK (an earlier SYN
    that got no answer says nothing about the path)."""
    syn = np.flatnonzero(((flags & (SYN | ACK)) == SYN) & from_client)
    synack = np.flatnonzero(((flags & (SYN | ACK)) == (SYN | ACK)) & ~from_client)
    if not len(syn) or not len(synack):
        return None
    sa = int(synack[0])
    before = syn[syn < sa]
    after = np.flatnonzero(from_client & ((flags & SYN) == 0))
    after = after[after > sa]
    if not len(before) or not len(after):
        return None
    a = float(times[sa] - times[before[-1]])       # SYN -> SYN/ACK
    b = float(times[after[0]] - times[sa])         # SYN/ACK -> ACK
    if a >= END_RATIO * b:
        return "client"
    if b >= END_RATIO * a:
        return "server"
    # neither gap dominates: a point between the ends only when both gaps hold some path
    # (a host's turnaround is well under HOST_TURNAROUND_S); two gaps of tens of
    # microseconds (a path with no delay to speak of) place the point nowhere
    return "middle" if min(a, b) >= HOST_TURNAROUND_S else None
