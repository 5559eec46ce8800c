"""The interface every traffic kind implements, and what the run gives it.

A kind turns one flow of experiment.yml into commands (server, client, a readiness
check) and reads the client's output back into an ``Outcome``. It generates; it never
executes: the Traffic step (steps/traffic.py) runs the commands, so ``--dry-run`` prints the same
argv the run executes. Adding a kind: docs/architecture.md, "How to add a traffic kind".
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, Literal, TypeVar

from ..commands import Cmd, cmd
from ..lab.network import Network
from ..values.flowbase import FlowBase

F = TypeVar("F", bound=FlowBase)

#: How the capture is read for a flow of this kind (traffic/flowresult.py):
#: "connection": the one data connection, analysis.analyze_flow (bulk transfers);
#: "connections": every connection to the server port, each checked for MPTCP (http, churn);
#: "none": no TCP connection to prove (UDP).
CaptureAnalysis = Literal["connection", "connections", "none"]


@dataclass(frozen=True)
class KindContext:
    """What the run knows when it builds a flow's commands."""

    net: Network
    duration_s: float
    #: the node's iperf3 has -m (None: ask the host's; only iperf3 kinds use it)
    multipath: bool | None = None
    #: the repetition directory (files a kind needs, e.g. the web server's documents)
    workdir: Path = Path(".")


@dataclass
class Outcome:
    """A client's result. ``goodput_mbps``: what the receiver counted, None when the
    kind has no such number. ``metrics``: the kind's own numbers (docs/results-format.md)."""

    goodput_mbps: float | None = None
    sender_mbps: float | None = None
    retransmits: int | None = None
    seconds: float | None = None
    cpu_host: float | None = None
    cpu_remote: float | None = None
    error: str | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    #: bytes the client's completed report intervals counted: evidence that data went out
    #: even when an error left no end summary (a server killed mid-transfer)
    interval_bytes: int | None = None
    #: (code, message) of what the kind's own output shows went otherwise than the lab
    #: asked, short of an error (a buffer the kernel did not give as requested)
    notes: list[tuple[str, str]] = field(default_factory=list)


class TrafficKind(ABC, Generic[F]):
    """One kind of traffic. Subclasses set ``name`` (the ``kind:`` value) and
    ``capture_analysis``, and implement the argv builders and the parser."""

    name: ClassVar[str]
    capture_analysis: ClassVar[CaptureAnalysis]
    #: the client's output file suffix (output_name)
    output_suffix: ClassVar[str] = ".json"
    #: which side of the run asks the node's iperf3 for -m (iperf3-based kinds)
    uses_iperf3: ClassVar[bool] = False
    #: the FlowResult field (record/model/repetition.py) that holds ``Outcome.metrics``; None:
    #: the kind's numbers are FlowResult's own (goodput, retransmits). traffic/flowresult.py reads
    #: this instead of a list of kinds, so a new kind's numbers cannot be dropped silently.
    result_field: ClassVar[str | None] = None

    @abstractmethod
    def server_argv(self, flow: F, name: str, ctx: KindContext) -> tuple[str, ...]: ...

    @abstractmethod
    def client_argv(self, flow: F, name: str, ctx: KindContext) -> tuple[str, ...]: ...

    #: programs it runs -> the Debian package that has them (preflight checks them)
    tools: ClassVar[dict[str, str]] = {}
    #: the server exits by itself when its client is done (iperf3 -1); others get SIGTERM
    server_exits: ClassVar[bool] = False
    #: a background flow (hold): its client starts before every other flow, which wait until
    #: ``client_ready`` says it is ready, and is stopped (SIGINT) when they have ended
    background: ClassVar[bool] = False
    #: client errors that say the test never started: its control exchange broke before any
    #: data was sent. Nothing was measured, so the runner measures the repetition again, once
    #: (runner.measure_repetition), and says so in the repetition's warnings.
    setup_errors: ClassVar[tuple[str, ...]] = ()

    def setup_failure(self, outcome: Outcome) -> str | None:
        """The client's error when it is one of ``setup_errors`` and no data was counted."""
        if outcome.interval_bytes:
            return None  # data went out before the error: a transfer that failed, not one never started
        if outcome.error and not outcome.goodput_mbps and any(e in outcome.error for e in self.setup_errors):
            return outcome.error
        return None

    def host_problem(self) -> str | None:
        """What this host lacks to run the kind beyond ``tools`` (a program the project
        builds itself), as one line; None when nothing. Preflight asks it."""
        return None

    def progress(self, report: Mapping[str, Any]) -> str | None:
        """The progress line's number for a repetition whose primary flow is of this kind,
        from the kind's report as the record keeps it (the flow's ``result_field``), when
        the goodput is not the flow's number (churn: connections made); None: the goodput."""
        return None

    @property
    def error_code(self) -> str:
        """The warning code of the client's reported error (docs/results-format.md)."""
        return f"{self.name}-error"

    def stopped_outcome(self, flow: F, name: str, outcome: Outcome, client_out: Path, rep_dir: Path) -> Outcome:
        """The Outcome of a client the run stopped (SIGINT), when the kind can count better
        than the interrupted client did (iperf3: the server's report); unchanged by default."""
        return outcome

    def proves_nothing(self, flow: F) -> bool:
        """The flow asks for nothing a capture could prove (a hold of 0 connections): the
        analysis records it unverifiable instead of warning that no connection was seen."""
        return False

    def ready_cmd(self, flow: F) -> Cmd:
        """A command whose non-empty output says the server listens (repeated until it does)."""
        return cmd("ss", "-Hltn", f"sport = :{flow.port}", node=flow.server, check=False)

    def client_ready_cmd(self, flow: F) -> Cmd | None:
        """A background flow's readiness command (polled until ``client_ready`` accepts its
        output); None: ready once started."""
        return None

    def client_ready(self, flow: F, stdout: str) -> bool:
        """Whether ``client_ready_cmd``'s output says the background client is ready."""
        return True

    def prepare(self, flow: F, name: str, ctx: KindContext) -> None:  # noqa: B027 - optional hook
        """Files the server needs before it starts (run only, not in the dry run)."""

    def server_output_name(self, name: str) -> str:
        """The server's stdout file in the repetition directory."""
        return f"{self.name}-server-{name}.log"

    def output_name(self, name: str, primary: bool) -> str:
        """The client's stdout file in the repetition directory."""
        return f"{self.name}-{name}{self.output_suffix}"

    @abstractmethod
    def read(self, path: Path) -> Outcome:
        """The client's output file -> its Outcome (an error Outcome when unreadable)."""


@dataclass
class ClientRun:
    """A flow's client as the traffic step left it: where its report is, how it ended, and
    how its server did. The repetition's analysis (run/record.py) reads it."""

    #: its report (the kind's parser reads it)
    path: Path
    #: time.time() when it was spawned
    started: float
    kind: str
    rc: int | None = None
    #: stopped by the run (a flow_stop event, the end of a background flow), not ended by itself
    stopped: bool = False
    #: the server's exit status when the run did not stop it (a crash shows here); None: stopped
    server_rc: int | None = None
