"""The typed result model: what a run writes (summary.json, rep.json) and what every reader
reads (report, figures, notebooks, the VM check). docs/results-format.md is its contract.

One set of classes both writes and reads a file, so a field cannot mean one thing to the
runner and another to the report. summary.json carries ``format_version``; a file without
one (written before the model existed) is read through a documented compatibility path, a
file from a newer engine is refused with one line: both in read.py, the files' only reader,
which stands above the aggregates a format-0 file needs recomputed. This module imports
nothing of the package above it, so metrics/ may type their records with it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from ..errors import LabInputError

#: Bump on any change a reader of the previous version would misread (docs/results-format.md).
FORMAT_VERSION = 1
#: Code of a warning given as plain text (the runner's warnings before they had codes).
UNCLASSIFIED = "unclassified"

TIMESERIES_COLUMNS = ["t", "path", "subflow", "bytes", "mbps"]
ICMP_COLUMNS = ["t", "src", "dst", "type", "code", "mtu", "quoted_src", "quoted_sport", "path", "icmp6"]


class ResultsFormatError(LabInputError):
    """A results file this engine cannot read: one line naming the file, the field and the
    problem; the CLI exits 2 with it, like any other bad input."""


def validation_where(e: ValidationError) -> str:
    """The first bad field of a validation error, as a dotted path (scenarios.3.mptcp): the
    field of a ResultsFormatError."""
    return ".".join(str(x) for x in e.errors()[0]["loc"])


class _Model(BaseModel):
    # Readers ignore what they do not know (a newer minor addition); the runner's extra
    # per-repetition facts (firewall counters, capture stats) are kept, see Repetition.
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class Warning(_Model):  # noqa: A001 - the model's name in docs/results-format.md
    """One problem, one line. ``code`` is stable and machine-readable (policy decides on it),
    ``message`` is for people and carries the reason; ``path`` names the path it concerns."""

    code: str = UNCLASSIFIED
    message: str
    path: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, data: Any) -> Any:
        # a plain string is today's runner warning: kept verbatim, code unknown
        return {"code": UNCLASSIFIED, "message": data} if isinstance(data, str) else data

    def __str__(self) -> str:
        return self.message


class HolNumbers(_Model):
    """Data segments at the receiver points (analysis/delivery.py): count, share of bytes out
    of data-sequence order, holes never filled, head-of-line delay percentiles (ms); of the
    connection (MptcpVerdict) or of one subflow (Subflow)."""

    hol_segments: int | None = None
    ooo_share: float | None = None
    hol_never: int | None = None
    hol_p50_ms: float | None = None
    hol_p95_ms: float | None = None
    hol_p99_ms: float | None = None
    hol_max_ms: float | None = None


class Subflow(HolNumbers):
    """One TCP subflow of the measured connection (mptcplab/analysis/model.py SubflowResult)."""

    path: str | None = None
    src: str | None = None
    sport: int | None = None
    dst: str | None = None
    dport: int | None = None
    initial: bool | None = None
    established: bool | None = None
    bytes: int | None = None
    retrans_bytes: int | None = None
    retransmissions: int | None = None
    share: float | None = None
    segments: int | None = None
    median_seg: float | None = None
    max_seg: int | None = None
    max_frame: int | None = None
    icmp_frag_needed: int = 0
    icmp_first_t: float | None = None
    icmp_mtus: list[int] = Field(default_factory=list)
    first_data_t: float | None = None
    last_data_t: float | None = None
    syn_attempts: int | None = None
    rst: bool | None = None
    #: first SYN -> first SYN without MPTCP option (the client fell back), s
    syn_fallback_s: float | None = None
    #: MP_TCPRST reason of the server side's first RST
    rst_reason: int | None = None
    #: capture point -> "addr:port" of the client side there, where a NAT made this
    #: subflow another 4-tuple (runs before 2026-11-24 17:30 UTC listed those as subflows)
    translated: dict[str, str] = Field(default_factory=dict)
    kind: str | None = None
    point: str | None = None
    acked_bytes: int | None = None
    syn_answered: bool | None = None
    #: when the receiver's cumulative ACK last advanced (s from the first SYN)
    last_ack_advance_t: float | None = None
    #: the share this path would carry at its configured rate (None: rates not configured)
    expected_share: float | None = None
    #: the lowest configured rate on this subflow's path in the data's direction, Mbit/s
    path_rate_mbps: float | None = None
    #: contributed to the transfer by the rule of analysis/contribution.py
    contributed: bool | None = None
    #: when the lab's timeline or a controller took the path out of use (s from the first
    #: SYN) and what did (analysis FlowSpec.retired_paths); None: in use to the end
    retired_t: float | None = None
    retired_by: str | None = None
    #: RTT from the capture (analysis/depth.py), ms; rtt_samples 0: none measured
    rtt_min_ms: float | None = None
    rtt_median_ms: float | None = None
    rtt_p95_ms: float | None = None
    rtt_samples: int | None = None
    #: MPTCP-level retransmissions sent on this subflow (analysis/depth.py) and their bytes
    mptcp_retransmissions: int | None = None
    mptcp_retrans_bytes: int | None = None
    #: one-way delay between two capture points on one clock (analysis/delivery.py), ms
    owd_samples: int | None = None
    owd_min_ms: float | None = None
    owd_median_ms: float | None = None
    owd_p95_ms: float | None = None
    owd_points: str | None = None
    #: reordering and head-of-line delay at this receiver point (HolNumbers' fields), ms
    hol_point: str | None = None
    #: data bytes this subflow delivered first at the receiver points, and its MPTCP-level
    #: re-sends that arrived before the first carrier's copy (analysis/usefulness.py)
    first_bytes: int | None = None
    mptcp_retrans_useful: int | None = None

    @property
    def ends(self) -> str:
        return f"{self.src}:{self.sport} -> {self.dst}:{self.dport}"


class MptcpVerdict(HolNumbers):
    #: why the HoL numbers are absent although MPTCP was negotiated (no capture at the receiver)
    hol_unavailable: str | None = None
    requested: bool = False
    negotiated: bool | None = None
    fallback: bool = False
    #: MPTCP negotiated and every expected path had an established subflow that carried data
    verified: bool = False
    subflows: int | None = None
    expected_paths: list[str] = Field(default_factory=list)
    #: MPTCP-level retransmissions of the connection (mptcp_retransmissions.csv) and bytes
    data_retransmissions: int | None = None
    data_retrans_bytes: int | None = None
    #: one-byte probes of a zero MPTCP-level window (mptcp_retransmissions.csv
    #: ``window_probe``), not counted above (None: runs before 2026-11-24 17:15 UTC)
    data_window_probes: int | None = None
    #: of data_retransmissions, those whose copy the sender had queued first on a slow
    #: subflow and sent after the other (``late_original``): data_retransmissions minus these
    #: compares with MPTcpExtMPTCPRetrans (None: runs before 2026-11-24 21:30 UTC)
    data_late_originals: int | None = None
    #: a DSS mapping carried a checksum / the handshake asked for checksums (None: not seen)
    dss_checksum: bool | None = None
    checksum_required: bool | None = None


class Flow(_Model):
    """The measured flow of a repetition: iperf3's numbers and the capture's verdict."""

    goodput_mbps: float | None = None
    sender_mbps: float | None = None
    retransmits: int | None = None
    duration_s: float | None = None
    iperf3_error: str | None = None
    cpu: dict[str, float | None] = Field(default_factory=dict)
    mptcp: MptcpVerdict = Field(default_factory=MptcpVerdict)
    subflows: list[Subflow] = Field(default_factory=list)
    add_addrs: list[str] = Field(default_factory=list)


class UdpMetrics(_Model):
    """iperf3's UDP report, as the receiver counted it."""

    packets: int | None = None
    sent_packets: int | None = None
    lost_packets: int | None = None
    lost_percent: float | None = None
    jitter_ms: float | None = None


