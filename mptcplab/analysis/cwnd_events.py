"""Congestion-window reductions of one subflow's sender, from tcp:tcp_probe, and whether a
loss explains each (the Kato papers' "cwnd decreases without TCP-level loss").

The tracepoint gives one sample per ACK the sender receives (``probes/tcp_probe.csv``:
snd_cwnd in segments, srtt) and tcp:tcp_retransmit_skb one row per retransmitted segment of
the same socket (same ``skaddr``). Definitions, in this order:

* a *decrease* is a sample whose snd_cwnd is below the previous sample's of the same socket;
* a *reduction* is a maximal run of decreases each at most one smoothed RTT (the sample's
  srtt, at least ``MIN_GAP_S``) after the previous one: Linux lowers cwnd over the ACKs of one
  round (PRR in recovery, one step per ACK), and one congestion event is one reduction, not
  one per ACK. Increases between the decreases do not split a run shorter than that;
* a reduction is *with loss* when the socket retransmitted a segment (tcp_retransmit_skb)
  from ``LOSS_LOOKBACK_RTTS`` smoothed RTTs (at least ``MIN_GAP_S``) before its first
  decrease to its last: fast retransmit and RTO both retransmit before or while the window
  falls. Otherwise it is *without loss*.

On upstream Linux a reduction without loss comes from congestion window validation
(RFC 7661: an application- or buffer-limited sender's cwnd is pulled down towards what it
used, tcp_cwnd_application_limited), the restart after idle (tcp_slow_start_after_idle), or
an undo that is not one; the papers' out-of-tree kernel also had MPTCP's penalisation of a
slow subflow, which upstream does not have. The definition counts all of them alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .model import SubflowResult

#: the shortest gap/lookback used when srtt is tiny (the fast path's RTT is ~0.1 ms here)
MIN_GAP_S = 0.010
#: a retransmission this many smoothed RTTs before a reduction's first decrease explains it
LOSS_LOOKBACK_RTTS = 2.0

#: a cwnd above this (segments) is no window TCP can fill: the largest window is 2^30 bytes
#: (RFC 7323, scale 14), fewer than 2^21 segments at the smallest MSS (536). Such samples
#: were seen with mptcp_lia (docs/cc-lia.md, "cwnd jumps"); the cwnd metrics count them
#: and leave them out
CWND_IMPLAUSIBLE = 2**21

EPISODE_COLUMNS = ["start_t", "end_t", "cwnd_before", "cwnd_after", "decreases", "with_loss"]


def implausible(cwnd: pd.Series) -> pd.Series:
    """True where a cwnd sample is above CWND_IMPLAUSIBLE (a missing sample is not)."""
    return pd.to_numeric(cwnd, errors="coerce").gt(CWND_IMPLAUSIBLE)


@dataclass(frozen=True)
class Socket:
    """A subflow seen from its data sender: (src, sport) -> (dst, dport)."""

    src: str
    sport: int
    dst: str
    dport: int


def socket_samples(table: pd.DataFrame, sock: Socket) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(tcp_probe samples, tcp_retransmit_skb rows) of one sender socket, sorted by time.
    The retransmissions are matched by the socket's ``skaddr`` (their addresses are not
    comparable), which the samples of that 4-tuple carry."""
    if table.empty:
        return table, table
    probe = table[(table["event"] == "tcp_probe") & (table["src"] == sock.src) & (table["sport"] == sock.sport)
                  & (table["dst"] == sock.dst) & (table["dport"] == sock.dport)].sort_values("t", kind="stable")
    addrs = set(probe["skaddr"].dropna())
    retr = table[(table["event"] == "tcp_retransmit_skb") & table["skaddr"].isin(addrs)].sort_values("t", kind="stable")
    return probe, retr


