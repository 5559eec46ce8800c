"""How the iperf3 kind's metric is computed (declared with the generic ones in metricdecl.py:
it reads FlowResult's own numbers, which iperf3 reports; traffic/kind_metrics.py: registered
by metrics/)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .kind_metrics import FlowMetric

if TYPE_CHECKING:
    from ..record.model import FlowResult


def _client_cpu_per_gbit(f: FlowResult) -> float | None:
    # iperf3's own process CPU at the client (getrusage, user + system, % of one core over the
    # test) per Gbit/s of goodput; a download's client is the data receiver. Relative only:
    # softirq work lands on whichever process the CPU was running (on veth often the sender),
    # and 2 shared cores carry every other process of the machine too.
    if not f.goodput_mbps or f.kind != "iperf3":
        return None
    cpu = f.cpu.get("client")
    return None if cpu is None else cpu / (f.goodput_mbps / 1000.0)


FLOW_METRICS: dict[str, FlowMetric] = {"client_cpu_per_gbit": _client_cpu_per_gbit}
