"""The application-latency tool (native/latency/, ``mptcplab-latency``) seen from Python.

- params.py   LatencyParams (what to run) and LatencyFiles (where the outputs go)
              -> commands(): the two Cmds (node, argv, why) for the traffic step and the dry run
              -> server_argv / client_argv: pure argument lists, so --dry-run prints them
- read.py     the binary per-block records -> DataFrames; the JSON summaries -> typed objects
- analyze.py  delay PDF in 5 ms bins, p50/p95/p99, blocked-time statistics, buffer read-back
- run.py      executing a server/client pair (tests, bench; the engine uses its own steps)
"""

from .params import LatencyFiles, LatencyParams, client_argv, commands, latency_binary, server_argv
from .read import (
    LatencyFormatError,
    LatencySummary,
    read_receiver_records,
    read_sender_records,
    read_summary,
)
from .summary import (
    BlockedStats,
    DelayStats,
    LatencyResult,
    analyze,
    blocked_stats,
    delay_pdf,
    delay_stats,
    expected_locked_buffer,
    rate_stats,
)

__all__ = [
    "BlockedStats",
    "DelayStats",
    "LatencyFiles",
    "LatencyFormatError",
    "LatencyParams",
    "LatencyResult",
    "LatencySummary",
    "analyze",
    "blocked_stats",
    "client_argv",
    "commands",
    "delay_pdf",
    "delay_stats",
    "expected_locked_buffer",
    "latency_binary",
    "rate_stats",
    "read_receiver_records",
    "read_sender_records",
    "read_summary",
    "server_argv",
]
