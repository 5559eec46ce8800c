"""The send-buffer lab's metrics (Kato et al. 2019/2020): Eq (1)'s requirement and whether
the connection's buffer meets it, the goodput's spread, MPTCP- and TCP-level
retransmissions, cwnd reductions with and without loss, and the sender's waits for buffer.

Every value is read from the repetition's record (rep.json), never from its files: the
record is complete when the summary is built (the analysis worker wrote it), whatever
directory the reader runs in. A value the record does not have (an older run, a flow kind
without it, no tcp_probe probe) is None, not 0.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..analysis.sendbuffer import eq1_required_bytes
from .base import METRICS, Select, register
from .core import subflow_sum

if TYPE_CHECKING:
    from ..record.model import Repetition


def _goodput(r: Repetition, _sel: Select) -> float | None:
    return r.goodput_mbps


def eq1_bytes(r: Repetition) -> float | None:
    """Eq (1) for this repetition: the configured rates of the paths its subflows used
    (Subflow.path_rate_mbps) x the largest RTT the capture measured on them (rtt_min_ms:
    the base RTT, without the queue the transfer built) x 2. None without a rate or an
    RTT on every path."""
    rates: dict[str, float] = {}
    rtts: list[float] = []
    for s in r.subflows:
        if s.path is None or not s.bytes:
            continue
        if s.path_rate_mbps is None or s.rtt_min_ms is None:
            return None
        rates[s.path] = s.path_rate_mbps * 1e6
        rtts.append(s.rtt_min_ms / 1000.0)
    return eq1_required_bytes(list(rates.values()), rtts)


def _eq1(r: Repetition, _sel: Select) -> float | None:
    return eq1_bytes(r)


def _eq1_ratio(r: Repetition, sel: Select) -> float | None:
    # the flow's send buffer as its kind reports it (the latency kind: getsockopt's read-back)
    buf = METRICS["sndbuf_effective_bytes"].per_rep(r, sel)
    need = eq1_bytes(r)
    if buf is None or not need:
        return None
    return buf / need


def _probes(r: Repetition) -> dict[str, Any]:
    extra = r.model_extra or {}
    p = extra.get("probes")
    return p if isinstance(p, dict) else {}


def _nstat_retrans(r: Repetition, _sel: Select) -> float | None:
    nstat = _probes(r).get("nstat")
    if not isinstance(nstat, dict):
        return None  # no nstat probe in this repetition
    # the record keeps the MPTcpExt counters that moved, per node; only the data sender
    # retransmits at the MPTCP level, so the sum over the end nodes is the sender's count
    return float(sum(int(c.get("MPTcpExtMPTCPRetrans", 0)) for c in nstat.values() if isinstance(c, dict)))


def _reductions(key: str) -> Callable[[Repetition, Select], float | None]:
    def per_rep(r: Repetition, sel: Select) -> float | None:
        tp = _probes(r).get("tcp_probe")
        counts = tp.get("cwnd_reductions") if isinstance(tp, dict) else None
        if not isinstance(counts, dict):
            return None  # no tcp_probe probe, or a run before this count existed
        mine = [c for c in counts.values() if sel.path is None or c.get("path") == sel.path]
        if any(c.get("samples", 0) == 0 for c in mine):
            return None  # a subflow without tcp_probe samples: its reductions are unknown
        return float(sum(int(c.get(key, 0)) for c in mine))
    return per_rep


register("goodput_min_mbps", _goodput)
register("goodput_max_mbps", _goodput)
register("goodput_sd_mbps", _goodput)
register("eq1_required_bytes", _eq1)
register("eq1_buffer_ratio", _eq1_ratio)
register("mptcp_retransmissions", subflow_sum("mptcp_retransmissions"))
register("nstat_mptcp_retrans", _nstat_retrans)
register("tcp_retransmissions", subflow_sum("retransmissions"))
register("cwnd_reductions", _reductions("reductions"))
register("cwnd_reductions_no_loss", _reductions("without_loss"))
