"""Kind ``latency``: the project's application-latency tool (native/latency,
mptcplab/tools/latency): the client writes timestamped blocks over one MPTCP (or TCP)
connection, back to back or at an application rate, with its send buffer set (and so
locked) where the lab asks; the server records when each block completed. The result is
the per-block delay distribution, the time the sender was blocked in send, the buffers
the kernel really gave (read back with getsockopt) and the receiver's goodput.

A buffer the lab sets is forced (SO_SNDBUFFORCE/SO_RCVBUFFORCE: the engine runs as root),
so it does not depend on the host's net.core.wmem_max/rmem_max: a qemu guest's default
212992 would otherwise cap a 512 KiB request to 416 KiB, silently. A buffer read back
below the kernel's double of the request is a warning (``buffer-not-as-requested``).

Files of a flow ``<name>`` in the repetition directory (docs/results-format.md):
``latency-<name>.{server,client}.json`` (the tool's summaries), ``latency-<name>.{recv,send}.bin``
(its binary per-block records), ``latency-<name>.csv`` (one row per received block,
written by the analysis) and the client's stdout ``latency-<name>.client.out``.
The data connection is proved MPTCP from the capture like iperf3's (``connection``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ..errors import HostNotReady
from ..tools.latency import LatencyFiles, LatencyParams, analyze, expected_locked_buffer, latency_binary
from ..tools.latency import client_argv as tool_client_argv
from ..tools.latency import server_argv as tool_server_argv
from ..tools.latency.read import BufferReadback, LatencySummary
from ..units import parse_rate, parse_size
from .base import KindContext, Outcome, TrafficKind
from .latency_schema import LatencyFlow

PREFIX = "latency-"
CLIENT_OUT = ".client.out"
#: the per-block table the analysis writes (docs/results-format.md)
BLOCK_COLUMNS = ["seq", "t_write_ns", "t_recv_ns", "delay_ms", "sched_delay_ms", "blocked_ms", "write_ms", "late_ms"]


def files(workdir: Path, name: str) -> LatencyFiles:
    return LatencyFiles.in_dir(workdir, f"{PREFIX}{name}")


def table_path(workdir: Path, name: str) -> Path:
    return workdir / f"{PREFIX}{name}.csv"


def params(flow: LatencyFlow, ctx: KindContext) -> LatencyParams:
    """The flow as the tool's parameters (addresses resolved in the lab's network)."""
    return LatencyParams(
        server_address=str(ctx.net.address(flow.server_address)), port=flow.port, mptcp=flow.mptcp,
        bind=str(ctx.net.address(flow.bind)) if flow.bind else None, block_bytes=parse_size(flow.block),
        duration_s=ctx.duration_s, rate_bps=float(parse_rate(flow.rate)) if flow.rate is not None else None,
        rate_blocks_per_s=flow.blocks_per_s,
        sndbuf=parse_size(flow.sndbuf) if flow.sndbuf is not None else None,
        rcvbuf=parse_size(flow.rcvbuf) if flow.rcvbuf is not None else None, cc=flow.cc,
        force_buffers=flow.sndbuf is not None or flow.rcvbuf is not None)


def buffer_notes(client: LatencySummary, server: LatencySummary) -> list[tuple[str, str]]:
    """The buffers the lab set, each read back right after setsockopt: anything below the
    kernel's double of the request means it was capped (not forced, or a kernel limit)."""
    out = []
    ends: list[tuple[str, str, BufferReadback | None]] = [
        ("client", "SO_SNDBUF", client.sndbuf), ("server", "SO_RCVBUF", server.rcvbuf)]
    for end, opt, rb in ends:
        if rb is None or rb.requested is None:
            continue
        want = expected_locked_buffer(rb.requested, cap=rb.requested, forced=True)
        if rb.after_setsockopt < want:
            how = "forced" if rb.forced else "capped by net.core." + ("wmem_max" if opt == "SO_SNDBUF" else "rmem_max")
            out.append(("buffer-not-as-requested",
                        f"the {end}'s {opt} of {rb.requested} bytes reads back as {rb.after_setsockopt}, "
                        f"not {want} ({how}): the flow did not run with the buffer the lab set"))
    return out


def _finite(v: float | None, digits: int = 3) -> float | None:
    return None if v is None or not math.isfinite(v) else round(float(v), digits)


class LatencyKind(TrafficKind[LatencyFlow]):
    name = "latency"
    capture_analysis = "connection"
    result_field = "latency"
    output_suffix = CLIENT_OUT
    # the server accepts one connection and exits after the client's end of data
    server_exits = True

    def server_argv(self, flow: LatencyFlow, name: str, ctx: KindContext) -> tuple[str, ...]:
        return tool_server_argv(params(flow, ctx), files(ctx.workdir, name))

    def client_argv(self, flow: LatencyFlow, name: str, ctx: KindContext) -> tuple[str, ...]:
        return tool_client_argv(params(flow, ctx), files(ctx.workdir, name))

    def output_name(self, name: str, primary: bool) -> str:
        return f"{PREFIX}{name}{CLIENT_OUT}"

    def host_problem(self) -> str | None:
        try:
            latency_binary(must_exist=True)
        except HostNotReady as e:  # its one line names the path and the make command
            return str(e)
        return None

    def read(self, path: Path) -> Outcome:
        name = path.name.removeprefix(PREFIX).removesuffix(CLIENT_OUT)
        fs = files(path.parent, name)
        try:
            r = analyze(fs)
        except ValueError as e:  # LatencyFormatError: a file that is not the tool's
            return Outcome(error=f"latency output unreadable: {e}")
        r.blocks.reindex(columns=BLOCK_COLUMNS).to_csv(table_path(path.parent, name), index=False)
        client, server = r.client, r.server
        error = "; ".join(r.errors) or None
        if error is None and r.delay.blocks == 0:
            error = "no block arrived"
        span = client.duration_s
        metrics: dict[str, Any] = {
            "blocks": r.delay.blocks, "blocks_sent": client.blocks,
            "block_bytes": int(client.raw.get("block_bytes", 0)) or None,
            "min_ms": _finite(r.delay.min_ms), "mean_ms": _finite(r.delay.mean_ms), "p50_ms": _finite(r.delay.p50_ms),
            "p95_ms": _finite(r.delay.p95_ms), "p99_ms": _finite(r.delay.p99_ms), "max_ms": _finite(r.delay.max_ms),
            "sndbuf_requested": client.sndbuf.requested if client.sndbuf else None,
            "sndbuf_effective": client.sndbuf.at_end if client.sndbuf else None,
            "rcvbuf_requested": server.rcvbuf.requested if server.rcvbuf else None,
            "rcvbuf_effective": server.rcvbuf.at_end if server.rcvbuf else None,
            "blocked_s": _finite(r.blocked.total_s, 6), "blocked_share": _finite(r.blocked.share, 4),
            "blocked_blocks": r.blocked.blocked_blocks,
            "sent_mbps": _finite(r.rate.sent_bps / 1e6), "goodput_mbps": _finite(r.rate.received_bps / 1e6),
            "mptcp_active": client.mptcp_active, "subflows": client.subflow_count,
            "cc": client.raw.get("cc"),
        }
        return Outcome(goodput_mbps=metrics["goodput_mbps"], sender_mbps=metrics["sent_mbps"],
                       seconds=span, error=error, metrics=metrics, notes=buffer_notes(client, server))


#: the kind this module runs (traffic/kinds.py finds it by the module's name)
KIND = LatencyKind()
