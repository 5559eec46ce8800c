"""The rcvbuf lab end to end on the netns backend: one --quick run of a subset (each
figure's plumbing once: the TB-EMU1 sweep at two buffers, the scaled Fig 6b family, the
DSS-checksum pair, the three Fig 7 latency flows), about 2-3 minutes of wall time, then the
notebook executed headless against it.

What is asserted holds whatever the load on a shared machine: the swept buffer and the
checksum sysctl are what the nodes read back, the emulated delays are the floor of the
capture's RTTs and of the blocks' delays, the capture proves which DSS-checksum variant ran,
a send buffer is capped by its sysctl, and 40 KB of send buffer queue less than 200 KB do.
Goodput magnitudes are left to the full run (they are not timing-stable on 2 shared cores).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mptcplab.metrics import METRICS, Select
from mptcplab.record.model import Repetition, Summary, load_manifest
from mptcplab.results.read import load_summary
from mptcplab.traffic.latency_result import LatencyMetrics

from .labkit import measured, run_notebook, run_repo_lab

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.netns

SUBSET = ["emu1-tcp-wifi-rmem100k", "emu1-mptcp-rmem100k", "fig6b-x0.1-mptcp-b250k",
          "dss-csum-off-mtu9000", "dss-csum-on-mtu9000", "fig7-mptcp", "fig7-tcp-wifi-sndbuf200k",
          "fig7-tcp-wifi-sndbuf40k"]
NODES = 6


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # two patterns and exact names: the selector the docs' "paper" subset uses
    return run_repo_lab("rcvbuf", tmp_path_factory.mktemp("results"), NODES, len(SUBSET),
                        "emu1-tcp-wifi-rmem100k", "emu1-mptcp-rmem100k", "fig6b-x0.1-mptcp-b250k",
                        "dss-*-mtu9000", "fig7-*")


@pytest.fixture(scope="module")
def summary(quick_run: Path) -> Summary:
    return load_summary(quick_run)


def one(summary: Summary, name: str) -> Repetition:
    reps = summary.reps_of(name)
    assert len(reps) == 1, (name, [r.name for r in summary.scenarios])
    return reps[0]


def value(metric: str, rep: Repetition, path: str | None = None) -> float | None:
    return METRICS[metric].per_rep(rep, Select(path=path))


def test_the_patterns_selected_the_subset_in_lab_order(summary: Summary) -> None:
    assert summary.complete is True and summary.quick is True
    assert summary.scenario_order() == SUBSET


def test_swept_buffers_and_checksum_are_read_back(quick_run: Path) -> None:
    m = load_manifest(quick_run)

    def server(scenario: str, key: str) -> list[str]:
        return str(m.sysctls[scenario]["server"][key]).split()

    assert server("emu1-mptcp-rmem100k", "net.ipv4.tcp_rmem") == ["4096", "100000", "100000"]
    # the scaled family: the paper's 250 KB runs as 25 KB
    assert server("fig6b-x0.1-mptcp-b250k", "net.ipv4.tcp_rmem") == ["4096", "25000", "25000"]
    for node in ("client", "server"):
        assert str(m.sysctls["dss-csum-on-mtu9000"][node]["net.mptcp.checksum_enabled"]) == "1"
        assert str(m.sysctls["dss-csum-off-mtu9000"][node]["net.mptcp.checksum_enabled"]) == "0"


def test_tb_emu1_paths_carry_their_delay(summary: Summary) -> None:
    tcp = one(summary, "emu1-tcp-wifi-rmem100k")
    assert not tcp.mptcp.negotiated and [s.path for s in tcp.subflows] == ["WiFi"]
    for name in ("emu1-mptcp-rmem100k",):
        r = one(summary, name)
        assert r.mptcp.negotiated and not r.mptcp.fallback, (name, r.warnings)
        by_path = {s.path: s for s in r.subflows}
        assert set(by_path) == {"WiFi", "3G"} and all(s.established for s in by_path.values()), name
        # the client sends, so the client-side capture times data -> ACK: never below the
        # emulated base RTT (20 and 150 ms), whatever the load adds
        wifi, g3 = by_path["WiFi"], by_path["3G"]
        assert wifi.rtt_min_ms is not None and wifi.rtt_min_ms >= 20.0 * 0.98, (name, wifi)
        assert g3.rtt_min_ms is not None and g3.rtt_min_ms >= 150.0 * 0.98, (name, g3)
        # shaped to 8 + 2 Mbit/s: the sum of both paths is a ceiling
        assert 0 < (r.goodput_mbps or 0) <= 10.0 * 1.02, (name, r.goodput_mbps)
    assert 0 < (tcp.goodput_mbps or 0) <= 8.0 * 1.02


def test_socket_memory_sampled_and_bounded_by_the_buffer(summary: Summary) -> None:
    r = one(summary, "emu1-mptcp-rmem100k")
    rcv, snd = value("skmem_rcv_max_bytes", r), value("skmem_snd_max_bytes", r)
    assert snd is not None and snd > 0, r.model_extra
    # the receiver's connection (MPTCP socket + subflows) holds at most a few times its
    # 100 KB tcp_rmem maximum, never the megabytes an unbounded buffer would take
    assert rcv is not None and 0 < rcv <= 4 * 100_000, rcv
    dss = one(summary, "dss-csum-on-mtu9000")
    assert value("skmem_rcv_max_bytes", dss) is None  # the probe is off for the CPU-bound runs


def test_capture_proves_the_dss_checksum_variant(summary: Summary) -> None:
    on, off = one(summary, "dss-csum-on-mtu9000"), one(summary, "dss-csum-off-mtu9000")
    assert on.mptcp.checksum_required is True and value("dss_checksum", on) == 1.0
    assert off.mptcp.checksum_required is False and value("dss_checksum", off) == 0.0
    for r in (on, off):
        # the client's MTU 9000 reached the wire: jumbo segments on the one subflow
        assert [s.path for s in r.subflows] == ["WiFi"]
        assert (r.subflows[0].max_seg or 0) > 8000, r.subflows[0]


def test_latency_flows(summary: Summary) -> None:
    lat = {n: one(summary, n).flows[0].metrics_of(LatencyMetrics) for n in ("fig7-mptcp", "fig7-tcp-wifi-sndbuf200k",
                                                        "fig7-tcp-wifi-sndbuf40k")}
    for name, m in lat.items():
        assert m is not None and m.blocks > 0 and m.block_bytes == 8192, name
        # one clock for all namespaces: no block beats the WiFi path's 10 ms one-way delay
        assert m.min_ms is not None and m.min_ms >= 10.0 * 0.98, (name, m.min_ms)
    big, small, mp = lat["fig7-tcp-wifi-sndbuf200k"], lat["fig7-tcp-wifi-sndbuf40k"], lat["fig7-mptcp"]
    assert big is not None and small is not None and mp is not None
    # tcp_wmem's maximum caps the autotuned send buffer; MPTCP's is tcp_wmem[0] + its subflows'
    assert big.sndbuf_effective is not None and big.sndbuf_effective <= 200_000
    assert small.sndbuf_effective is not None and small.sndbuf_effective <= 40_000
    assert mp.mptcp_active is True and mp.sndbuf_effective is not None
    assert mp.sndbuf_effective <= 4096 + 2 * 200_000
    # data waits in the send buffer: 40 KB hold less than 200 KB at the same 8 Mbit/s
    assert small.p50_ms is not None and big.p50_ms is not None and small.p50_ms < big.p50_ms


def test_findings_evaluated_and_subset_leaves_the_rest_unknown(summary: Summary) -> None:
    rows = {f.id: f for f in summary.findings}
    assert measured(rows["p7.3-reduced-sndbuf-below-mptcp"])
    assert measured(rows["p3.2-checksum-costs-at-jumbo"])
    # scenarios this subset did not run cannot be judged
    assert rows["p6c-symmetric-links"].verdict == "not measurable"
    assert rows["s4.2.1-lossy-best-path"].verdict != "holds"


def test_notebook_executes_against_the_run(quick_run: Path) -> None:
    pytest.importorskip("nbformat")
    outputs = run_notebook("rcvbuf", quick_run)
    for text in ("375 KB", "emu1-mptcp / emu1-tcp-wifi", "fig7-tcp-wifi-sndbuf40k", "G_on / G_off",
                 "p4.4-m12-matches-best-path"):
        assert text in outputs, text
