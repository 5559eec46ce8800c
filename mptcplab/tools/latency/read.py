"""Reading what mptcplab-latency wrote: the per-block binary records (into DataFrames)
and the JSON summaries (into typed objects). The formats are fixed in
native/latency/latrec.h and described in docs/results-format.md."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

FILE_HEADER_BYTES = 16
RECV_MAGIC = b"MPLTRCV1"
SEND_MAGIC = b"MPLTSND1"
# little-endian, as the C side writes them byte by byte
RECV_DTYPE = np.dtype([("seq", "<u8"), ("t_sched_ns", "<i8"), ("t_write_ns", "<i8"), ("t_recv_ns", "<i8")])
SEND_DTYPE = np.dtype([("seq", "<u8"), ("t_sched_ns", "<i8"), ("t_write_ns", "<i8"), ("t_done_ns", "<i8"),
                       ("blocked_ns", "<i8")])
MPTCP_INFO_FLAG_FALLBACK = 1


class LatencyFormatError(ValueError):
    """A records or summary file that is not what mptcplab-latency writes."""


def _records(path: Path, magic: bytes, dtype: np.dtype[Any]) -> np.ndarray[Any, Any]:
    raw = path.read_bytes()
    if len(raw) < FILE_HEADER_BYTES or raw[:8] != magic:
        raise LatencyFormatError(f"{path}: not a {magic.decode()} records file")
    size = int.from_bytes(raw[8:12], "little")
    if size != dtype.itemsize:
        raise LatencyFormatError(f"{path}: records of {size} bytes, expected {dtype.itemsize}")
    body = raw[FILE_HEADER_BYTES:]
    # a writer killed mid-record leaves a partial tail: drop it, never misalign
    whole = len(body) - len(body) % dtype.itemsize
    return np.frombuffer(body[:whole], dtype=dtype)


def read_receiver_records(path: Path) -> pd.DataFrame:
    """One row per block the receiver completed: seq, t_sched_ns, t_write_ns, t_recv_ns
    (CLOCK_REALTIME ns), delay_ms = t_recv - t_write (what the application sees, including
    time the sender waited for send-buffer space) and sched_delay_ms = t_recv - t_sched
    (also counts how late the sender's schedule was: equals delay_ms in bulk mode)."""
    a = _records(path, RECV_MAGIC, RECV_DTYPE)
    return _with_receiver_columns(pd.DataFrame({name: a[name] for name in RECV_DTYPE.names or ()}))


def _with_receiver_columns(df: pd.DataFrame) -> pd.DataFrame:
    df["delay_ms"] = (df["t_recv_ns"] - df["t_write_ns"]) / 1e6
    df["sched_delay_ms"] = (df["t_recv_ns"] - df["t_sched_ns"]) / 1e6
    return df


def empty_receiver_records() -> pd.DataFrame:
    return _with_receiver_columns(pd.DataFrame({n: pd.Series(dtype=RECV_DTYPE[n].newbyteorder("=")) for n in
                                                RECV_DTYPE.names or ()}))


def empty_sender_records() -> pd.DataFrame:
    return _with_sender_columns(pd.DataFrame({n: pd.Series(dtype=SEND_DTYPE[n].newbyteorder("=")) for n in
                                              SEND_DTYPE.names or ()}))


def read_sender_records(path: Path) -> pd.DataFrame:
    """One row per block the sender finished writing: seq, t_sched_ns, t_write_ns,
    t_done_ns, blocked_ns (waiting for send-buffer space), write_ms (first send() to
    last return), blocked_ms and late_ms (t_write - t_sched: behind the rate schedule)."""
    a = _records(path, SEND_MAGIC, SEND_DTYPE)
    return _with_sender_columns(pd.DataFrame({name: a[name] for name in SEND_DTYPE.names or ()}))


def _with_sender_columns(df: pd.DataFrame) -> pd.DataFrame:
    df["write_ms"] = (df["t_done_ns"] - df["t_write_ns"]) / 1e6
    df["blocked_ms"] = df["blocked_ns"] / 1e6
    df["late_ms"] = (df["t_write_ns"] - df["t_sched_ns"]) / 1e6
    return df


@dataclass(frozen=True)
class BufferReadback:
    """SO_SNDBUF or SO_RCVBUF as getsockopt returned it at three moments (-1: failed)."""

    requested: int | None
    forced: bool
    after_setsockopt: int
    established: int
    at_end: int


@dataclass(frozen=True)
class SubflowInfo:
    local: str
    remote: str
    tcp_info: dict[str, int]


@dataclass(frozen=True)
class LatencySummary:
    """One end's JSON summary. Client-only fields are None on the server and vice versa;
    ``raw`` keeps everything the tool wrote (fields of newer kernels included)."""

    role: str
    error: str | None
    protocol: str = "mptcp"
    mptcp_active: bool | None = None
    local: str = ""
    remote: str = ""
    sndbuf: BufferReadback | None = None
    rcvbuf: BufferReadback | None = None
    blocks: int = 0
    bytes: int = 0
    interrupted: bool = False
    tcp_info: dict[str, int] | None = None
    mptcp_info: dict[str, int] | None = None
    subflows: list[SubflowInfo] = field(default_factory=list)
    # client
    mode: str | None = None
    duration_s: float | None = None
    app_rate_bps: float | None = None
    blocked_ns_total: int | None = None
    late_blocks: int | None = None
    drained: bool | None = None
    # server
    eof: bool | None = None
    partial_block: bool | None = None
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def mptcp_fallback(self) -> bool | None:
        """Whether an MPTCP socket ended up plain TCP (None: not asked for MPTCP, or unknown)."""
        if self.protocol != "mptcp":
            return None
        if self.mptcp_active is not None:
            return not self.mptcp_active
        if self.mptcp_info is not None:
            return bool(self.mptcp_info.get("flags", 0) & MPTCP_INFO_FLAG_FALLBACK)
        return None

    @property
    def subflow_count(self) -> int | None:
        """Subflows alive at the end, from MPTCP_INFO (subflows_total counts the first one
        too, kernels >= 6.10; `subflows` alone counts only the joined ones)."""
        if self.mptcp_info is None:
            return None
        if "subflows_total" in self.mptcp_info:
            return self.mptcp_info["subflows_total"]
        return self.mptcp_info.get("subflows", 0) + 1


def _bufs(d: dict[str, Any] | None) -> BufferReadback | None:
    if not d:
        return None
    return BufferReadback(requested=d.get("requested"), forced=bool(d.get("forced")),
                          after_setsockopt=int(d["after_setsockopt"]), established=int(d["established"]),
                          at_end=int(d["at_end"]))


def parse_summary(data: dict[str, Any]) -> LatencySummary:
    if data.get("tool") != "mptcplab-latency":
        raise LatencyFormatError("not a mptcplab-latency summary")
    if data.get("error") is not None:
        return LatencySummary(role=str(data.get("role", "?")), error=str(data["error"]), raw=data)
    subflows = [SubflowInfo(str(s.get("local", "")), str(s.get("remote", "")), dict(s.get("tcp_info") or {}))
                for s in data.get("subflows") or []]
    return LatencySummary(
        role=data["role"], error=None, protocol=data["protocol"], mptcp_active=data.get("mptcp_active"),
        local=data.get("local", ""), remote=data.get("remote", ""),
        sndbuf=_bufs(data.get("sndbuf")), rcvbuf=_bufs(data.get("rcvbuf")),
        blocks=int(data.get("blocks", 0)), bytes=int(data.get("bytes", 0)),
        interrupted=bool(data.get("interrupted", False)),
        tcp_info=data.get("tcp_info"), mptcp_info=data.get("mptcp_info"), subflows=subflows,
        mode=data.get("mode"), duration_s=data.get("duration_s"), app_rate_bps=data.get("app_rate_bps"),
        blocked_ns_total=data.get("blocked_ns_total"), late_blocks=data.get("late_blocks"),
        drained=data.get("drained"), eof=data.get("eof"), partial_block=data.get("partial_block"), raw=data)


def read_summary(path: Path) -> LatencySummary:
    """A missing or unreadable file is a LatencySummary with ``error`` set (the tool died
    before writing it), so a caller reports one line instead of a traceback."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        return LatencySummary(role="?", error=f"no latency summary {path.name}: {e}")
    if not isinstance(data, dict):
        raise LatencyFormatError(f"{path}: not a JSON object")
    try:
        return parse_summary(data)
    except LatencyFormatError as e:
        raise LatencyFormatError(f"{path}: {e}") from None
