"""Kind ``hold``: N established connections, opened before the other flows start and held
open, idle, until they have ended. The NSDI 2012 paper's Fig 10 times connection setup at a
server that already has 0, 100 or 1000 established MPTCP connections (labs/setup).

The server is churn's echo server, the client churn_tool.py's ``hold`` mode. A hold flow is
a *background* flow (TrafficKind.background): the Traffic step starts it first, waits until
the server's ``ss`` counts all N connections established (MPTCP sockets, ``ss -M``, for an
MPTCP flow: the server's own view, not the client's word), starts the other flows, and stops
it (SIGINT: the client closes them and reports) when they are done. Every held connection
is proven MPTCP from the capture like churn's (capture analysis ``connections``).
"""

from __future__ import annotations

import json
from pathlib import Path

from ..commands import Cmd, cmd
from .base import KindContext, Outcome, TrafficKind
from .churn import _tool
from .hold_schema import HoldFlow


class HoldKind(TrafficKind[HoldFlow]):
    name = "hold"
    capture_analysis = "connections"
    result_field = "hold"
    background = True

    def proves_nothing(self, flow: HoldFlow) -> bool:
        # a hold of 0 connections (labs/setup's 0-held scenarios) opens nothing to check
        return flow.connections == 0

    def server_argv(self, flow: HoldFlow, name: str, ctx: KindContext) -> tuple[str, ...]:
        return (*_tool(), "server", "--address", str(ctx.net.address(flow.server_address)),
                "--port", str(flow.port), *(["--mptcp"] if flow.mptcp else []))

    def client_argv(self, flow: HoldFlow, name: str, ctx: KindContext) -> tuple[str, ...]:
        argv = [*_tool(), "hold", "--address", str(ctx.net.address(flow.server_address)),
                "--port", str(flow.port), "--count", str(flow.connections)]
        if flow.bind:
            argv += ["--bind", str(ctx.net.address(flow.bind))]
        if flow.mptcp:
            argv += ["--mptcp"]
        return tuple(argv)

    def client_ready_cmd(self, flow: HoldFlow) -> Cmd:
        # -M lists MPTCP sockets (one per connection), -t TCP sockets
        return cmd("ss", "-Hn", "-M" if flow.mptcp else "-t", "state", "established", f"( sport = :{flow.port} )",
                   node=flow.server, check=False)

    def client_ready(self, flow: HoldFlow, stdout: str) -> bool:
        return sum(1 for line in stdout.splitlines() if line.strip()) >= flow.connections

    def read(self, path: Path) -> Outcome:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            return Outcome(error=f"no hold client report: {e}")
        held, requested = int(data.get("held", 0)), int(data.get("requested", 0))
        return Outcome(
            seconds=data.get("seconds"),
            error=None if held == requested and "requested" in data else f"held {held} of {requested} connections "
                                                           f"({data.get('errors') or 'no error reported'})",
            metrics={k: data.get(k) for k in ("requested", "held", "failed", "open_s", "errors")},
        )


#: the kind this module runs (traffic/kinds.py finds it by the module's name)
KIND = HoldKind()
