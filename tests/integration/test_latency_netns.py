"""mptcplab-latency with real traffic: two namespaces over a veth pair shaped to
100 Mbit/s (tbf) and 10 ms one way (the NFQUEUE delay line), about 20 s in all.

What must hold whatever the load: no block arrives sooner than the link's one-way
delay (the clock is shared), MPTCP is really used (MPTCP_INFO answers and says no
fallback), a locked send buffer reads back as the kernel's doubled value and does not
grow, the paced sender keeps its rate, and a starved sender reports blocked time.
Timing bounds above the minimum are loose on purpose (2 shared cores).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from mptcplab.emulation.base import repo_root
from mptcplab.emulation.linkmodel import LinkShape
from mptcplab.emulation.nfqueue import NfqueueEmulator
from mptcplab.emulation.testline import ADDR, TwoNodeLine
from mptcplab.supervise import Supervisor
from mptcplab.tools.latency import (
    LatencyFiles,
    LatencyParams,
    analyze,
    client_argv,
    expected_locked_buffer,
    server_argv,
)
from mptcplab.tools.latency.run import Prefix, run_pair

ONE_WAY_MS = 10.0
TOOLS = ("ip", "iptables", "ethtool", "make", "cc")
pytestmark = [
    pytest.mark.netns,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root"),
    pytest.mark.skipif(any(shutil.which(t) is None for t in TOOLS), reason=f"needs {', '.join(TOOLS)}"),
]


def _build() -> tuple[Path, Path]:
    native = repo_root() / "native"
    p = subprocess.run(["make", "-C", str(native)], capture_output=True, text=True, timeout=180, check=False)
    if p.returncode != 0:
        pytest.skip(f"cannot build the native tools: {p.stderr[-300:]}")
    return native / "build" / "mptcplab-delayline", native / "build" / "mptcplab-latency"


@pytest.fixture(scope="module")
def binaries() -> tuple[Path, Path]:
    return _build()


@pytest.fixture(scope="module")
def line(binaries: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwoNodeLine]:
    """One shaped line for the module: the delay lines are supervised for its lifetime and
    everything (processes, namespaces) goes away even when a test fails."""
    work = tmp_path_factory.mktemp("latline")
    ln = TwoNodeLine(mtu=1500)
    sup = Supervisor(ln.host_argv, work / "logs")
    try:
        shape = LinkShape.parse(rate="100mbit", delay=f"{ONE_WAY_MS:g}ms", queue="20ms")
        ln.apply(NfqueueEmulator(binary=binaries[0]), shape, shape, work, sup)
        yield ln
        sup.check()  # a delay line that died would make every number above meaningless
    finally:
        sup.close()
        ln.close()


def _in(line: TwoNodeLine, node: str) -> Prefix:
    def prefix(argv: Sequence[str]) -> list[str]:
        return line.host_argv(node, argv)
    return prefix


def _free_port() -> int:
    """A port free on the host's loopback now: the tests without namespaces share the root
    namespace with every other run on the machine, where a fixed port may be taken."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wmem_max(line: TwoNodeLine) -> int:
    return int(line.sh("a", "cat", "/proc/sys/net/core/wmem_max").stdout)


def test_paced_mptcp_delays_rate_and_locked_sndbuf(line: TwoNodeLine, binaries: tuple[Path, Path],
                                                      tmp_path: Path) -> None:
    rate = 20e6  # well under the link: delays should sit near the one-way delay
    p = LatencyParams(server_address=ADDR["b"], port=5411, rate_bps=rate, duration_s=3.0, sndbuf=200_000)
    files = LatencyFiles.in_dir(tmp_path, "paced")
    out = run_pair(p, files, _in(line, "b"), _in(line, "a"), binary=binaries[1])
    assert out.ok, (out.server_stderr, out.client_stderr)
    r = analyze(files)
    assert r.errors == []

    # MPTCP really carried it, on both ends
    for end in (r.client, r.server):
        assert end.protocol == "mptcp" and end.mptcp_active is True, end.raw
        assert end.mptcp_info is not None and end.mptcp_fallback is False, end.raw
        assert end.subflow_count is not None and end.subflow_count >= 1
    assert r.client.mptcp_info is not None and r.client.mptcp_info.get("bytes_acked", r.client.bytes) == r.client.bytes

    # every block arrived, in order, none twice
    assert r.server.blocks == r.client.blocks == len(r.blocks) > 0
    assert (r.blocks["seq"].diff().dropna() == 1).all()

    # the shared clock: nothing beats the link's one-way delay
    assert r.delay.min_ms >= ONE_WAY_MS - 0.2, r.delay
    # and the bulk of blocks sees about that delay (8 KB at 100 Mbit/s adds 0.7 ms); loose for load
    assert r.delay.p50_ms <= ONE_WAY_MS + 40, r.delay
    assert r.pdf["fraction"].sum() == pytest.approx(1.0)

    # the locked buffer: setsockopt(200000) reads back doubled (capped by wmem_max) and never grows
    want = expected_locked_buffer(200_000, cap=_wmem_max(line))
    assert r.client.sndbuf is not None
    assert r.client.sndbuf.requested == 200_000
    assert r.client.sndbuf.after_setsockopt == r.client.sndbuf.established == r.client.sndbuf.at_end == want

    # the application rate: paced, within 5% (the schedule is absolute, so late wake-ups catch up)
    assert r.rate.sent_bps == pytest.approx(rate, rel=0.05), r.rate
    assert r.rate.received_bps == pytest.approx(rate, rel=0.15), r.rate
    assert r.client.blocks == pytest.approx(3.0 * p.rate_blocks, rel=0.05)  # type: ignore[operator]


