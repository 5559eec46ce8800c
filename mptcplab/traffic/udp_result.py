"""The udp kind's numbers in the record (FlowResult.udp; traffic/udp.py reads them)."""

from __future__ import annotations

from ..values.types import Lenient


class UdpMetrics(Lenient):
    """iperf3's UDP report, as the receiver counted it."""

    packets: int | None = None
    sent_packets: int | None = None
    lost_packets: int | None = None
    lost_percent: float | None = None
    jitter_ms: float | None = None
