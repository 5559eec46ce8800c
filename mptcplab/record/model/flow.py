"""The measured flow of a repetition: its subflows, the capture's MPTCP verdict and the
receiver's head-of-line numbers."""

from __future__ import annotations

from pydantic import Field

from .base import _Model


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
    #: what the rtt_* numbers measure (analysis/depth.py RTT_KINDS: "path", "ack_delay",
    #: "partial", "unknown"; None: runs before 2026-11-28, or no MPTCP depth)
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