class HttpMetrics(_Model):
    """wrk's report: requests, their rate and latency distribution."""

    requests: int | None = None
    requests_per_s: float | None = None
    latency_mean_ms: float | None = None
    latency_max_ms: float | None = None
    latency_p50_ms: float | None = None
    latency_p75_ms: float | None = None
    latency_p90_ms: float | None = None
    latency_p99_ms: float | None = None
    socket_errors: int | None = None
    non_2xx: int | None = None


class ChurnMetrics(_Model):
    """The churn client's report (the application's view)."""

    attempted: int | None = None
    completed: int | None = None
    failed: int | None = None
    rate_per_s: float | None = None
    connect_ms_p50: float | None = None
    connect_ms_p99: float | None = None
    errors: dict[str, int] = Field(default_factory=dict)


class HoldMetrics(_Model):
    """The hold client's report (traffic/hold.py): connections asked for, established and
    held until the run stopped it, and how long opening them took."""

    requested: int | None = None
    held: int | None = None
    failed: int | None = None
    open_s: float | None = None
    errors: dict[str, int] = Field(default_factory=dict)


class LatencyMetrics(_Model):
    """The latency tool's flow (traffic/latency.py): per-block delay (receive time minus the
    sender's write time, one clock) over the received blocks, in ms; the buffers as
    getsockopt read them back at the end (a locked buffer holds twice the request: the kind
    forces it past net.core.wmem_max/rmem_max); the time the sender waited for send-buffer space."""

    blocks: int = 0
    blocks_sent: int | None = None
    block_bytes: int | None = None
    min_ms: float | None = None
    mean_ms: float | None = None
    p50_ms: float | None = None
    p95_ms: float | None = None
    p99_ms: float | None = None
    max_ms: float | None = None
    sndbuf_requested: int | None = None
    sndbuf_effective: int | None = None
    rcvbuf_requested: int | None = None
    rcvbuf_effective: int | None = None
    blocked_s: float | None = None
    #: blocked_s / the sender's writing time
    blocked_share: float | None = None
    blocked_blocks: int | None = None
    sent_mbps: float | None = None
    goodput_mbps: float | None = None
    mptcp_active: bool | None = None
    #: subflows alive at the end (MPTCP_INFO), the initial one included
    subflows: int | None = None
    #: the sender socket's congestion control at the end (TCP_CONGESTION read back)
    cc: str | None = None


