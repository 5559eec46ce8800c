"""A link taken down at one end only (``link_down`` with ``ends: one``), as mptcp_join.sh's
link_failure does (``ip -net ns1 link set ns1ethN down``), verified from the capture:

    client:eth1 (path A, 10 Mbit/s) -- server:eth1
    client:eth2 (path B, 10 Mbit/s) -- server:eth2     <- server:eth2 down at 1.5 s, up at 2.5 s

MPTCP upload (iperf3, 7 s), the client's subflow endpoint on eth2. The server's end goes
down; the client's end (the peer) only loses carrier. The capture at client:eth2 shows path B
carrying data before the event, not a TCP packet while the server's end is down, and data
again after the server's end alone is brought up: the client's interface was never taken
down (no command touched it, commands.log) and carries the subflow again once the carrier is
back. Path A carries the connection through the outage.

One quick run of one scenario (about 15 s); the engine removes its namespaces (their names
unique per run) even when the traffic fails, which run_quick asserts.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from .labkit import ran_events, run_scenario

pytestmark = pytest.mark.netns

DOWN, UP = 1.5, 2.5
TOPO = {"nodes": {n: {"kind": "linux", "image": "mptcplab/host:latest"} for n in ("client", "server")},
        "links": [{"endpoints": ["client:eth1", "server:eth1"]}, {"endpoints": ["client:eth2", "server:eth2"]}]}
ADDR = {"client:eth1": "10.0.1.2", "client:eth2": "10.0.2.2", "server:eth1": "10.0.1.1", "server:eth2": "10.0.2.1"}

EXP: dict[str, Any] = {
    "paths": {"A": "client:eth1", "B": "client:eth2"},
    "addressing": {"addresses": {ep: f"{ip}/24" for ep, ip in ADDR.items()}},
    # a rate on both ends: the tbf qdisc the kernel deactivates with the carrier
    "links": {"client:eth1": {"rate": "10mbit"}, "client:eth2": {"rate": "10mbit"}},
    "nodes": {
        "client": {"role": "host", "mptcp": {"limits": {"subflows": 2, "add_addr_accepted": 0},
                                             "endpoints": [{"address": "client:eth2", "flags": ["subflow"]}]}},
        "server": {"role": "host", "mptcp": {"limits": {"subflows": 2, "add_addr_accepted": 0}}},
    },
    "traffic": {
        "flows": {"main": {"client": "client", "server": "server", "server_address": "server:eth1",
                           "bind": "client:eth1", "mptcp": True, "duration": "7s", "cc": "cubic"}},
        "events": [{"at": DOWN, "action": "link_down", "link": "server:eth2", "ends": "one"},
                   {"at": UP, "action": "link_up", "link": "server:eth2", "ends": "one"}]},
    "capture": [{"point": "client:eth1"}, {"point": "client:eth2"}],
    "calibration": {"enabled": False},
    "quick": {"duration": "7s", "repetitions": 1},
    "scenarios": [{"name": "one-end", "description": "server:eth2 down at 1.5 s, up at 2.5 s, this end only"}],
}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    return run_scenario(tmp_path_factory.mktemp("linkdown1"), "linkdown1", TOPO, EXP, "one-end")


def segments(pcap: Path, src: str) -> list[tuple[float, int]]:
    """(epoch time, TCP payload length) of every TCP packet from ``src`` in the capture."""
    argv = ["tshark", "-r", str(pcap), "-Y", f"ip.src == {src} && tcp", "-T", "fields",
            "-e", "frame.time_epoch", "-e", "tcp.len"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True).stdout
    return [(float(t), int(n)) for t, n in (line.split("\t") for line in out.splitlines() if line.strip())]


def test_only_the_named_end_was_taken_down_and_up(run: tuple[Path, dict[str, Any]]) -> None:
    run_dir, r = run
    ev = ran_events(run_dir, "one-end")
    for action, verb in (("link_down", "down"), ("link_up", "up")):
        row = ev[action]
        assert row["target"] == "server:eth2 this end only" and row["link"] == "server:eth2", row
        cmds = row["commands"].split(" ; ")
        assert len(cmds) == 1 and cmds[0].endswith(f"link set dev eth2 {verb}") and "-server " in cmds[0], cmds
    log = (run_dir / r["dir"] / "commands.log").read_text()
    assert "-server link set dev eth2 down" in log
    assert not [ln for ln in log.splitlines() if "-client" in ln and "link set dev eth2 down" in ln]


def test_path_b_stops_while_the_server_end_is_down_and_carries_data_again_after(
        run: tuple[Path, dict[str, Any]]) -> None:
    run_dir, r = run
    rep = run_dir / r["dir"]
    ev = ran_events(run_dir, "one-end")
    down_done = float(ev["link_down"]["epoch_s"]) + float(ev["link_down"]["duration_ms"]) / 1000
    up_at = float(ev["link_up"]["epoch_s"])
    b = rep / "capture-client-eth2.pcap"
    data = [(t, n) for t, n in segments(b, ADDR["client:eth2"]) if n > 0]
    assert sum(n for t, n in data if t < down_done) > 200_000, "path B carried no data before the event"
    # nothing comes back over the link while the server's end is down. The client's own
    # retransmissions may still show in its capture for up to a second: the packet tap sees
    # them before the veth drops them, until the kernel's link watch (which runs up to 1 s
    # after the carrier goes) swaps in the qdisc that drops them earlier
    back = [t for t, _ in segments(b, ADDR["server:eth2"]) if down_done + 0.1 < t < up_at]
    assert back == [], f"{len(back)} TCP packets from server:eth2 on path B while it was down"
    sent = [t for t, _ in segments(b, ADDR["client:eth2"]) if down_done + 0.1 < t < up_at]
    assert all(t < down_done + 1.1 for t in sent), f"the client's end sent on path B {sent} after its carrier went"
    # the client's end was never taken down: once the server's end is up, the subflow sends again
    after = sum(n for t, n in data if t > up_at)
    assert after > 100_000, f"path B carried {after} bytes after the link_up"
    # the connection went on over path A meanwhile
    a = [(t, n) for t, n in segments(rep / "capture-client-eth1.pcap", ADDR["client:eth1"]) if n > 0]
    assert sum(n for t, n in a if down_done + 0.1 < t < up_at) > 100_000


def test_the_analysis_sees_both_subflows(run: tuple[Path, dict[str, Any]]) -> None:
    _, r = run
    assert r["mptcp"]["verified"], r["warnings"]
    for path in ("A", "B"):
        assert [s for s in r["subflows"] if s["path"] == path and s["established"] and (s["bytes"] or 0) > 0], \
            (path, r["subflows"])
    assert not [w for w in r["warnings"] if "NEVER FORMED" in w], r["warnings"]
