"""The transfer kind's numbers in the record (FlowResult.transfer; traffic/transfer.py reads
them) and the metrics a finding may name on them (computed in transfer_metrics.py)."""

from __future__ import annotations

from ..metricdecl import FLOW, declare
from ..values.types import Lenient


class TransferDifference(Lenient):
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


class TransferMetrics(Lenient):
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


declare("transfer_intact", "min",
        "1 when SHA-256 of what the server received equals the client's of what it sent (transfer kind); min over "
        "reps: 1 only when every repetition arrived intact", accepts=FLOW)
declare("transfer_received_fraction", "min",
        "bytes the server received / bytes the transfer was to send (transfer kind): below 1 when it stalled and "
        "the run stopped it at its duration limit; min over reps", accepts=FLOW)
declare("transfer_differing_bytes", "max",
        "bytes where what the server received differs from the seeded stream the client sent (the server's "
        "comparison; transfer kind); max over reps", unit="bytes", accepts=FLOW)
declare("transfer_foreign_bytes", "max",
        "of the differing bytes, those not found to be the sent stream's own bytes from another offset: made up "
        "on the way, not misplaced (traffic/transfer_diff.py); max over reps", unit="bytes", accepts=FLOW)