def test_tcp_with_tiny_sndbuf_is_blocked(line: TwoNodeLine, binaries: tuple[Path, Path], tmp_path: Path) -> None:
    """Bulk over a 20 ms RTT with a 16 KB send buffer: the buffer cannot fill the pipe, so
    the sender spends most of its time waiting for buffer space, and says so."""
    p = LatencyParams(server_address=ADDR["b"], port=5412, mptcp=False, duration_s=2.0, sndbuf=8192)
    files = LatencyFiles.in_dir(tmp_path, "tcp")
    out = run_pair(p, files, _in(line, "b"), _in(line, "a"), binary=binaries[1])
    assert out.ok, (out.server_stderr, out.client_stderr)
    r = analyze(files)
    assert r.client.protocol == "tcp" and r.client.mptcp_active is False and r.client.mptcp_info is None
    assert r.client.tcp_info is not None and r.client.tcp_info["rtt_us"] >= 2 * ONE_WAY_MS * 1000 * 0.9
    assert r.delay.min_ms >= ONE_WAY_MS - 0.2, r.delay
    # far below the 100 Mbit/s link (measured ~20 Mbit/s: the kernel lets the in-flight data
    # exceed sk_sndbuf somewhat, so not 16 KB per RTT exactly), and the kernel agrees why
    assert r.rate.received_bps < 50e6, r.rate
    assert r.client.tcp_info["sndbuf_limited_us"] > 0
    # nearly all the time waiting; only some blocks wait (one wait per freed window, then
    # several blocks go out at once: measured 11% of the blocks)
    assert r.blocked.share > 0.5, r.blocked
    assert 0 < r.blocked.blocked_blocks < r.blocked.blocks, r.blocked


def _wait_receiving(line: TwoNodeLine, node: str, port: int, least: int, client: subprocess.Popen[str],
                    timeout: float = 30) -> None:
    """Until the listener's side of the connection on `port` in `node` has received `least` bytes."""
    deadline = time.monotonic() + timeout
    while True:
        out = line.sh(node, "ss", "-Htin", "state", "established", f"( sport = :{port} )", check=False).stdout
        if sum(int(n) for n in re.findall(r"bytes_received:(\d+)", out)) >= least:
            return
        assert client.poll() is None, f"the client exited (rc {client.returncode}) before sending"
        assert time.monotonic() < deadline, f"no {least} bytes received on port {port} in {timeout:g} s: {out}"
        time.sleep(0.1)