class ConnectionsCheck(_Model):
    """Every connection to the flow's server port in the capture (http, churn): how many
    completed their handshake (``seen``; ``unfinished`` never did and carry nothing), how
    many of those were MPTCP (MP_CAPABLE in SYN, SYN/ACK and third ACK), SYN -> SYN/ACK times."""

    connections_seen: int = 0
    connections_mptcp: int = 0
    connections_unfinished: int = 0
    #: of the completed ones: with an MP_JOIN subflow / whose initial subflow carried data on
    #: two or more capture points (striped over links); None: a run before these counts
    connections_joined: int | None = None
    connections_striped: int | None = None
    syn_synack_point: str | None = None
    syn_synack_n: int = 0
    syn_synack_ms_p50: float | None = None
    syn_synack_ms_p90: float | None = None
    #: the NSDI 2012 paper's Fig 10 reads its TCP curve at the 91st percentile (6 us)
    syn_synack_ms_p91: float | None = None
    syn_synack_ms_p99: float | None = None
    #: fraction of the timed connections answered within 6 us (the same reading)
    syn_synack_within_6us: float | None = None
    syn_synack_ms_max: float | None = None


class TransferDifference(_Model):
    """A range of a transfer where what arrived differs from what was sent."""

    offset: int
    length: int
    #: bytes in it that differ (the rest equal the stream by chance)
    differing: int
    #: the stream offset these bytes were sent at (misplaced; of the first piece when the range
    #: is several); None: found nowhere in it
    source: int | None = None
    #: of ``differing``, the bytes found elsewhere in the stream, piece by piece (0 in records
    #: written before it)
    misplaced: int = 0


