"""A repetition's record (rep.json): its flows, fairness, captures, CPU time."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ConfigDict, Field, PrivateAttr

from ... import plugins
from ...values.types import Lenient
from .base import Warning
from .connections import ConnectionsCheck
from .flow import Flow, FlowOutcome, Subflow

# the kinds' result models are plug-ins (mptcplab/plugins.py): the code sees the outcome every
# kind has and reads a kind's own numbers with FlowOutcome.metrics_of(ItsModel)
if TYPE_CHECKING:
    _Outcome = FlowOutcome
else:
    class _Outcome(plugins.registry("traffic results").KindResults, FlowOutcome):
        """The outcome, then the kinds' numbers (fields follow the bases, the last first)."""


class FlowResult(_Outcome):
    """One flow of a repetition, analyzed on its own (``flows`` of a Repetition): its outcome
    (FlowOutcome), its kind's own numbers (traffic/results.py) and, for the kinds that open
    many connections, the capture's check of them."""

    connections: ConnectionsCheck | None = None


class Fairness(Lenient):
    """Across the measured flows of one repetition (traffic/fairness.py)."""

    flows: int = 0
    jain_index: float | None = None
    shares: dict[str, float | None] = Field(default_factory=dict)


class CaptureStats(Lenient):
    """One capture point's tcpdump counters (capture.parse_tcpdump_stats); ``died``: the exit
    status of a capture that did not end as the run stopped it (the capture is incomplete)."""

    captured: int | None = None
    received: int | None = None
    dropped: int | None = None
    died: int | None = None


class CpuTime(Lenient):
    """Milliseconds one CPU (or all CPUs, summed) spent in each of /proc/stat's states over an
    interval; the kernel counts in ticks (1/USER_HZ s: 10 ms at USER_HZ 100), so each is a
    multiple of ``HostCpu.tick_ms``."""

    #: user + nice + system
    busy_ms: float = 0.0
    idle_ms: float = 0.0
    iowait_ms: float = 0.0
    #: 0 on a kernel without CONFIG_IRQ_TIME_ACCOUNTING (hard-interrupt time is then in the others)
    irq_ms: float = 0.0
    softirq_ms: float = 0.0
    #: time the hypervisor ran something else while this guest's vCPU wanted to run
    steal_ms: float = 0.0


class HostCpu(Lenient):
    """The host's CPU accounting over a repetition's traffic (probes/hostcpu.py): /proc/stat
    and /proc/pressure/cpu read right before and right after it, so a delay line's stall can
    be set against what the hypervisor took (steal) and what the kernel did meanwhile."""

    interval_s: float
    #: the interval's ends on CLOCK_MONOTONIC in ms: the clock of the delay lines' ``stalls`` log
    start_ms: float | None = None
    end_ms: float | None = None
    #: per-CPU lines read in both snapshots
    cpus: int = 0
    #: the counters' resolution per CPU (1000 / USER_HZ)
    tick_ms: float = 10.0
    #: the ``cpu`` line: all CPUs summed
    total: CpuTime = Field(default_factory=CpuTime)
    #: ``cpu0``, ``cpu1``, ... -> that CPU's share
    per_cpu: dict[str, CpuTime] = Field(default_factory=dict)
    #: /proc/pressure/cpu ``some`` total's delta: microseconds in which at least one runnable
    #: task waited for a CPU; None without PSI
    psi_cpu_some_us: int | None = None

    @property
    def steal_share(self) -> float | None:
        """The stolen share of the CPUs' time in the interval (None: no interval or CPUs)."""
        capacity_ms = self.interval_s * 1000 * self.cpus
        return self.total.steal_ms / capacity_ms if capacity_ms > 0 else None


class Repetition(Flow):
    """One repetition of one scenario: the record runner.analyze() builds, rep.json.

    Format 1 keeps the (primary) measured flow's fields at the top level (as the runner
    writes them); ``flows`` holds every flow analyzed on its own (the first measured one is
    the top level's), ``fairness`` Jain's index and shares across the measured flows;
    ``other_flows_goodput_mbps`` is kept for readers of the earlier records.
    """

    # runner-specific extras (firewall, middlebox, probes, ...) stay readable
    model_config = ConfigDict(extra="allow", populate_by_name=True)

    name: str
    rep: int = 1
    dir: str | None = None
    sweep: Any = None
    warnings: list[Warning] = Field(default_factory=list)
    calibration_ok: bool | None = None
    other_flows_goodput_mbps: dict[str, float | None] = Field(default_factory=dict)
    analysis_seconds: float | None = None
    packets: int | None = None
    flows: list[FlowResult] = Field(default_factory=list)
    fairness: Fairness | None = None
    # The run's own evidence about itself; None: a record written before the key.
    #: capture point ("node:iface") -> its counters
    capture_stats: dict[str, CaptureStats] | None = None
    #: delay line daemon name -> the stats it wrote on SIGTERM (None: it wrote none)
    delay_line_stats: dict[str, dict[str, Any] | None] | None = None
    #: the other daemons (rewriting middleboxes), same shape
    daemon_stats: dict[str, dict[str, Any] | None] | None = None
    #: flow -> exit status of a traffic server that died before the run stopped it
    servers_died: dict[str, int] | None = None
    #: the host's CPU accounting over the traffic (steal, softirq, PSI); None: not recorded
    host_cpu: HostCpu | None = None
    #: the run directory this record was read from or is written into (never serialized):
    #: what ``dir``, relative to it, is resolved against by files_dir()
    _run_dir: Path | None = PrivateAttr(default=None)

    def at_run_dir(self, run_dir: str | Path | None) -> Repetition:
        """This record, knowing its run directory (load_summary and the run set it)."""
        self._run_dir = Path(run_dir) if run_dir is not None else None
        return self

    def files_dir(self) -> Path | None:
        """The repetition's directory on disk (timeseries.csv, events.csv, probes/), for a
        metric that reads its files; None when the record does not know where its run is
        (the metric then has no value)."""
        if self._run_dir is not None:
            return self._run_dir / self.rel_dir()  # an absolute dir (a merged campaign's) wins
        return Path(self.dir) if self.dir and Path(self.dir).is_absolute() else None

    @property
    def flow(self) -> Flow:
        return Flow.model_validate(self.model_dump(include=set(Flow.model_fields)))

    def warning_codes(self) -> set[str]:
        return {w.code for w in self.warnings}

    def subflows_on(self, path: str | None) -> list[Subflow]:
        return [s for s in self.subflows if path is None or s.path == path]

    def rel_dir(self) -> str:
        return self.dir or f"scenarios/{self.name}/rep{self.rep}"