def test_interrupted_client_writes_its_summary(line: TwoNodeLine, binaries: tuple[Path, Path],
                                               tmp_path: Path) -> None:
    """SIGINT (how the engine stops a flow early) ends both sides cleanly, on a block boundary."""
    p = LatencyParams(server_address=ADDR["b"], port=5413, duration_s=30.0, rate_bps=10e6)
    files = LatencyFiles.in_dir(tmp_path, "stop")
    server = subprocess.Popen(line.host_argv("b", server_argv(p, files, binaries[1])), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    client: subprocess.Popen[str] | None = None
    try:
        assert server.stdout is not None and server.stdout.readline().strip() == "ready"
        client = subprocess.Popen(line.host_argv("a", client_argv(p, files, binaries[1])), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        # SIGINT once blocks flow, not after a fixed sleep: before the connection is up it
        # interrupts connect() and the server waits for a client that never comes
        _wait_receiving(line, "b", p.port, p.block_bytes, client)
        client.send_signal(signal.SIGINT)  # ip netns exec passes it on (exec, same process)
        assert client.wait(timeout=15) == 0, client.communicate()[1]
        assert server.wait(timeout=15) == 0, server.communicate()[1]
    finally:
        for proc in (client, server):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.communicate(timeout=5)
    r = analyze(files)
    assert r.client.interrupted is True and r.errors == []
    assert r.server.eof is True and r.server.partial_block is False
    assert 0 < r.client.blocks == r.server.blocks < p.rate_blocks * 30  # type: ignore[operator]


def test_loopback_without_shaping_counts_every_block(binaries: tuple[Path, Path], tmp_path: Path) -> None:
    """The binary on its own (no namespaces): a byte count rounds up to whole blocks,
    odd block sizes reassemble, and records match the summaries."""
    p = LatencyParams(server_address="127.0.0.1", port=_free_port(), block_bytes=1000, bytes_total=1_000_500)
    files = LatencyFiles.in_dir(tmp_path, "lo")

    def same(argv: Sequence[str]) -> list[str]:
        return list(argv)

    out = run_pair(p, files, same, same, binary=binaries[1], timeout_s=30)
    assert out.ok, (out.server_stderr, out.client_stderr)
    r = analyze(files)
    assert r.client.blocks == r.server.blocks == len(r.blocks) == 1001
    assert r.server.bytes == 1001 * 1000
    assert r.delay.min_ms >= 0


def test_second_subflow_is_reported(line: TwoNodeLine, binaries: tuple[Path, Path], tmp_path: Path) -> None:
    """A second address on the client as a `subflow` endpoint: the join is answered (the
    server keeps its listener open for it), both ends' MPTCP_INFO count two subflows and
    the per-subflow TCP_INFO lists both, with the data spread over them."""
    extra = "10.77.0.3"
    line.sh("a", "ip", "addr", "add", f"{extra}/24", "dev", "eth0")
    line.sh("a", "ip", "mptcp", "endpoint", "add", extra, "dev", "eth0", "subflow")
    for n in ("a", "b"):
        line.sh(n, "ip", "mptcp", "limits", "set", "subflows", "2")
    p = LatencyParams(server_address=ADDR["b"], bind=ADDR["a"], port=5415, duration_s=2.0)
    files = LatencyFiles.in_dir(tmp_path, "two")
    try:
        out = run_pair(p, files, _in(line, "b"), _in(line, "a"), binary=binaries[1])
    finally:
        line.sh("a", "ip", "mptcp", "endpoint", "flush")
    assert out.ok, (out.server_stderr, out.client_stderr)
    r = analyze(files)
    for end in (r.client, r.server):
        assert end.subflow_count == 2 and len(end.subflows) == 2, end.raw
    assert {sf.local.rsplit(":", 1)[0] for sf in r.client.subflows} == {ADDR["a"], extra}
    assert {sf.remote.rsplit(":", 1)[0] for sf in r.server.subflows} == {ADDR["a"], extra}
    # each subflow carried data, and together their acknowledged bytes cover the connection's
    # (MPTCP-level retransmissions can only add). TCP_INFO is read as the client ends, when the
    # last segments' ACKs may still be on the way: CI under load read 1,310 bytes short of
    # 27,467,776, so the cover is checked to 1%; and the receiver got every block
    acked = [sf.tcp_info["bytes_acked"] for sf in r.client.subflows]
    assert min(acked) > 0 and sum(acked) >= 0.99 * r.client.bytes, (acked, r.client.bytes)
    assert r.server.blocks == r.client.blocks == len(r.blocks) > 0
    assert r.delay.min_ms >= ONE_WAY_MS - 0.2, r.delay


def test_fallback_to_tcp_is_visible(binaries: tuple[Path, Path], tmp_path: Path) -> None:
    """An MPTCP client against a plain-TCP server falls back: the data still arrives, and
    the client's summary says it was not MPTCP (what a lab must not count as MPTCP)."""
    files = LatencyFiles.in_dir(tmp_path, "fb")
    port = _free_port()
    srv = LatencyParams(server_address="127.0.0.1", port=port, mptcp=False, blocks=50)
    cli = LatencyParams(server_address="127.0.0.1", port=port, mptcp=True, blocks=50)
    server = subprocess.Popen(server_argv(srv, files, binaries[1]), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    try:
        assert server.stdout is not None and server.stdout.readline().strip() == "ready"
        c = subprocess.run(client_argv(cli, files, binaries[1]), capture_output=True, text=True, timeout=30,
                           check=False)
        assert c.returncode == 0, c.stderr
        assert server.wait(timeout=15) == 0
    finally:
        if server.poll() is None:
            server.kill()
        server.communicate(timeout=5)
    r = analyze(files)
    assert r.client.protocol == "mptcp" and r.client.mptcp_active is False and r.client.mptcp_fallback is True
    assert r.server.blocks == 50
