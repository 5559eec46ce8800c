"""A byte-count upload stopped at its duration limit: the client's JSON (interrupted) counts
0 bytes received, the server's JSON has the receiver's count (traffic/iperf3.receiver_count)."""

from __future__ import annotations

import json
from pathlib import Path

from mptcplab.traffic.base import Outcome
from mptcplab.traffic.iperf3 import read_iperf3, receiver_count


def _write(path: Path, received: int, seconds: float, sent_bps: float) -> Path:
    # the shape iperf3 3.12 writes (only the fields read_iperf3 looks at)
    path.write_text(json.dumps({"start": {}, "intervals": [], "end": {
        "sum_sent": {"bytes": 0, "seconds": seconds, "bits_per_second": sent_bps, "retransmits": 3},
        "sum_received": {"bytes": received, "seconds": seconds,
                         "bits_per_second": received * 8 / seconds if seconds else 0},
        "cpu_utilization_percent": {"host_total": 12.0, "remote_total": 4.0}}}))
    return path


def test_stopped_client_takes_the_servers_count(tmp_path: Path) -> None:
    client = read_iperf3(_write(tmp_path / "iperf3.json", 0, 9.97, 96e6))
    assert client.goodput_mbps == 0  # what the engine reported before: an interrupted client
    o = Outcome(goodput_mbps=client.goodput_mbps, sender_mbps=client.sender_mbps, retransmits=3,
                seconds=client.seconds, metrics={"bytes_received": 0})
    out = receiver_count(o, _write(tmp_path / "iperf3-server-main.json", 119_472_672, 10.000081, 0))
    assert out.goodput_mbps is not None and abs(out.goodput_mbps - 95.577) < 0.01
    assert out.metrics == {"bytes_received": 119_472_672, "counted_by": "server"}
    assert out.sender_mbps == 96.0 and out.retransmits == 3  # the sender's own numbers stay


def test_no_server_count_keeps_the_client(tmp_path: Path) -> None:
    o = Outcome(goodput_mbps=0.0, metrics={"bytes_received": 0})
    assert receiver_count(o, tmp_path / "missing.json") is o
    assert receiver_count(o, _write(tmp_path / "s.json", 0, 0.0, 0)) is o
