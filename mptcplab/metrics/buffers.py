"""Buffer-lab metrics (labs/rcvbuf): what the wire carried beyond what the application got,
the re-sends per path at TCP and MPTCP level, whether DSS checksums were in use, and the
receiver's out-of-order queue fast path.

Everything here comes from the repetition record (rep.json): the capture's per-subflow
counts (analysis/model.py SubflowResult, analysis/depth.py for MPTCP-level re-sends), the
MPTCP verdict and the nstat probe's counter deltas. A value the record does not have (an
older run, a probe that was off) is None, never an error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import Select, register
from .core import subflow_sum

if TYPE_CHECKING:
    from ..record.model import Repetition


def app_bytes(r: Repetition) -> float | None:
    """Bytes the receiving application got: iperf3's receiver goodput x its duration."""
    if r.goodput_mbps is None or r.duration_s is None:
        return None
    return r.goodput_mbps * 1e6 / 8 * r.duration_s


def wire_bytes(r: Repetition, path: str | None = None) -> int | None:
    """Payload bytes the capture saw on the subflows of ``path`` (None: all), re-sends included."""
    vals = [s.bytes for s in r.subflows_on(path) if s.bytes is not None]
    return int(sum(vals)) if vals else None


def wire_minus_app(r: Repetition, _sel: Select | None = None) -> float | None:
    """Wire bytes minus application bytes: what went out more than once (or was never
    delivered). The paper's opportunistic retransmission shows here as re-sent 3G data."""
    w, a = wire_bytes(r), app_bytes(r)
    return None if w is None or a is None else w - a


def _dss_checksum(r: Repetition, _sel: Select) -> float | None:
    # the capture's verdict: a DSS mapping carried a checksum (None: MPTCP not seen)
    seen = r.mptcp.dss_checksum
    return None if seen is None else float(seen)


def nstat_delta(r: Repetition, counter: str) -> int | None:
    """A counter's delta over the traffic, summed over the nodes (the nstat probe's record in
    rep.json, ``probes.nstat.<node>.<counter>``; absent counters did not move). None: no probe."""
    probes = (r.model_extra or {}).get("probes") or {}
    nstat = probes.get("nstat") if isinstance(probes, dict) else None
    if not isinstance(nstat, dict):
        return None
    return int(sum(int(c.get(counter, 0)) for c in nstat.values() if isinstance(c, dict)))


def _ofo_tail_share(r: Repetition, _sel: Select) -> float | None:
    # MPTCP-level out-of-order queue: segments appended at its tail (the fast path, the
    # upstream analogue of the paper's Fig 8 shortcut) among all queued out of order. Only
    # the data receiver queues, so summing the nodes gives the receiver's counts.
    queued = nstat_delta(r, "MPTcpExtOFOQueue")
    tail = nstat_delta(r, "MPTcpExtOFOQueueTail")
    if queued is None or tail is None or queued == 0:
        return None
    return tail / queued


register("wire_minus_app_bytes", wire_minus_app)
register("tcp_retrans_bytes", subflow_sum("retrans_bytes"))
register("mptcp_retrans_bytes", subflow_sum("mptcp_retrans_bytes"))
register("dss_checksum", _dss_checksum)
register("ofo_tail_share", _ofo_tail_share)