class TransferMetrics(_Model):
    """The verified transfer's report (traffic/transfer.py): what was sent and received."""

    bytes: int | None = None
    received_bytes: int | None = None
    #: the bytes the flow was to send (``bytes`` of the lab file)
    size: int | None = None
    #: the run stopped the transfer at its duration limit before it ended (a stall)
    stopped: bool | None = None
    sent_sha256: str | None = None
    received_sha256: str | None = None
    #: equal, differs (same length, other content) or incomplete
    verdict: str | None = None
    connect_s: float | None = None
    seed: int | None = None
    #: the client's socket still ran MPTCP after sending (MPTCP_INFO answered)
    mptcp_socket: bool | None = None
    #: bytes where what arrived differs from the sent stream (the server's comparison;
    #: None: not compared), the ranges they make, and how many of them are not the
    #: stream's own bytes from another offset (traffic/transfer_diff.py)
    differing_bytes: int | None = None
    differences: list[TransferDifference] = []
    foreign_bytes: int | None = None


class FlowResult(Flow):
    """One flow of a repetition, analysed on its own (``flows`` of a Repetition)."""

    name: str
    kind: str = "iperf3"
    role: str = "measured"
    #: server address:port the analysis followed
    server: str | None = None
    #: the capture proves the flow: MPTCP verified (every connection MPTCP for http/churn),
    #: or for TCP the connection carried data on its expected paths; None: not provable (UDP)
    verified: bool | None = None
    #: this flow's fraction of the measured flows' summed goodput (measured flows only)
    share: float | None = None
    #: stopped by the run (flow_stop event, byte-count limit) rather than ending by itself
    stopped: bool = False
    #: a ``connection`` flow's expected, non-backup paths -> configured rate (Mbit/s; None: no
    #: rate), and Kaspar et al.'s aggregation benefit of its goodput over them
    #: (analysis/aggregation.py; None: undefined, e.g. one path or a rate unknown)
    path_capacity_mbps: dict[str, float | None] | None = None
    aggregation_benefit: float | None = None
    udp: UdpMetrics | None = None
    http: HttpMetrics | None = None
    churn: ChurnMetrics | None = None
    latency: LatencyMetrics | None = None
    hold: HoldMetrics | None = None
    transfer: TransferMetrics | None = None
    connections: ConnectionsCheck | None = None


class Fairness(_Model):
    """Across the measured flows of one repetition (traffic/fairness.py)."""

    flows: int = 0
    jain_index: float | None = None
    shares: dict[str, float | None] = Field(default_factory=dict)


class CaptureStats(_Model):
    """One capture point's tcpdump counters (capture.parse_tcpdump_stats); ``died``: the exit
    status of a capture that did not end as the run stopped it (the capture is incomplete)."""

    captured: int | None = None
    received: int | None = None
    dropped: int | None = None
    died: int | None = None


class CpuTime(_Model):
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


