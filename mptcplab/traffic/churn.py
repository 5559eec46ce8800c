"""Kind ``churn``: many short MPTCP (or TCP) connections at a rate or a count, by the
project's own client and echo server (traffic/churn_tool.py, stdlib only, run with the
engine's Python by path). The client reports what it completed; SYN -> SYN/ACK latency
of every connection and its MPTCP proof come from the capture (traffic/connections.py)."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..units import parse_size
from .base import KindContext, Outcome, TrafficKind
from .churn_result import ChurnMetrics
from .churn_schema import ChurnFlow

TOOL = Path(__file__).with_name("churn_tool.py")


def _tool() -> list[str]:
    # -I: isolated, so nothing from the node's working directory or environment is imported
    return [sys.executable, "-I", str(TOOL)]


class ChurnKind(TrafficKind[ChurnFlow]):
    name = "churn"
    capture_analysis = "connections"
    result_field = "churn"

    def progress(self, report: Mapping[str, Any]) -> str | None:
        # a churn has no goodput: how many connections it made instead
        m = ChurnMetrics.model_validate(report)
        if m.attempted is None:
            return None
        return (f"{m.completed or 0:,} of {m.attempted:,} connections"
                + (f" ({m.rate_per_s:.0f}/s)" if m.rate_per_s else ""))

    def server_argv(self, flow: ChurnFlow, name: str, ctx: KindContext) -> tuple[str, ...]:
        return (*_tool(), "server", "--address", str(ctx.net.address(flow.server_address)),
                "--port", str(flow.port), *(["--mptcp"] if flow.mptcp else []))

    def client_argv(self, flow: ChurnFlow, name: str, ctx: KindContext) -> tuple[str, ...]:
        argv = [*_tool(), "client", "--address", str(ctx.net.address(flow.server_address)),
                "--port", str(flow.port), "--size", str(parse_size(flow.size)), "--duration", f"{ctx.duration_s:g}"]
        if flow.rate is not None:
            argv += ["--rate", f"{flow.rate:g}"]
        if flow.count is not None:
            argv += ["--count", str(flow.count)]
        if flow.bind:
            argv += ["--bind", str(ctx.net.address(flow.bind))]
        if flow.mptcp:
            argv += ["--mptcp"]
        return tuple(argv)

    def read(self, path: Path) -> Outcome:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            return Outcome(error=f"no churn client report: {e}")
        completed = int(data.get("completed", 0))
        return Outcome(
            seconds=data.get("seconds"),
            error=None if completed else f"no connection completed ({data.get('errors') or 'no attempt'})",
            metrics={k: data.get(k) for k in ("attempted", "completed", "failed", "rate_per_s",
                                              "connect_ms_p50", "connect_ms_p99", "errors")},
        )


#: the kind this module runs (traffic/kinds.py finds it by the module's name)
KIND = ChurnKind()
