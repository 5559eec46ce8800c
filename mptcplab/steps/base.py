"""The step framework: what the steps of one repetition share (RunContext for the run,
Rep for the repetition), the commands a step plans (Planned), the Step interface
(``commands()`` for the dry run, ``run()`` for execution), and the small helpers several
steps use (waiting for a condition, the dry run's rendering).

It imports no step and nothing that builds on steps at run time, so every package of steps
(cc, probes, timeline, and this one) can import it at the top.
"""

from __future__ import annotations

import shlex
import subprocess
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..commands import Cmd
from ..warncodes import coded

if TYPE_CHECKING:
    from ..backends.base import Backend
    from ..emulation.base import Emulator
    from ..lab.model import Lab, ScenarioRun
    from ..lab.schema import ExperimentBody
    from ..linkcheck import Check
    from ..net.plan import Plan
    from ..progress import TrafficProgress
    from ..record.model import LinkCalibration
    from ..supervise import Supervisor
    from ..traffic.base import ClientRun
    from ..traffic.control import FlowControl


# An upper bound on waiting for a server or a capture to be ready, not a delay: each probe
# is a command in the node (a `docker exec` on containerlab), which under a software-emulated
# CPU takes seconds, and 5 s timed out there (make test-vm, iperf3 in a container).
READY_TIMEOUT_S = 30.0


def _default_backend(log: Callable[[str], None]) -> Backend:
    from .. import backends

    return backends.default()(log=log)


@dataclass
class RunContext:
    lab: Lab
    emulator: Emulator
    quick: bool
    log: Callable[[str], None] = print
    calibrate: bool = True
    #: rate checks already made in this run, by (link, direction, shape, mtu): a link configured
    #: identically in several scenarios is rate-checked once (RTT is checked every time)
    rate_cache: dict[tuple[str, str, str, int], Check] = field(default_factory=dict)
    #: trace replay checks already made in this run, by tracecheck.ReplayCheck.key (trace,
    #: delay, MTU, queue, span): each is a flood on a throwaway line, made once per run
    trace_cache: dict[tuple[object, ...], list[Check]] = field(default_factory=dict)
    #: the backend of each repetition, given the command-log writer
    make_backend: Callable[[Callable[[str], None]], Backend] = _default_backend
    #: told when a repetition's traffic starts and ends (the live status line; None: nobody)
    progress: TrafficProgress | None = None


class RepProbe(Protocol):
    """A probe as the probe steps drive it (probes/step.py; probes/base.Probe is one):
    declared here because the framework imports none of the packages that build on it."""

    @property
    def name(self) -> str: ...

    #: the folder of the repetition's directory it writes into ("": the directory itself)
    @property
    def artifacts_dir(self) -> str: ...

    def commands(self, rep: Rep) -> list[Planned]: ...

    def start(self, rep: Rep) -> None: ...

    def stop(self, rep: Rep) -> None: ...

    def close(self) -> None: ...


class RepTimeline(Protocol):
    """The running timeline (timeline/step.TimelineState): finish() stops its scheduler and
    controllers and writes events.csv, once, returning what ran."""

    def finish(self, out: Path) -> Sequence[object]: ...


class _Named(Protocol):
    @property
    def name(self) -> str: ...


class RepHold(Protocol):
    """An engine congestion control the repetition holds (cc/holds.Hold), released at teardown."""

    @property
    def cc(self) -> _Named: ...

    @property
    def registered_here(self) -> bool: ...


@dataclass
class TrafficState:
    """What the traffic step starts and the timeline and probes read while it runs."""

    clients: dict[str, ClientRun] = field(default_factory=dict)
    servers: dict[str, tuple[subprocess.Popen[bytes], Path]] = field(default_factory=dict)
    #: node -> whether its iperf3 has --multipath (asked once)
    multipath: dict[str, bool] = field(default_factory=dict)
    #: time.time() when the (first) measured flow's client was spawned, or its connection seen
    #: ESTABLISHED (``traffic.timeline_zero: connection``): the timeline's zero, on the capture
    #: clock (docs/results-format.md, events.csv); t_zero_event is set at that moment
    t_zero: float | None = None
    t_zero_event: threading.Event = field(default_factory=threading.Event)
    #: start(name) / stop(name) of named flows, set by the Traffic step (traffic/control.py)
    flow_control: FlowControl | None = None


