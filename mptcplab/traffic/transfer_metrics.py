"""How the transfer kind's metrics (declared in transfer_result.py) are computed from the
flow's TransferMetrics (traffic/kind_metrics.py: registered by metrics/).

* ``transfer_intact``: 1 when, in every direction the flow sends, the SHA-256 of what arrived
  equals the sender's of what it sent (same length), else 0 (traffic/transfer.py: the
  combined verdict).
* ``transfer_received_fraction``: bytes received over the bytes the flow was to send, summed
  over its directions: below 1 when the transfer stalled and the run stopped it at its
  duration limit.
* ``transfer_differing_bytes``, ``transfer_foreign_bytes``: bytes where what arrived differs
  from the sent stream, and of those the ones not shown to be the stream's own bytes from
  another offset (the server's comparison, traffic/transfer_diff.py): 0 and 0 when intact;
  a receiver that misplaces data has differing bytes but no foreign ones.
"""

from __future__ import annotations

from .kind_metrics import FlowMetric, reading
from .transfer_result import TransferMetrics


def _intact(t: TransferMetrics) -> float | None:
    return None if t.verdict is None else 1.0 if t.verdict == "equal" else 0.0


def _received_fraction(t: TransferMetrics) -> float | None:
    return None if not t.size or t.received_bytes is None else t.received_bytes / t.size


FLOW_METRICS: dict[str, FlowMetric] = {
    "transfer_intact": reading(TransferMetrics, _intact),
    "transfer_received_fraction": reading(TransferMetrics, _received_fraction),
    "transfer_differing_bytes": reading(TransferMetrics, lambda t: t.differing_bytes),
    "transfer_foreign_bytes": reading(TransferMetrics, lambda t: t.foreign_bytes),
}
