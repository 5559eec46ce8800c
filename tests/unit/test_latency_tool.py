"""The latency tool's Python side without a network: argument lists, parameter
validation, the record and summary readers, and the analysis on known data; plus
the native binary's argument checks (no root)."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from mptcplab.emulation.base import repo_root
from mptcplab.tools.latency import (
    LatencyFiles,
    LatencyFormatError,
    LatencyParams,
    analyze,
    blocked_stats,
    client_argv,
    commands,
    delay_pdf,
    delay_stats,
    expected_locked_buffer,
    rate_stats,
    read_receiver_records,
    read_sender_records,
    read_summary,
    server_argv,
)
from mptcplab.tools.latency.read import RECV_DTYPE, SEND_DTYPE

BIN = Path("/opt/mptcplab-latency")
FILES = LatencyFiles.in_dir(Path("/r"), "f1")


def _after(argv: tuple[str, ...], flag: str) -> str:
    return argv[argv.index(flag) + 1]


# -- argument lists -----------------------------------------------------------

def test_default_argv_is_mptcp_bulk_autotuned() -> None:
    p = LatencyParams(server_address="10.0.0.2")
    s, c = server_argv(p, FILES, BIN), client_argv(p, FILES, BIN)
    assert s[:2] == (str(BIN), "server") and c[:2] == (str(BIN), "client")
    assert _after(s, "--listen") == "10.0.0.2" and _after(c, "--connect") == "10.0.0.2"
    assert _after(s, "--port") == _after(c, "--port") == "5301"
    for argv in (s, c):
        assert "--tcp" not in argv  # MPTCP unless asked otherwise
        assert not {"--sndbuf", "--rcvbuf", "--force-buffers"} & set(argv)  # autotuning
    assert not {"--rate-bps", "--rate-blocks", "--duration", "--blocks", "--bytes", "--bind"} & set(c)
    assert _after(s, "--json") == "/r/f1.server.json" and _after(s, "--records") == "/r/f1.recv.bin"
    assert _after(c, "--json") == "/r/f1.client.json" and _after(c, "--records") == "/r/f1.send.bin"
    assert _after(c, "--block") == "8192"


def test_argv_with_everything() -> None:
    p = LatencyParams(server_address="10.0.0.2", listen_address="0.0.0.0", port=6000, mptcp=False,
                      bind="10.0.1.1", block_bytes=1000, duration_s=2.5, rate_bps=12_345_678, sndbuf=200_000,
                      rcvbuf=300_000, client_rcvbuf=1000, server_sndbuf=2000, force_buffers=True)
    s, c = server_argv(p, FILES, BIN), client_argv(p, FILES, BIN)
    assert _after(s, "--listen") == "0.0.0.0" and "--tcp" in s and "--tcp" in c
    # each end gets its own buffers: the paper's send buffer is the client's, its receive buffer the server's
    assert _after(s, "--rcvbuf") == "300000" and _after(s, "--sndbuf") == "2000"
    assert _after(c, "--sndbuf") == "200000" and _after(c, "--rcvbuf") == "1000"
    assert "--force-buffers" in s and "--force-buffers" in c
    assert _after(c, "--bind") == "10.0.1.1"
    assert _after(c, "--rate-bps") == "12345678"  # exact, not 1.23457e+07
    assert _after(c, "--duration") == "2.5"
    assert p.rate_blocks == pytest.approx(12_345_678 / 8000)


def test_commands_carry_nodes_and_reasons() -> None:
    p = LatencyParams(server_address="10.0.0.2", rate_blocks_per_s=100)
    srv, cli = commands(p, FILES, "server", "client", BIN)
    assert srv.node == "server" and cli.node == "client"
    assert srv.argv == server_argv(p, FILES, BIN) and cli.argv == client_argv(p, FILES, BIN)
    assert "MPTCP" in cli.why and "100 blocks/s" in cli.why
    assert cli.render().startswith("[client] /opt/mptcplab-latency client --connect 10.0.0.2")


def test_force_without_buffers_adds_nothing() -> None:
    p = LatencyParams(server_address="10.0.0.2", force_buffers=True)
    assert "--force-buffers" not in client_argv(p, FILES, BIN)


def test_argv_needs_no_binary_for_the_dry_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MPTCPLAB_LATENCY", "/nonexistent/mptcplab-latency")
    argv = client_argv(LatencyParams(server_address="10.0.0.2", blocks=5), FILES)
    assert argv[0] == "/nonexistent/mptcplab-latency" and _after(argv, "--blocks") == "5"


@pytest.mark.parametrize("kwargs, match", [
    ({"server_address": "server"}, "not an IP address"),
    ({"server_address": "10.0.0.2", "bind": "eth0"}, "not an IP address"),
    ({"server_address": "10.0.0.2", "port": 0}, "port"),
    ({"server_address": "10.0.0.2", "block_bytes": 31}, "block_bytes"),
    ({"server_address": "10.0.0.2", "blocks": 3, "bytes_total": 10}, "exclude"),
    ({"server_address": "10.0.0.2", "rate_bps": 1e6, "rate_blocks_per_s": 10}, "exclude"),
    ({"server_address": "10.0.0.2", "rate_bps": 0}, "rate_bps"),
    ({"server_address": "10.0.0.2", "duration_s": math.inf}, "duration_s"),
    ({"server_address": "10.0.0.2", "sndbuf": -1}, "sndbuf"),
])
def test_bad_params(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        LatencyParams(**kwargs)


def test_expected_duration() -> None:
    assert LatencyParams(server_address="10.0.0.2").expected_duration_s == 10.0
    assert LatencyParams(server_address="10.0.0.2", blocks=100, rate_blocks_per_s=50).expected_duration_s == 2.0
    assert LatencyParams(server_address="10.0.0.2", bytes_total=8193, rate_blocks_per_s=1).expected_duration_s == 2.0
    assert LatencyParams(server_address="10.0.0.2", blocks=100).expected_duration_s is None  # bulk: unknown


# -- records --------------------------------------------------------------------

def _write(path: Path, magic: bytes, dtype: np.dtype[Any], rows: Sequence[tuple[int, ...]], tail: bytes = b"") -> Path:
    a = np.array(rows, dtype=dtype)
    path.write_bytes(magic + dtype.itemsize.to_bytes(4, "little") + bytes(4) + a.tobytes() + tail)
    return path


def test_receiver_records(tmp_path: Path) -> None:
    t0 = 1_700_000_000_000_000_000
    rows = [(0, t0, t0 + 1_000_000, t0 + 11_000_000), (1, t0 + 5_000_000, t0 + 5_000_000, t0 + 17_500_000)]
    df = read_receiver_records(_write(tmp_path / "r.bin", b"MPLTRCV1", RECV_DTYPE, rows, tail=b"\x01\x02\x03"))
    assert list(df["seq"]) == [0, 1]  # the partial tail record is dropped
    assert list(df["delay_ms"]) == [10.0, 12.5]
    assert list(df["sched_delay_ms"]) == [11.0, 12.5]


def test_sender_records(tmp_path: Path) -> None:
    rows = [(0, 100, 100, 2_000_100, 1_500_000), (1, 1_000_000, 3_000_000, 3_000_500, 0)]
    df = read_sender_records(_write(tmp_path / "s.bin", b"MPLTSND1", SEND_DTYPE, rows))
    assert list(df["blocked_ms"]) == [1.5, 0.0]
    assert list(df["write_ms"]) == [2.0, 0.0005]
    assert list(df["late_ms"]) == [0.0, 2.0]


def test_records_wrong_kind_or_size(tmp_path: Path) -> None:
    p = _write(tmp_path / "s.bin", b"MPLTSND1", SEND_DTYPE, [(0, 0, 0, 0, 0)])
    with pytest.raises(LatencyFormatError, match="MPLTRCV1"):
        read_receiver_records(p)
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"MPLTRCV1" + (40).to_bytes(4, "little") + bytes(4))
    with pytest.raises(LatencyFormatError, match="40 bytes"):
        read_receiver_records(bad)


# -- analysis -------------------------------------------------------------------

def test_delay_stats_and_pdf() -> None:
    d = pd.Series([10.0 + i * 0.01 for i in range(100)] + [23.0])  # 100 blocks at ~10-11 ms, one at 23
    st = delay_stats(d)
    assert st.blocks == 101 and st.min_ms == 10.0 and st.max_ms == 23.0
    assert st.p50_ms == pytest.approx(10.5) and st.p99_ms == pytest.approx(10.99, abs=0.01)
    pdf = delay_pdf(d)
    assert list(pdf["bin_lo_ms"]) == [0.0, 5.0, 10.0, 15.0, 20.0]  # from 0, empty bins kept
    assert list(pdf["count"]) == [0, 0, 100, 0, 1]
    assert pdf["fraction"].sum() == pytest.approx(1.0)
    assert list(delay_pdf(pd.Series([4.99, 5.0]), bin_ms=5)["count"]) == [1, 1]  # [lo, hi)


def test_negative_delay_is_shown_not_hidden() -> None:
    pdf = delay_pdf(pd.Series([-1.0, 3.0]))
    assert list(pdf["bin_lo_ms"]) == [-5.0, 0.0] and list(pdf["count"]) == [1, 1]


def test_empty_analysis_is_nan_not_an_error() -> None:
    st = delay_stats(pd.Series([], dtype=float))
    assert st.blocks == 0 and math.isnan(st.p99_ms)
    assert len(delay_pdf(pd.Series([], dtype=float))) == 0
    with pytest.raises(ValueError):
        delay_pdf(pd.Series([1.0]), bin_ms=0)


def test_blocked_and_rate_stats() -> None:
    s = pd.DataFrame({"t_write_ns": [0, 10_000_000, 20_000_000, 30_000_000],
                      "t_done_ns": [1_000_000, 15_000_000, 20_000_000, 40_000_000],
                      "blocked_ms": [0.0, 4.0, 0.0, 6.0]})
    b = blocked_stats(s)
    assert b.blocks == 4 and b.blocked_blocks == 2 and b.blocked_fraction == 0.5
    assert b.total_s == pytest.approx(0.010) and b.share == pytest.approx(0.010 / 0.040) and b.max_ms == 6.0
    assert blocked_stats(s, duration_s=1.0).share == pytest.approx(0.01)
    r = pd.DataFrame({"t_recv_ns": [5_000_000, 25_000_000, 45_000_000, 65_000_000]})
    rs = rate_stats(s, r, block_bytes=1000)
    assert rs.sent_blocks_per_s == pytest.approx(100.0) and rs.sent_bps == pytest.approx(800_000)
    assert rs.received_bps == pytest.approx(400_000)


def test_expected_locked_buffer() -> None:
    # what the kernel does with setsockopt(SO_SNDBUF, v): min(v, wmem_max) * 2, at least its minimum
    assert expected_locked_buffer(200_000, cap=4_194_304) == 400_000
    assert expected_locked_buffer(1_000_000, cap=212_992) == 425_984
    assert expected_locked_buffer(1_000_000, cap=212_992, forced=True) == 2_000_000
    assert expected_locked_buffer(100, cap=212_992, minimum=4608) == 4608


# -- summaries ------------------------------------------------------------------

CLIENT = {
    "tool": "mptcplab-latency", "version": 1, "role": "client", "protocol": "mptcp", "mptcp_active": True,
    "local": "10.0.0.1:40000", "remote": "10.0.0.2:5301",
    "sndbuf": {"requested": 100000, "forced": False, "after_setsockopt": 200000, "established": 200000,
               "at_end": 200000},
    "rcvbuf": {"requested": None, "forced": False, "after_setsockopt": 131072, "established": 131072,
               "at_end": 131072},
    "mode": "rate", "block_bytes": 1000, "rate_blocks_per_s": 100.0, "interrupted": False, "blocks": 4,
    "bytes": 4000, "start_ns": 0, "end_ns": 40_000_000, "duration_s": 0.04, "app_rate_bps": 800000.0,
    "blocked_ns_total": 10_000_000, "late_blocks": 0, "late_max_ns": 0, "drained": True, "drain_s": 0.001,
    "tcp_info": {"state": 1, "rtt_us": 20000},
    "mptcp_info": {"len": 96, "subflows": 1, "flags": 2, "bytes_acked": 4000, "subflows_total": 2},
    "subflows": [{"local": "10.0.0.1:40000", "remote": "10.0.0.2:5301", "tcp_info": {"rtt_us": 20000}},
                 {"local": "10.0.1.1:40001", "remote": "10.0.0.2:5301", "tcp_info": {"rtt_us": 60000}}],
    "error": None,
}


def test_summary_mptcp(tmp_path: Path) -> None:
    (tmp_path / "c.json").write_text(json.dumps(CLIENT))
    s = read_summary(tmp_path / "c.json")
    assert s.error is None and s.role == "client" and s.mptcp_fallback is False and s.subflow_count == 2
    assert s.sndbuf is not None and s.sndbuf.requested == 100000 and s.sndbuf.at_end == 200000
    assert s.rcvbuf is not None and s.rcvbuf.requested is None
    assert [sf.tcp_info["rtt_us"] for sf in s.subflows] == [20000, 60000]
    # an older kernel's MPTCP_INFO has no subflows_total: `subflows` counts the joins only
    old = dict(CLIENT, mptcp_info={"len": 44, "subflows": 1, "flags": 2})
    assert read_summary(_dump(tmp_path / "o.json", old)).subflow_count == 2



def test_a_buffer_below_the_kernels_double_of_the_request_is_a_warning() -> None:
    from mptcplab.tools.latency.read import parse_summary
    from mptcplab.traffic.latency import buffer_notes

    server = parse_summary(dict(CLIENT, role="server"))
    assert buffer_notes(parse_summary(CLIENT), server) == []          # 100000 -> 200000: as asked
    capped = dict(CLIENT, sndbuf={"requested": 524288, "forced": False, "after_setsockopt": 425984,
                                  "established": 425984, "at_end": 425984})
    ((code, message),) = buffer_notes(parse_summary(capped), server)
    assert code == "buffer-not-as-requested"
    assert "SO_SNDBUF of 524288 bytes reads back as 425984, not 1048576 (capped by net.core.wmem_max)" in message
    rcv = dict(CLIENT, role="server", rcvbuf={"requested": 100000, "forced": True, "after_setsockopt": -1,
                                              "established": -1, "at_end": -1})
    ((_, message),) = buffer_notes(parse_summary(CLIENT), parse_summary(rcv))
    assert "server's SO_RCVBUF of 100000 bytes reads back as -1, not 200000 (forced)" in message

def test_summary_fallback_and_tcp(tmp_path: Path) -> None:
    fb = dict(CLIENT, mptcp_active=False, mptcp_info=None, subflows=None)
    assert read_summary(_dump(tmp_path / "f.json", fb)).mptcp_fallback is True
    tcp = dict(CLIENT, protocol="tcp", mptcp_active=False, mptcp_info=None)
    assert read_summary(_dump(tmp_path / "t.json", tcp)).mptcp_fallback is None


def test_summary_errors(tmp_path: Path) -> None:
    err = {"tool": "mptcplab-latency", "version": 1, "role": "client", "error": "connect 10.0.0.2:5301: refused"}
    s = read_summary(_dump(tmp_path / "e.json", err))
    assert s.error == "connect 10.0.0.2:5301: refused" and s.role == "client"
    missing = read_summary(tmp_path / "nope.json")
    assert missing.error is not None and "nope.json" in missing.error
    with pytest.raises(LatencyFormatError):
        read_summary(_dump(tmp_path / "x.json", {"tool": "iperf3"}))


def test_analyze_joins_sender_and_receiver(tmp_path: Path) -> None:
    f = LatencyFiles.in_dir(tmp_path, "x")
    _dump(f.client_json, CLIENT)
    _dump(f.server_json, dict(CLIENT, role="server", mode=None))
    ms = 1_000_000
    _write(f.server_records, b"MPLTRCV1", RECV_DTYPE,
           [(k, k * 10 * ms, k * 10 * ms, k * 10 * ms + 20 * ms) for k in range(4)])
    _write(f.client_records, b"MPLTSND1", SEND_DTYPE,
           [(k, k * 10 * ms, k * 10 * ms, k * 10 * ms + ms, (k % 2) * 5 * ms) for k in range(4)])
    r = analyze(f)
    assert r.errors == [] and r.delay.blocks == 4 and r.delay.p50_ms == 20.0
    assert list(r.blocks["blocked_ms"]) == [0.0, 5.0, 0.0, 5.0]
    assert r.blocked.total_s == pytest.approx(0.010) and r.blocked.share == pytest.approx(0.25)
    assert r.rate.sent_bps == pytest.approx(800_000)


def test_analyze_with_a_dead_side(tmp_path: Path) -> None:
    f = LatencyFiles.in_dir(tmp_path, "y")
    _dump(f.client_json, {"tool": "mptcplab-latency", "version": 1, "role": "client", "error": "boom"})
    r = analyze(f)
    assert r.delay.blocks == 0 and len(r.blocks) == 0
    assert sorted(r.errors) == ["?: no latency summary y.server.json: [Errno 2] No such file or directory: "
                                f"'{f.server_json}'", "client: boom"]


def _dump(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(json.dumps(data))
    return path


# -- the native binary's arguments (no network) -------------------------------------

needs_cc = pytest.mark.skipif(shutil.which("make") is None or shutil.which("cc") is None,
                              reason="needs make and a C compiler")


def _binary() -> Path:
    subprocess.run(["make", "-C", str(repo_root() / "native")], capture_output=True, check=True, timeout=180)
    return repo_root() / "native" / "build" / "mptcplab-latency"


@needs_cc
@pytest.mark.parametrize("args", [
    [],
    ["both"],
    ["server"],                                            # --port and --json required
    ["server", "--port", "1", "--json", "/dev/null", "--rate-bps", "5"],
    ["client", "--port", "1", "--json", "/dev/null"],      # --connect required
    ["client", "--connect", "10.0.0.1", "--port", "70000", "--json", "/dev/null"],
    ["client", "--connect", "10.0.0.1", "--port", "1", "--json", "/dev/null", "--block", "31"],
    ["client", "--connect", "10.0.0.1", "--port", "1", "--json", "/dev/null", "--rate-bps", "-1"],
    ["client", "--connect", "10.0.0.1", "--port", "1", "--json", "/dev/null", "--rate-bps", "1",
     "--rate-blocks", "1"],
    ["client", "--connect", "10.0.0.1", "--port", "1", "--json", "/dev/null", "--sndbuf", "x"],
    ["client", "--connect", "10.0.0.1", "--port", "1", "--json", "/dev/null", "extra"],
])
def test_native_bad_arguments_exit_2(args: list[str]) -> None:
    p = subprocess.run([str(_binary()), *args], capture_output=True, text=True, timeout=10, check=False)
    assert p.returncode == 2, p.stderr
    assert "usage" in p.stderr
    assert "ready" not in p.stdout


@needs_cc
def test_native_help_documents_the_buffers() -> None:
    p = subprocess.run([str(_binary()), "--help"], capture_output=True, text=True, timeout=10, check=False)
    assert p.returncode == 0 and "SO_SNDBUF" in p.stdout and "2*B" in p.stdout


@needs_cc
def test_native_connect_failure_is_one_line_and_in_the_json(tmp_path: Path) -> None:
    # 127.0.0.1 port 9 (discard): nothing listens; refused until the 0.2 s connect timeout
    out = tmp_path / "c.json"
    p = subprocess.run([str(_binary()), "client", "--connect", "127.0.0.1", "--port", "9", "--tcp",
                        "--connect-timeout", "0.2", "--json", str(out)], capture_output=True, text=True, timeout=10,
                       check=False)
    assert p.returncode == 1
    assert p.stderr.count("\n") == 1 and p.stderr.startswith("mptcplab-latency: connect 127.0.0.1:9:")
    assert read_summary(out).error == p.stderr.removeprefix("mptcplab-latency: ").strip()
