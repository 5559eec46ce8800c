"""A byte-count upload stopped at its duration limit: the client's JSON (interrupted) counts
0 bytes received, the server's JSON has the receiver's count (traffic/iperf3.receiver_count)."""

from __future__ import annotations

import json
from pathlib import Path

from mptcplab.traffic.base import Outcome
from mptcplab.traffic.iperf3 import read_iperf3, receiver_count


def _write(path: Path, *, received: int, recv_seconds: float, sent_seconds: float = 0.0, sent_bps: float = 0.0) -> Path:
    # the shape iperf3 3.12 writes (only the fields read_iperf3 and receiver_count look at)
    path.write_text(json.dumps({"start": {}, "intervals": [], "end": {
        "sum_sent": {"bytes": 0, "seconds": sent_seconds, "bits_per_second": sent_bps, "retransmits": 3},
        "sum_received": {"bytes": received, "seconds": recv_seconds,
                         "bits_per_second": received * 8 / recv_seconds if recv_seconds else 0},
        "cpu_utilization_percent": {"host_total": 12.0, "remote_total": 4.0}}}))
    return path


def _client(tmp_path: Path) -> tuple[Outcome, Path]:
    # an interrupted client: it sent for 9.907 s and never got the server's count
    path = _write(tmp_path / "iperf3.json", received=0, recv_seconds=9.97, sent_seconds=9.906877, sent_bps=96e6)
    r = read_iperf3(path)
    assert r.goodput_mbps == 0  # what the engine reported before
    return Outcome(goodput_mbps=r.goodput_mbps, sender_mbps=r.sender_mbps, retransmits=3, seconds=r.seconds,
                   metrics={"bytes_received": 0}), path


def test_stopped_client_takes_the_servers_bytes_over_its_own_time(tmp_path: Path) -> None:
    o, client_json = _client(tmp_path)
    # iperf3 3.12's server, its client gone mid-interval: the bytes of 9.9 s over "9.0 s"
    # (measured on a 100 Mbit/s link: 105 Mbit/s, more than the link carries)
    server = _write(tmp_path / "iperf3-server-main.json", received=118_688_528, recv_seconds=9.00033)
    out = receiver_count(o, client_json, server)
    assert out.goodput_mbps is not None and abs(out.goodput_mbps - 95.843) < 0.01
    assert out.seconds == 9.906877
    assert out.metrics == {"bytes_received": 118_688_528, "counted_by": "server"}
    assert out.sender_mbps == 96.0 and out.retransmits == 3  # the sender's own numbers stay


def test_without_the_clients_time_the_servers_is_used(tmp_path: Path) -> None:
    o = Outcome(goodput_mbps=0.0, metrics={"bytes_received": 0})
    server = _write(tmp_path / "s.json", received=119_472_672, recv_seconds=10.000081)
    out = receiver_count(o, tmp_path / "no-client.json", server)
    assert out.goodput_mbps is not None and abs(out.goodput_mbps - 95.577) < 0.01


def test_no_server_count_keeps_the_client(tmp_path: Path) -> None:
    o, client_json = _client(tmp_path)
    assert receiver_count(o, client_json, tmp_path / "missing.json") is o
    assert receiver_count(o, client_json, _write(tmp_path / "s.json", received=0, recv_seconds=0.0)) is o