class HostCpu(_Model):
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
    """One repetition of one scenario: the record runner.analyse() builds, rep.json.

    Format 1 keeps the (primary) measured flow's fields at the top level (as the runner
    writes them); ``flows`` holds every flow analysed on its own (the first measured one is
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


class PathAggregate(_Model):
    """Per scenario and path, over the repetitions; definitions in mptcplab/results/aggregate.py."""

    reps: int
    share_mean_over_reps: float | None = None
    share_std_over_reps: float | None = None
    median_seg_median_over_reps: float | None = None
    max_seg_max_over_reps: float | None = None
    icmp_frag_needed_mean_over_reps: float | None = None
    icmp_frag_needed_total: int | None = None
    icmp_frag_needed_per_rep: list[int | None] = Field(default_factory=list)


class ScenarioAggregate(_Model):
    scenario: str
    n: int
    goodput_mean: float | None = None
    goodput_std: float | None = None  # None with one repetition: there is no spread
    goodput_min: float | None = None
    goodput_max: float | None = None
    mptcp_requested: bool = False
    verified_reps: int = 0
    fallback_reps: int = 0
    warning_reps: int = 0
    #: Jain's index across measured flows, mean over reps (None: one measured flow)
    jain_mean: float | None = None
    jain_std: float | None = None
    #: each measured flow's share, mean over reps
    flow_share_mean: dict[str, float | None] = Field(default_factory=dict)
    paths: dict[str, PathAggregate] = Field(default_factory=dict)


class PublishedSource(_Model):
    id: str | None = None
    title: str | None = None
    kernel: str | None = None


class PublishedRow(_Model):
    """One number of the paper next to the same aggregate on this run."""

    id: str
    scenario: str | None = None
    metric: str
    path: str | None = None
    flow: str | None = None
    #: [start, end) seconds from the measured flow's start (mptcplab/metricdecl.Select)
    window: list[float] | None = None
    paper_value: float | None = None
    unit: str | None = None
    paper_kernel: str | None = None
    where: str | None = None
    note: str | None = None
    #: this run's value of the metric's one aggregate (aggregate.METRICS), None when not run
    this_value: float | None = None
    #: which aggregate, e.g. "mean over reps", "median over reps"
    this_statistic: str | None = None
    #: standard deviation over reps, only for a mean with more than one repetition
    this_std: float | None = None
    this_n: int = 0
    this_kernel: str | None = None
    #: what this run's value compares with when the run is scaled and the metric is a rate:
    #: paper_value x the scale factor (lab/scale.py); None when the run is not scaled
    paper_value_scaled: float | None = None

    @model_validator(mode="before")
    @classmethod
    def _version0(cls, data: Any) -> Any:
        # format 0 named the value this_mean and always meant the mean over reps
        if isinstance(data, dict) and "this_mean" in data and "this_value" not in data:
            data = {**data, "this_value": data["this_mean"],
                    "this_statistic": "mean over reps" if data.get("this_mean") is not None else None}
        return data


class FindingRow(_Model):
    id: str
    scenario: str | None = None
    statement: str | None = None
    where: str | None = None
    #: True holds, False does not hold, None not measurable here (evidence says why)
    holds_here: bool | None = None
    evidence: str = ""
    #: the repetitions disagree with the verdict: it rests on a difference smaller than the
    #: run's own variation (results/findings.py)
    within_spread: bool = False

    @field_validator("evidence", mode="before")
    @classmethod
    def _none_is_empty(cls, v: Any) -> Any:
        return "" if v is None else v

    @property
    def verdict(self) -> str:
        return "yes" if self.holds_here is True else "no" if self.holds_here is False else "unknown"

    @property
    def shown(self) -> str:
        """The verdict as tables show it: ``verdict``, marked when within spread."""
        return self.verdict + (" (within spread)" if self.within_spread else "")


class KernelPatch(_Model):
    """One of the project's kernel patches (mptcplab/kernelreq.py PATCHES) and whether the
    run's kernel carries it, with what says so (manifest.json ``kernel_patches``)."""

    name: str
    present: bool
    evidence: str = ""


