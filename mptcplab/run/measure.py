"""One repetition measured, from deploy to teardown (RepRunner), and what it hands to the
analysis (AnalysisJob, Measured). Each repetition gets its own network (deploy takes well under
a second), so no PMTU exception, TCP metric or MPTCP state leaks from one to the next."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..lab.model import ScenarioRun
from ..lab.network import Network
from ..lab.schema import ExperimentBody
from ..net.plan import build_plan
from ..record.model import LinkCalibration
from ..steps.base import Rep, RunContext
from ..steps.flows import measured_flows
from ..supervise import Supervisor
from ..traffic.base import ClientRun
from .sequence import Teardown, measurement_steps


@dataclass
class AnalysisJob:
    """Everything the analysis of one measured repetition needs (picklable: it runs
    in a worker process while the next repetition is measured)."""

    scenario: str
    rep: int
    sweep_point: dict[str, Any]
    out: Path
    body: ExperimentBody
    net: Network
    measured: str
    clients: dict[str, ClientRun]
    calibration: list[LinkCalibration]
    extra: dict[str, Any]
    #: the steps' and the runner's coded warnings (dicts, warncodes.coded); a plain string reads as
    #: unclassified
    warnings: list[str | dict[str, Any]]
    workers: int | None = None


@dataclass
class Measured:
    """A repetition whose network is gone and whose captures wait for analysis."""

    job: AnalysisJob
    sysctls: dict[str, dict[str, str]]
    seconds: float


class RepRunner:
    """One repetition of one scenario, from deploy to teardown: the steps of
    run/sequence.py in order, teardown on every exit path. Analysis comes after (analyze)."""

    def __init__(self, ctx: RunContext, scenario: ScenarioRun, rep: int, outdir: Path) -> None:
        self.ctx = ctx
        self.sc = scenario
        self.rep = rep
        self.out = outdir

    def measure(self) -> Measured:
        """Deploy, check links, capture, run traffic, tear down. No analysis."""
        t0 = time.monotonic()
        self.out.mkdir(parents=True, exist_ok=False)
        cmdlog = (self.out / "commands.log").open("w", buffering=1)  # line-buffered: a kill keeps the log
        try:
            backend = self.ctx.make_backend(lambda line: print(line, file=cmdlog))
            plan = build_plan(self.ctx.lab.topology, self.sc, self.ctx.emulator, backend, self.out,
                              file=str(self.ctx.lab.path / "experiment.yml"))
            rep = Rep(self.ctx, self.sc, self.out, backend, plan, Supervisor(backend.node_argv, logdir=self.out))
            try:
                for step in measurement_steps():
                    step.run(rep)
            finally:
                Teardown().run(rep)
        finally:
            cmdlog.close()
        measured_name = measured_flows(self.sc.body)[0]  # the primary one: the record's top level
        job = AnalysisJob(self.sc.name, self.rep, self.sc.sweep_point, self.out, self.sc.body, plan.net,
                          measured_name, rep.traffic.clients, rep.calibration, rep.extra, list(rep.warnings))
        return Measured(job, rep.sysctls, time.monotonic() - t0)