def reductions(samples: pd.DataFrame, retransmits: pd.DataFrame) -> pd.DataFrame:
    """The reductions of one socket (module doc), one row each: start_t, end_t (first and
    last decrease), cwnd_before (before the first), cwnd_after (after the last), decreases,
    with_loss."""
    if len(samples) < 2:
        return pd.DataFrame(columns=EPISODE_COLUMNS)
    t = samples["t"].to_numpy(dtype=float)
    cwnd = samples["snd_cwnd"].to_numpy(dtype=float)
    srtt_s = np.maximum(samples["srtt_us"].fillna(0).to_numpy(dtype=float) / 1e6, MIN_GAP_S)
    down = np.flatnonzero(cwnd[1:] < cwnd[:-1]) + 1  # indices of decreasing samples
    rt = np.sort(retransmits["t"].to_numpy(dtype=float)) if not retransmits.empty else np.zeros(0)
    rows = []
    i = 0
    while i < len(down):
        j = i
        while j + 1 < len(down) and t[down[j + 1]] - t[down[j]] <= srtt_s[down[j]]:
            j += 1
        first, last = down[i], down[j]
        lo = t[first] - max(LOSS_LOOKBACK_RTTS * srtt_s[first], MIN_GAP_S)
        hits = np.searchsorted(rt, t[last], side="right") - np.searchsorted(rt, lo, side="left")
        rows.append({"start_t": t[first], "end_t": t[last], "cwnd_before": int(cwnd[first - 1]),
                     "cwnd_after": int(cwnd[last]), "decreases": int(j - i + 1), "with_loss": bool(hits > 0)})
        i = j + 1
    return pd.DataFrame(rows, columns=EPISODE_COLUMNS)


def count_without_loss(samples: pd.DataFrame, retransmits: pd.DataFrame) -> int:
    ep = reductions(samples, retransmits)
    return int((~ep["with_loss"].astype(bool)).sum()) if not ep.empty else 0


#: probes/cwnd_reductions.csv: one row per reduction of a subflow's sender
TABLE_COLUMNS = ["path", "subflow", *EPISODE_COLUMNS]


def sender_socket(src: str, sport: int, dst: str, dport: int, upload: bool) -> Socket:
    """The data sender's socket of a subflow the capture names client -> server."""
    return Socket(src, sport, dst, dport) if upload else Socket(dst, dport, src, sport)


def subflow_reductions(table: pd.DataFrame, subflows: Sequence[SubflowResult], upload: bool) -> pd.DataFrame:
    """Every reduction of every subflow's data sender (TABLE_COLUMNS; start_t/end_t on the
    tcp_probe table's clock: the capture's epoch seconds)."""
    parts = []
    for sf in subflows:
        samples, rtx = socket_samples(table, sender_socket(sf.src, sf.sport, sf.dst, sf.dport, upload))
        ep = reductions(samples, rtx)
        if not ep.empty:
            ep.insert(0, "subflow", sf.name)
            ep.insert(0, "path", sf.path)
            parts.append(ep)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=TABLE_COLUMNS)


def counts_by_subflow(table: pd.DataFrame, subflows: Sequence[SubflowResult], upload: bool,
                      episodes: pd.DataFrame | None = None) -> dict[str, dict[str, Any]]:
    """{subflow name: {"path", "samples", "reductions", "without_loss"}} for the record
    (rep.json probes.tcp_probe.cwnd_reductions); a subflow without samples has samples 0."""
    ep = episodes if episodes is not None else subflow_reductions(table, subflows, upload)
    out: dict[str, dict[str, Any]] = {}
    for sf in subflows:
        samples, _ = socket_samples(table, sender_socket(sf.src, sf.sport, sf.dst, sf.dport, upload))
        mine = ep[ep["subflow"] == sf.name] if not ep.empty else ep
        out[sf.name] = {"path": sf.path, "samples": int(len(samples)), "reductions": int(len(mine)),
                        "without_loss": int((~mine["with_loss"].astype(bool)).sum()) if not mine.empty else 0}
    return out
