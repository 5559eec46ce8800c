"""What the capture shows of every connection to a flow's server port, for the kinds that open
many (traffic/connections.py checks them): FlowResult.connections."""

from __future__ import annotations

from ...values.types import Lenient


class ConnectionsCheck(Lenient):
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
