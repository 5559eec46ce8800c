"""The analysis of one latency flow: per-block delay distribution (the NSDI 2012 Fig 7
PDF in 5 ms bins, p50/p95/p99), the time the sender was blocked for send-buffer space,
the rate the application achieved, and what the kernel should report for a locked buffer."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .params import LatencyFiles
from .read import (
    LatencySummary,
    empty_receiver_records,
    empty_sender_records,
    read_receiver_records,
    read_sender_records,
    read_summary,
)

PDF_BIN_MS = 5.0


@dataclass(frozen=True)
class DelayStats:
    """Per-block delay in ms (NaN everywhere when no block arrived)."""

    blocks: int
    min_ms: float
    mean_ms: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    max_ms: float


def delay_stats(delays_ms: pd.Series) -> DelayStats:
    d = delays_ms.to_numpy(dtype=float)
    if d.size == 0:
        nan = math.nan
        return DelayStats(0, nan, nan, nan, nan, nan, nan)
    p50, p95, p99 = np.percentile(d, [50, 95, 99])
    return DelayStats(int(d.size), float(d.min()), float(d.mean()), float(p50), float(p95), float(p99),
                      float(d.max()))


def delay_pdf(delays_ms: pd.Series, bin_ms: float = PDF_BIN_MS) -> pd.DataFrame:
    """Fraction of blocks per delay bin [lo, hi) of ``bin_ms``, from 0 to the bin holding the
    largest delay (empty bins included, so the PDF plots as the paper's bars). Columns:
    bin_lo_ms, bin_hi_ms, count, fraction (fractions sum to 1)."""
    if bin_ms <= 0:
        raise ValueError(f"bin width must be > 0, not {bin_ms}")
    d = delays_ms.to_numpy(dtype=float)
    if d.size == 0:
        return pd.DataFrame({"bin_lo_ms": [], "bin_hi_ms": [], "count": [], "fraction": []})
    # the clock is shared, so a delay below 0 is a bug upstream: it shows in bin -1, not hidden in 0
    lo_bin = min(0, math.floor(d.min() / bin_ms))
    hi_bin = math.floor(d.max() / bin_ms) + 1
    edges = np.arange(lo_bin, hi_bin + 1) * bin_ms
    counts, _ = np.histogram(d, bins=edges)
    return pd.DataFrame({"bin_lo_ms": edges[:-1], "bin_hi_ms": edges[1:], "count": counts,
                         "fraction": counts / d.size})


@dataclass(frozen=True)
class BlockedStats:
    """Time the sender waited for send-buffer space (poll for POLLOUT after EAGAIN)."""

    blocks: int
    blocked_blocks: int      # blocks whose write waited at all
    blocked_fraction: float  # blocked_blocks / blocks
    total_s: float
    share: float             # total_s / the sender's writing time (NaN when unknown)
    p50_ms: float
    p95_ms: float
    p99_ms: float
    max_ms: float


def blocked_stats(sender: pd.DataFrame, duration_s: float | None = None) -> BlockedStats:
    b = sender["blocked_ms"].to_numpy(dtype=float) if len(sender) else np.array([])
    if b.size == 0:
        nan = math.nan
        return BlockedStats(0, 0, nan, 0.0, nan, nan, nan, nan, nan)
    if duration_s is None:
        span = (int(sender["t_done_ns"].iloc[-1]) - int(sender["t_write_ns"].iloc[0])) / 1e9
        duration_s = span if span > 0 else None
    total = float(b.sum()) / 1e3
    p50, p95, p99 = np.percentile(b, [50, 95, 99])
    n_blocked = int((b > 0).sum())
    return BlockedStats(blocks=int(b.size), blocked_blocks=n_blocked, blocked_fraction=n_blocked / b.size,
                        total_s=total, share=total / duration_s if duration_s else math.nan,
                        p50_ms=float(p50), p95_ms=float(p95), p99_ms=float(p99), max_ms=float(b.max()))


@dataclass(frozen=True)
class RateStats:
    """The rate the application wrote at and the receiver's goodput, both from the records."""

    sent_blocks_per_s: float
    sent_bps: float
    received_bps: float


def rate_stats(sender: pd.DataFrame, receiver: pd.DataFrame, block_bytes: int) -> RateStats:
    """Rates over the span between the first and last block (n-1 intervals), so a short run
    is not diluted by the connection setup or the drain at the end."""
    def per_s(ts: pd.Series) -> float:
        if len(ts) < 2:
            return math.nan
        span = (int(ts.iloc[-1]) - int(ts.iloc[0])) / 1e9
        return (len(ts) - 1) / span if span > 0 else math.nan
    sent = per_s(sender["t_write_ns"]) if len(sender) else math.nan
    recv = per_s(receiver["t_recv_ns"]) if len(receiver) else math.nan
    return RateStats(sent, sent * block_bytes * 8, recv * block_bytes * 8)


def expected_locked_buffer(requested: int, cap: int, forced: bool = False, minimum: int = 0) -> int:
    """What getsockopt(SO_SNDBUF/SO_RCVBUF) returns after setsockopt(requested): the kernel
    caps the request at net.core.wmem_max/rmem_max (``cap``; not with the *BUFFORCE
    variants), doubles it (its bookkeeping counts struct overhead, "man 7 socket") and
    raises it to its minimum (SOCK_MIN_SNDBUF/RCVBUF, a few KB; pass it if it matters)."""
    v = requested if forced else min(requested, cap)
    return max(2 * v, minimum)


@dataclass(frozen=True)
class LatencyResult:
    server: LatencySummary
    client: LatencySummary
    blocks: pd.DataFrame  # receiver records joined with the sender's (blocked_ms, write_ms, late_ms) on seq
    delay: DelayStats
    pdf: pd.DataFrame
    blocked: BlockedStats
    rate: RateStats

    @property
    def errors(self) -> list[str]:
        return [f"{s.role}: {s.error}" for s in (self.server, self.client) if s.error]


def analyze(files: LatencyFiles, block_bytes: int | None = None, bin_ms: float = PDF_BIN_MS) -> LatencyResult:
    server = read_summary(files.server_json)
    client = read_summary(files.client_json)
    # a side that died before writing its records contributes no rows, not a traceback
    recv = read_receiver_records(files.server_records) if files.server_records.exists() else empty_receiver_records()
    send = read_sender_records(files.client_records) if files.client_records.exists() else empty_sender_records()
    blocks = recv.merge(send[["seq", "blocked_ms", "write_ms", "late_ms"]], on="seq", how="left")
    bb = block_bytes if block_bytes is not None else int(client.raw.get("block_bytes", 8192))
    return LatencyResult(server=server, client=client, blocks=blocks, delay=delay_stats(recv["delay_ms"]),
                         pdf=delay_pdf(recv["delay_ms"], bin_ms), blocked=blocked_stats(send, client.duration_s),
                         rate=rate_stats(send, recv, bb))

