"""The measured flow of a repetition: its subflows, the capture's MPTCP verdict and the
receiver's head-of-line numbers."""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel, Field

from ...values.types import Lenient

M = TypeVar("M", bound=BaseModel)


class HolNumbers(Lenient):
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
    #: the MSS option of the subflow's first SYN from the client (capture; None: not captured)
    syn_mss: int | None = None
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
    #: subflow another 4-tuple (records older than this field listed those as subflows)
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
    #: what the rtt_* numbers measure (analysis/depth.py RTT_KINDS: "path", "ack_delay",
    #: "partial", "unknown"; None: a record older than the field, or no MPTCP depth)
    rtt_kind: str | None = None
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
    #: ``window_probe``), not counted above (None: a record older than the field)
    data_window_probes: int | None = None
    #: of data_retransmissions, those whose copy the sender had queued first on a slow
    #: subflow and sent after the other (``late_original``): data_retransmissions minus these
    #: compares with MPTcpExtMPTCPRetrans (None: a record older than the field)
    data_late_originals: int | None = None
    #: a DSS mapping carried a checksum / the handshake asked for checksums (None: not seen)
    dss_checksum: bool | None = None
    checksum_required: bool | None = None


class Flow(Lenient):
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


class FlowOutcome(Flow):
    """What every flow of a repetition records, whatever its kind (FlowResult adds the kinds'
    own numbers after these: traffic/results.py)."""

    name: str
    #: the flow's ``kind`` (the default: the lab schema's, traffic/registry.py)
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

    def metrics_of(self, model: type[M]) -> M | None:
        """The kind's own numbers if this flow has them as ``model`` (a kind's result model,
        traffic/<kind>_result.py), else None: how code that knows the kind reads them, since
        the kinds' fields are added by the kinds' registry (traffic/results.py)."""
        return next((v for name in type(self).model_fields if isinstance(v := getattr(self, name), model)), None)
