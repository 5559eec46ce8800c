"""The computations of the metrics a run reports (base.py: Metric, the registry); what each
metric is, is declared in mptcplab/metricdecl.py.

One module per family; importing this package registers them all, the traffic kinds' own
metrics too (kinds.py: computed in traffic/<kind>_metrics.py, found by name), then checks
that every declared metric has its computation. A new family: a module here calling
``register`` for names declared there, and one import line below.
"""

from ..metricdecl import SELECTORS, Select, Statistic, metric_scales, paper_target, refusal
from . import (
    buffers,  # noqa: F401  (buffer labs: re-sent bytes, DSS checksum, OFO queue)
    cc_depth,  # noqa: F401  (the send-buffer lab's: Eq (1), retransmissions, cwnd)
    connections,  # noqa: F401  (the kinds that open many connections: shares proven MPTCP, MP_JOINs)
    core,  # noqa: F401  (registers on import)
    cwnd,  # noqa: F401  (the congestion window over time, tcp_probe's subflow_series.csv)
    delivery,  # noqa: F401  (one-way delay, receiver reordering, head-of-line delay)
    flows,  # noqa: F401  (per-flow goodput and share)
    handshake,  # noqa: F401  (SYN -> SYN/ACK at the server, labs/setup)
    kinds,  # noqa: F401  (the traffic kinds' own: traffic/<kind>_metrics.py)
    memory,  # noqa: F401  (the ss_interval socket-memory probe)
    middlebox,  # noqa: F401  (the middlebox lab: MIB counters per end, SYN fallback, rewriting boxes)
    series,  # noqa: F401  (windowed throughput and packets/s from timeseries.csv)
)
from .base import METRICS, Metric, check_registry, register

check_registry()

__all__ = ["METRICS", "SELECTORS", "Metric", "Select", "Statistic", "check_registry", "metric_scales",
           "paper_target", "refusal", "register"]