class Summary(_Model):
    """summary.json: the run's repetitions, their aggregates and the paper comparison."""

    format_version: int = FORMAT_VERSION
    #: the format_version the file carried (0: it had none), set by read.parse_summary;
    #: None for a summary made in memory. Never written: ``format_version`` says it
    file_format_version: int | None = Field(default=None, exclude=True)
    lab: str
    run_id: str
    kernel: str | None = None
    #: the project's kernel patches this kernel carries (manifest.json kernel_patches);
    #: None: not recorded (a run before the field), so findings that require one are unknown
    kernel_patches: list[str] | None = None
    complete: bool = False
    quick: bool = False
    run_kind: str | None = None
    run_kind_reason: str | None = None
    valid: bool | None = None
    invalid_reasons: list[str] = Field(default_factory=list)
    timing_notes: list[str] = Field(default_factory=list)
    repetitions: int | None = None
    published_source: PublishedSource | None = None
    scenarios: list[Repetition] = Field(default_factory=list)
    aggregates: list[ScenarioAggregate] = Field(default_factory=list)
    published: list[PublishedRow] = Field(default_factory=list)
    findings: list[FindingRow] = Field(default_factory=list)
    #: the factor every link rate was scaled by (lab/scale.py): goodput is measured at it
    scale: float = 1.0
    #: run-level coded warnings known before measuring (e.g. emulation-beyond-host)
    warnings: list[Warning] = Field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        # python mode: a runner extra of an unexpected type is left to store.write_json (default=str)
        return self.model_dump()

    def scenario_order(self) -> list[str]:
        """Scenario names in the order the run lists them (the lab's order)."""
        seen = dict.fromkeys(r.name for r in self.scenarios)
        seen.update(dict.fromkeys(a.scenario for a in self.aggregates if a.scenario not in seen))
        return list(seen)

    def reps_of(self, scenario: str) -> list[Repetition]:
        return [r for r in self.scenarios if r.name == scenario]

    def aggregate(self, scenario: str) -> ScenarioAggregate | None:
        return next((a for a in self.aggregates if a.scenario == scenario), None)


class Git(_Model):
    commit: str | None = None
    dirty: bool | None = None


class CalibrationCheck(_Model):
    """One measured quantity of a link against its configured value (linkcheck.Check)."""

    quantity: str
    configured: float | None = None
    measured: float | None = None
    tolerance: str | None = None
    ok: bool
    #: the measured direction ("a:if->b:if"); "both" for a round trip
    direction: str | None = None


class LinkCalibration(_Model):
    """One emulated link's checks in one repetition (manifest.json ``calibration``)."""

    link: str
    configured: dict[str, Any] = Field(default_factory=dict)
    configured_reverse: dict[str, Any] | None = None
    checks: list[CalibrationCheck] = Field(default_factory=list)
    ok: bool
    rate_measured_in_this_rep: bool | None = None


_LINK_CALIBRATIONS = TypeAdapter(list[LinkCalibration])


class Manifest(_Model):
    """manifest.json: what makes the run self-describing. Written by labrun at the start and
    the end of a run; host facts (results/manifest.py host_facts) are at the top level."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    lab: str | None = None
    run_id: str | None = None
    complete: bool = False
    incomplete_reason: str | None = None
    quick: bool | None = None
    repetitions: int | None = None
    #: ``--late-retries``: re-measures allowed for a repetition whose delay line was late
    late_retries: int | None = None
    command_line: list[str] | None = None
    started: str | None = None
    finished: str | None = None
    wall_seconds: float | None = None
    traffic_seconds: float | None = None
    kernel: str | None = None
    kernel_version: str | None = None
    #: each known project patch: carried or not, and the evidence (None: a run before the field)
    kernel_patches: list[KernelPatch] | None = None
    machine: str | None = None
    hostname: str | None = None
    cpu_count: int | None = None
    os_release: str | None = None
    platform: dict[str, Any] | None = None
    backend: str | None = None
    link_emulation: str | None = None
    tools: dict[str, str | None] = Field(default_factory=dict)
    git: Git = Field(default_factory=Git)
    lab_files_sha256: dict[str, str] = Field(default_factory=dict)
    scenarios: list[str] = Field(default_factory=list)
    #: {scenario: {node: {sysctl: value}}} as read back from each node
    sysctls: dict[str, Any] = Field(default_factory=dict)
    #: {scenario: {"rep<N>": [{"link", "configured", "checks": [...], "ok"}]}}
    calibration: dict[str, Any] = Field(default_factory=dict)
    #: {"factor", "source", "scaled", "unscaled_fields"} (lab/scale.py manifest_record)
    scale: dict[str, Any] | None = None
    #: the reachability estimate made before measuring (preflight.reachability)
    reachability: dict[str, Any] | None = None
    #: the lab's named subset the run applied: {"name", "scenarios", "repetitions"}; None: not one
    subset: dict[str, Any] | None = None
    #: the wall-time estimate made before measuring (walltime.Estimate.record)
    estimate: dict[str, Any] | None = None
    #: False when the run had no manifest.json (the report says so)
    present: bool = Field(default=True, exclude=True)

    def calibration_of(self, scenario: str, rep: int) -> list[LinkCalibration] | None:
        """The link checks of one repetition; None when the manifest has none for it (not
        calibrated, or a run before it). A bad entry: ResultsFormatError naming its field."""
        entries = (self.calibration.get(scenario) or {}).get(f"rep{rep}")
        try:
            return None if entries is None else _LINK_CALIBRATIONS.validate_python(entries)
        except ValidationError as e:
            err = e.errors()[0]
            where = "".join(f"[{x}]" if isinstance(x, int) else f".{x}" for x in err["loc"])
            raise ResultsFormatError("manifest.json", f"calibration.{scenario}.rep{rep}{where}",
                                     f"not a link check: {err['msg']}") from None

    def sysctls_of(self, scenario: str) -> dict[str, dict[str, str]]:
        """{node: {sysctl: value}} as read back in the scenario's first repetition ({}: none)."""
        return {str(n): {str(k): str(v) for k, v in (vals or {}).items()}
                for n, vals in (self.sysctls.get(scenario) or {}).items()}


