"""What the capture analysis takes and returns.

Hand-written plain dataclasses (not pydantic): the results are built once from measured
data and read by the report, the summary writer and notebooks; validation belongs to the
lab files, not here. Every measured field is ``None`` when the capture did not show it:
nothing is filled in with a guess.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from .table import Table


class Remark(str):
    """A warning of the analysis: its text (a str, as printed and compared), with the code the
    result model gives it (docs/results-format.md, Warning)."""

    code: str

    def __new__(cls, message: str, code: str) -> Remark:
        self = super().__new__(cls, message)
        self.code = code
        return self

    def __getnewargs__(self) -> tuple[str, str]:  # type: ignore[override]
        return (str(self), self.code)   # pickled to and from the analysis worker processes


#: a subflow from a client address on none of the lab's paths
UNKNOWN_PATH = "unknown-path"
#: a capture file the reader could not read whole (the last packet cut short, ...)
CAPTURE_DAMAGED = "capture-damaged"
#: a capture from elsewhere too small for the contribution rule (contribution.too_small)
TOO_SMALL = "too-small-to-judge"
#: receiver-side figures (HoL, out of order, never readable, first copies) withheld: the
#: receiver point's handshake places it at the data sender (delivery.receiver_figures)
HOL_AT_SENDER = "not-measurable-at-sender"
#: receiver-side figures withheld: data ACKs acknowledge data no captured segment carried,
#: another subflow's outside the files (one interface's capture; coverage.py)
DATA_NOT_CAPTURED = "data-not-in-capture"


@dataclass(frozen=True)
class CaptureFile:
    """One pcap file and where it was taken, e.g. ``point="client:eth1"``."""

    path: Path
    point: str


@dataclass(frozen=True)
class Finding:
    """One problem the evidence shows. ``code`` is stable (tests, typed results and the report
    may match on it); ``message`` is the one line printed; ``evidence`` holds the numbers."""

    code: str
    message: str
    path: str | None = None
    evidence: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.message

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "path": self.path, "message": self.message,
                "evidence": dict(self.evidence)}


@dataclass(frozen=True)
class FlowSpec:
    """What the run was meant to do: the analysis checks the capture against it."""

    server_ip: str
    server_port: int
    #: client IP -> path label, e.g. {"10.0.1.2": "A", "10.0.2.2": "B"}
    paths: dict[str, str]
    #: paths that should form a subflow, e.g. ("A", "B"); ("A",) for TCP
    expected_paths: tuple[str, ...]
    #: MPTCP was requested
    mptcp: bool
    #: upload: client -> server carries the data
    direction: Literal["upload", "download"] = "upload"
    #: path label -> configured bottleneck rate (bit/s) of the path in the data direction,
    #: where the lab configures one; used for the expected share (see contribution.py)
    path_rates_bps: dict[str, float] = field(default_factory=dict)
    #: expected paths whose subflow is a backup (MPTCP "backup" flag): it must be
    #: established but by design may carry nothing while the other paths work
    backup_paths: tuple[str, ...] = ()
    #: every capture point is on one clock (one host kernel: the netns and containerlab
    #: backends), so times at two points subtract into one-way delays (delivery.py)
    same_clock: bool = False
    #: the data receiver's node (capture points are "node:iface"): the head-of-line analysis
    #: uses its points only (delivery.py); None: not known (files made elsewhere)
    receiver_node: str | None = None
    #: other server ports the client's MP_JOINs go to: the ports of the server's address:port
    #: endpoints (``port:`` in the lab, announced by ADD_ADDR); their joins are this
    #: connection's subflows when their token names it (flows.only_joins_off_port)
    join_ports: tuple[int, ...] = ()
    #: path -> when the lab's timeline or a controller took it out of use for the rest of the
    #: run (a link of the path cut, its endpoint deleted, its endpoint flagged backup), in
    #: epoch seconds (time.time(), the clock the captures are stamped with: the analysis
    #: turns it into seconds from its t0); contribution.py judges such a path over its time
    #: in use. Built from events.csv (analysis/labspec.retired_paths)
    retired_paths: dict[str, float] = field(default_factory=dict)
    #: path -> what retired it, in words ("link client:eth2 down", "demoted by controller:...")
    retired_why: dict[str, str] = field(default_factory=dict)
    #: files made elsewhere (``mptcplab analyze``): no lab says what to expect, so the verdict
    #: uses only what the file shows (contribution.py's rules for foreign captures; the
    #: expected paths are those the data connection tried)
    foreign: bool = False


@dataclass
class SubflowResult:
    """One TCP subflow of the data connection (or the plain TCP connection).

    Times are seconds relative to the data connection's first SYN. Sizes are bytes. Counts
    come from the one capture point that saw most of this subflow (``point``), so a packet
    seen at a router and at the host is counted once.
    """

    path: str | None
    src: str                    # client side address and port
    sport: int
    dst: str                    # server side address and port
    dport: int
    initial: bool               # the MP_CAPABLE subflow (or the plain TCP connection)
    established: bool           # 3-way handshake completed (MP_JOIN handshake for joins)
    bytes: int                  # payload bytes in the data direction, retransmissions included
    retrans_bytes: int
    retransmissions: int
    share: float                # bytes / total bytes of the connection
    segments: int
    median_seg: float | None    # TCP payload sizes of data segments
    max_seg: int | None
    max_frame: int | None       # largest IP packet length in the data direction
    icmp_frag_needed: int       # ICMP type 3 code 4 quoting this subflow
    icmp_first_t: float | None
    icmp_mtus: list[int]
    first_data_t: float | None
    last_data_t: float | None
    syn_attempts: int
    rst: bool
    # --- beyond the minimum contract ---
    #: "mp_capable", "mp_join" or "tcp" (what the first SYN carried)
    kind: str = "tcp"
    #: capture point the numbers come from
    point: str | None = None
    #: highest cumulative ACK from the receiver, relative to the first data byte: what was
    #: delivered on this subflow. None when the capture shows no ACK from the receiver.
    acked_bytes: int | None = None
    #: SYN/ACK seen in reply to our SYN (with MP_JOIN for a join)
    syn_answered: bool = False
    #: the MSS option of the subflow's first SYN from the client (None: not captured)
    syn_mss: int | None = None
    #: when the receiver's cumulative ACK on this subflow last advanced (s from t0)
    last_ack_advance_t: float | None = None
    #: the share of the connection's acknowledged bytes this path would carry at its
    #: configured rate (None: rates not configured for every expected path)
    expected_share: float | None = None
    #: the lowest configured rate on this subflow's path in the data's direction, Mbit/s
    #: (labspec.path_rates; None: no rate configured on the path)
    path_rate_mbps: float | None = None
    #: the subflow contributed to the transfer by the rule in contribution.py
    contributed: bool = False
    #: when the lab or a controller took the subflow's path out of use for the rest of the
    #: run (s from t0; FlowSpec.retired_paths) and what did; None: in use to the end
    retired_t: float | None = None
    retired_by: str | None = None
    #: RTT from the capture (data segment -> first ACK covering it, Karn's rule; depth.py),
    #: ms; None without samples. The path RTT only when ``point`` is on the data sender's
    #: side; ``rtt_kind`` says what it is (at the receiver: its ACK delay).
    rtt_min_ms: float | None = None
    rtt_median_ms: float | None = None
    rtt_p95_ms: float | None = None
    rtt_samples: int = 0
    #: what the rtt_* numbers measure (depth.RTT_KINDS: "path", "ack_delay" at the data
    #: receiver, "partial" at a point between, "unknown"), from where ``point`` sits
    #: (sides.capture_end; a lab's receiver node decides for its points); None: no MPTCP depth
    rtt_kind: str | None = None
    #: MPTCP-level retransmissions sent on this subflow: data mapped before (on this or
    #: another subflow) mapped again here (depth.py); bytes of those ranges
    mptcp_retransmissions: int = 0
    mptcp_retrans_bytes: int = 0
    #: one-way delay of the subflow's data segments between two capture points on one clock
    #: (delivery.py; "a->b" the points), ms; owd_samples 0: not measured
    owd_samples: int = 0
    owd_min_ms: float | None = None
    owd_median_ms: float | None = None
    owd_p95_ms: float | None = None
    owd_points: str | None = None
    #: at the receiver point ``hol_point`` (delivery.py): data segments, the share of their bytes
    #: that arrived with a hole before them in data sequence space, those whose hole never
    #: filled, and percentiles of the head-of-line delay over all segments (0 when in order), ms.
    #: All None when withheld (delivery.receiver_figures: no capture at the receiver, or the
    #: receiver point is at the data sender; FlowAnalysis.hol_unavailable says why)
    hol_point: str | None = None
    hol_segments: int | None = 0
    ooo_share: float | None = None
    hol_never: int | None = 0
    hol_p50_ms: float | None = None
    hol_p95_ms: float | None = None
    hol_p99_ms: float | None = None
    hol_max_ms: float | None = None
    #: which copy arrived first at the receiver points (usefulness.py; None: no receiver
    #: points): the data bytes this subflow delivered first, each byte counted on one subflow
    #: only, and its MPTCP-level re-sends that arrived before the first carrier's copy
    first_bytes: int | None = None
    mptcp_retrans_useful: int | None = None
    #: first SYN -> first SYN without MPTCP option (the client's fallback), s; None: none
    syn_fallback_s: float | None = None
    #: MP_TCPRST reason of the server side's first RST (None: no RST or no MP_TCPRST)
    rst_reason: int | None = None
    #: capture point -> "addr:port" the client side had there, where a NAT made this
    #: subflow another 4-tuple (flows.merge_translated); empty without one
    translated: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """``src:sport``, the key used in the time series."""
        return f"{self.src}:{self.sport}"

    @property
    def carried_data(self) -> bool:
        """Payload went out on this subflow and, where ACKs were captured, some arrived."""
        if self.bytes <= 0:
            return False
        return self.acked_bytes is None or self.acked_bytes > 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: every field plus ``name`` and ``carried_data``."""
        d = asdict(self)
        d["name"] = self.name
        d["carried_data"] = self.carried_data
        return d