@dataclass
class Rep:
    """What the steps of one repetition share: inputs, and what they found."""

    ctx: RunContext
    sc: ScenarioRun
    out: Path
    backend: Backend
    plan: Plan
    supervisor: Supervisor | None = None  # None in a dry run
    #: coded warnings (warncodes.coded; rep.warn adds one); plain strings read as unclassified
    warnings: list[str | dict[str, Any]] = field(default_factory=list)
    #: each impaired link's checks in this repetition (steps/links.py; manifest.json ``calibration``)
    calibration: list[LinkCalibration] = field(default_factory=list)
    sysctls: dict[str, dict[str, str]] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    #: the flows' servers and clients, and the timeline's zero (the traffic step's)
    traffic: TrafficState = field(default_factory=TrafficState)
    #: the probes of this repetition (probes/step.py builds them: probes/base.Probe), started
    #: before traffic; typed by the protocols above, like timeline and cc_holds: the framework
    #: imports none of the packages that build on it
    probes: list[RepProbe] = field(default_factory=list)
    #: the running timeline (timeline/step.py), and what teardown must stop first
    timeline: RepTimeline | None = None
    on_teardown: list[Callable[[], object]] = field(default_factory=list)
    #: engine congestion controls this repetition holds (cc/holds.py), released at teardown
    cc_holds: list[RepHold] = field(default_factory=list)

    @property
    def body(self) -> ExperimentBody:
        return self.sc.body

    @property
    def running(self) -> Supervisor:
        assert self.supervisor is not None, "a dry run executes no step"
        return self.supervisor

    def warn(self, code: str, message: str, path: str | None = None) -> None:
        """A coded warning of this repetition (warncodes.py names the codes)."""
        self.warnings.append(coded(code, message, path))


@dataclass(frozen=True)
class Planned:
    """One command a step runs: in the background (``&``) or to completion; ``note``
    is printed beside it by the dry run; ``stage`` heads a group of commands."""

    cmd: Cmd
    background: bool = False
    note: str = ""
    stage: str = ""
    #: done by the runner itself, not by a process (a tracefs file write): the dry run
    #: prints it as a comment, the command log has no line for it
    in_process: bool = False


class Step(ABC):
    title: str

    @abstractmethod
    def commands(self, rep: Rep) -> list[Planned]:
        """Every command run() will run, in order (a command repeated until a
        condition holds appears once, with a note)."""

    @abstractmethod
    def run(self, rep: Rep) -> None: ...


def wait_for(pred: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.02)
    raise RuntimeError(f"timed out after {timeout:g} s waiting for {what}")


def answers(backend: Backend, c: Cmd) -> bool:
    """Whether a readiness command printed anything (a listening socket, a ready client)."""
    return bool(backend.run([c])[0].stdout.strip())


#: the dry run's note beside a readiness command the run repeats
UNTIL_READY = "repeated until it answers"


def render(rep: Rep, steps: list[Step]) -> list[str]:
    """The dry run's lines for these steps: the exact host command of each, ``&`` for
    background ones, notes as comments."""
    lines: list[str] = []
    for step in steps:
        lines.append(f"# step: {step.title}")
        stage = ""
        for p in step.commands(rep):
            if p.stage and p.stage != stage:
                stage = p.stage
                lines.append(f"#   {stage}")
            line = rep.backend.render(p.cmd) + (" &" if p.background else "")
            if p.in_process:
                line = f"#   (runner) {shlex.join(p.cmd.argv)}" + (" &" if p.background else "")
            lines.append(line + (f"    # {p.note}" if p.note else ""))
    return lines


def waited(p: subprocess.Popen[bytes], timeout: float = 5) -> bool:
    """Whether ``p`` exited within ``timeout`` seconds."""
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return False
    return True