class Event(_Model):
    """One action a repetition executed, or planned and did not run: a row of events.csv
    (timeline/record.py writes it; results/events.read_events reads it, older files too).

    The first eleven fields are the columns of every events.csv; ``target`` and ``commands``
    are for people. The typed fields after them say what the action acted on, so readers
    need not parse that text: in files written before 2026-11-24 they are absent and the
    reader derives them from ``target`` and ``commands``. ``capture_s`` is the analysis's.
    """

    model_config = ConfigDict(extra="ignore", frozen=True)

    planned_s: float
    actual_s: float | None = None  # None: never ran (the traffic ended first)
    action: str
    target: str = ""
    commands: str = ""  # the rendered commands, " ; "-separated (or the in-process call)
    rc: int | None = None  # first non-zero exit status, 0 when all succeeded; None: not run
    duration_ms: float | None = None
    result: str = ""  # stderr of a failed command, or the call's result
    source: str = "timeline"  # timeline | controller:<name>
    epoch_s: float | None = None  # actual time, time.time()
    detail: str = ""  # a controller's reason for the action, with its numbers
    #: the node acted on (endpoint_*, sysctl), or the node of ``link``'s end (link_*)
    node: str | None = None
    #: link_*: 'node:iface' of the end the lab named
    link: str | None = None
    #: link_*: both | one
    direction: str | None = None
    #: endpoint_add / endpoint_flags: the address as the lab names it ('node:iface' or IPv4)
    address: str | None = None
    #: endpoint_delete: the id deleted; endpoint_add: the id given (None: the kernel's choice)
    endpoint_id: int | None = None
    #: endpoint_flags: backup | nobackup; endpoint_add: its flags, space-separated
    flags: str | None = None
    #: flow_start / flow_stop: the flow's name
    flow: str | None = None
    #: the same instant on the time-series axis (added by the analysis; None before it)
    capture_s: float | None = None

    @property
    def done(self) -> bool:
        """It ran, and every command succeeded."""
        return self.rc == 0 and self.epoch_s is not None

    def row(self) -> dict[str, object]:
        """The row events.csv holds (None as an empty cell), without ``capture_s``."""
        return self.model_dump(exclude={"capture_s"})


EVENTS_FILE = "events.csv"
#: events.csv's columns as written (the analysis appends ``capture_s``)
EVENT_COLUMNS = [f for f in Event.model_fields if f != "capture_s"]
#: the typed columns: absent from files written before 2026-11-24
EVENT_TYPED_COLUMNS = EVENT_COLUMNS[EVENT_COLUMNS.index("detail") + 1:]