@dataclass
class FlowAnalysis:
    """The verdict and tables for one iperf3 run."""

    #: MP_CAPABLE in SYN, SYN/ACK and third ACK of the data connection
    mptcp_negotiated: bool
    #: MPTCP requested but not negotiated, or fallback after (MP_FAIL / data without DSS)
    fallback: bool
    #: MPTCP: negotiated, no fallback, and every expected path has an established subflow
    #: that contributed to the transfer (contribution.py; a backup path: established);
    #: TCP: the connection was seen carrying data
    verified: bool
    subflows: list[SubflowResult]
    #: ADD_ADDR addresses seen on the data connection
    add_addrs: list[str]
    #: one line each: the reason the evidence shows for a failure or fallback
    diagnostics: list[str]
    #: t (bin start, s), path, subflow ("src:sport"), bytes, mbps; one row per bin/subflow
    timeseries: Table
    #: t, src, dst, type, code, mtu, quoted_src, quoted_sport, path, point
    icmp_events: Table
    #: packets read from all capture files
    packets: int
    analysis_seconds: float
    # --- beyond the minimum contract ---
    #: absolute time (epoch seconds) of the time origin: the data connection's first SYN
    t0_epoch: float | None = None
    #: MPTCP (or TCP) connections to the server port seen in the captures
    connections: int = 0
    #: how the data connection was picked, for the report
    data_connection: str = ""
    #: problems that did not stop the analysis (a capture cut short, a subflow on no known path)
    warnings: list[Remark] = field(default_factory=list)
    #: the diagnostics with their stable codes and evidence (diagnostics = their messages)
    findings: list[Finding] = field(default_factory=list)
    #: MPTCP depth (depth.py), empty for plain TCP: DSN mappings and data ACKs per subflow
    #: over time (depth.DSN_COLUMNS), MPTCP-level retransmissions (REINJECTION_COLUMNS and
    #: usefulness.COLUMNS: which copy reached the receiver first),
    #: MPTCP signalling events (EVENT_COLUMNS)
    dsn: Table = field(default_factory=Table)
    reinjections: Table = field(default_factory=Table)
    mptcp_events: Table = field(default_factory=Table)
    #: a DSS mapping carried a checksum (None: no mapping seen); the MP_CAPABLE handshake
    #: asked for checksums (flag A; None: not captured)
    dss_checksum: bool | None = None
    checksum_required: bool | None = None
    #: the MPTCP version the data connection's MP_CAPABLE carried: 0 (RFC 6824), 1 (RFC
    #: 8684); None: no MP_CAPABLE captured
    mptcp_version: int | None = None
    #: delivery.py: OWD per subflow and time bin (OWD_COLUMNS), HoL and reordering at the
    #: receiver per subflow and time bin (HOL_COLUMNS), the connection's HoL numbers over all
    #: subflows (hol_segments, ooo_share, hol_never, hol_p50/p95/p99/max_ms), why OWD / HoL
    #: are missing
    owd: Table = field(default_factory=Table)
    hol: Table = field(default_factory=Table)
    hol_connection: dict[str, Any] = field(default_factory=dict)
    owd_unavailable: str | None = None
    hol_unavailable: str | None = None
    #: the HoL numbers were measured at a point the handshake cannot place at either end:
    #: they assume it is the receiver's (delivery.receiver_figures), in words; None otherwise
    hol_assumed: str | None = None
    #: departures.py: gaps between consecutive data segments at the sender, per ordered pair
    #: of subflows (departures.COLUMNS)
    departures: Table = field(default_factory=Table)
    #: tcpseq.py: each subflow's TCP sequence/ACK numbers, window and timestamps where they
    #: move (tcpseq.COLUMNS); None: not asked for (analyze_packets ``tcp_seq``)
    tcp_seq: Table | None = None
    #: subflow name -> what its rtt_* numbers measure (depth.RTT_KINDS: "path", "ack_delay"
    #: at the data receiver, "partial" at a point between, "unknown"), from where its capture
    #: point sits (sides.capture_end). The same as each SubflowResult.rtt_kind, kept here
    #: for readers of the mapping (summary.json ``rtt_kind``)
    rtt_kind: dict[str, str] = field(default_factory=dict)

    @property
    def resends(self) -> Table:
        """The rows of ``reinjections`` that are retransmissions (window probes left out)."""
        r = self.reinjections
        return r.take(~r.arr("window_probe").astype(bool)) if "window_probe" in r else r

    @property
    def mptcp_retransmissions(self) -> int:
        return len(self.resends)

    @property
    def mptcp_retrans_bytes(self) -> int:
        return int(self.resends.arr("length").sum()) if len(self.resends) else 0

    @property
    def mptcp_window_probes(self) -> int:
        r = self.reinjections
        return int(r.arr("window_probe").astype(bool).sum()) if "window_probe" in r else 0

    @property
    def mptcp_late_originals(self) -> int:
        """Re-sends whose copy the sender had queued first (depth.py, ``late_original``):
        ``mptcp_retransmissions`` minus these is comparable with MPTcpExtMPTCPRetrans."""
        r = self.resends
        return int(r.arr("late_original").astype(bool).sum()) if "late_original" in r else 0

    def subflows_on(self, path: str) -> list[SubflowResult]:
        return [s for s in self.subflows if s.path == path]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready verdict and per-subflow rows (the tables are left out: write them with
        ``to_csv``, see write_tables in analyze.py)."""
        return {
            "mptcp_negotiated": self.mptcp_negotiated, "fallback": self.fallback,
            "verified": self.verified, "subflows": [s.to_dict() for s in self.subflows],
            "add_addrs": list(self.add_addrs), "diagnostics": list(self.diagnostics),
            "warnings": list(self.warnings), "packets": self.packets,
            "analysis_seconds": self.analysis_seconds, "t0_epoch": self.t0_epoch,
            "connections": self.connections, "data_connection": self.data_connection,
            "findings": [f.to_dict() for f in self.findings],
            "mptcp_retransmissions": self.mptcp_retransmissions,
            "mptcp_retrans_bytes": self.mptcp_retrans_bytes,
            "mptcp_window_probes": self.mptcp_window_probes,
            "mptcp_late_originals": self.mptcp_late_originals,
            "dss_checksum": self.dss_checksum, "checksum_required": self.checksum_required,
            "mptcp_version": self.mptcp_version,
            "hol": dict(self.hol_connection), "owd_unavailable": self.owd_unavailable,
            "hol_unavailable": self.hol_unavailable, "hol_assumed": self.hol_assumed, "rtt_kind": dict(self.rtt_kind),
        }
