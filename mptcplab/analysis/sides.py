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
import pandas as pd

from . import packets
from .packets import ACK, SYN


def to_server(pk: pd.DataFrame, ports: Collection[int]) -> np.ndarray:
    """Per row of the packet table: does it go from the client to the server? (see the
    module docstring; rows without TCP, ICMP rows included, follow the port alone)."""
    sp, dp = pk["sport"].to_numpy(), pk["dport"].to_numpy()
    port_list = np.array(sorted(ports), dtype=float)
    to = np.isin(dp, port_list)
    both = np.flatnonzero(to & np.isin(sp, port_list) & np.isnan(pk["icmp_type"].to_numpy()))
    if not len(both):
        return to
    (src, dst), _ = packets.address_codes(pk, "ip_src", "ip_dst")
    a = src[both] * 65536 + sp[both].astype(np.int64)          # the endpoints, as one integer each
    b = dst[both] * 65536 + dp[both].astype(np.int64)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    flags = pk["flags"].to_numpy()[both]
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
