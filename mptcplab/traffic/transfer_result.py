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


class TransferLeg(Lenient):
    """One direction of a transfer: what its sender sent and its receiver got. With a fast
    close the peer of the closing side sends until the reset: ``sent_bytes`` may exceed the
    flow's ``bytes``, and ``sent_sha256`` covers that many, what is compared."""

    sent_bytes: int | None = None
    received_bytes: int | None = None
    sent_sha256: str | None = None
    received_sha256: str | None = None
    #: equal, differs (same length, other content) or incomplete
    verdict: str | None = None
    differing_bytes: int | None = None
    differences: list[TransferDifference] = []
    foreign_bytes: int | None = None


class TransferMetrics(Lenient):
    """The verified transfer's report (traffic/transfer.py): what was sent and received. The
    top-level counts are summed over the directions (one direction: that direction's, as in
    records written before ``direction``); ``upload`` and ``download`` say each."""

    bytes: int | None = None
    received_bytes: int | None = None
    #: the bytes the flow was to send (``bytes`` of the lab file, times the directions)
    size: int | None = None
    #: upload, download or both (None: a record written before it: upload)
    direction: str | None = None
    #: the side that closed fast (MP_FASTCLOSE) after ``bytes``, as the lab asked; None: none
    fastclose: str | None = None
    #: the connection ended by a reset (expected with ``fastclose``)
    reset: bool | None = None
    #: each sender's pace (bit/s); None: unpaced
    rate_bps: int | None = None
    upload: TransferLeg | None = None
    download: TransferLeg | None = None
    #: the run stopped the transfer at its duration limit before it ended (a stall)
    stopped: bool | None = None
    sent_sha256: str | None = None
    received_sha256: str | None = None
    #: equal, differs (same length, other content) or incomplete; over both directions:
    #: equal when each is, differs when one does
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
        "1 when SHA-256 of what each receiving side received equals its peer's of what it sent, in every direction "
        "the flow sends (transfer kind); min over reps: 1 only when every repetition arrived intact", accepts=FLOW)
declare("transfer_received_fraction", "min",
        "bytes received / bytes the transfer was to send, over its directions (transfer kind): below 1 when it "
        "stalled and the run stopped it at its duration limit; min over reps", accepts=FLOW)
declare("transfer_differing_bytes", "max",
        "bytes where what a receiving side received differs from the seeded stream its peer sent (the receiver's "
        "comparison; transfer kind); max over reps", unit="bytes", accepts=FLOW)
declare("transfer_foreign_bytes", "max",
        "of the differing bytes, those not found to be the sent stream's own bytes from another offset: made up "
        "on the way, not misplaced (traffic/transfer_diff.py); max over reps", unit="bytes", accepts=FLOW)
