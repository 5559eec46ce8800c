"""The metrics a run reports (base.py: Metric, Select, the registry).

One module per family; importing this package registers them all. A new family: a module
here calling ``register``, and one import line below.
"""

from . import (
    buffers,  # noqa: F401  (buffer labs: re-sent bytes, DSS checksum, OFO queue)
    cc_depth,  # noqa: F401  (the send-buffer lab's: Eq (1), retransmissions, cwnd)
    core,  # noqa: F401  (registers on import)
    flows,  # noqa: F401  (per-flow goodput and share)
    latency,  # noqa: F401  (the latency flow kind)
    memory,  # noqa: F401  (the ss_interval socket-memory probe)
    series,  # noqa: F401  (windowed throughput and packets/s from timeseries.csv)
)
from .base import METRICS, SELECTORS, Metric, Select, Statistic, refusal, register

__all__ = ["METRICS", "SELECTORS", "Metric", "Select", "Statistic", "refusal", "register"]
