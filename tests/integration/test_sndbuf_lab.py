"""The sndbuf lab end to end on the netns backend: one quick run of the 2020 case in both
variants (sysctl only, SO_SNDBUF locked by the application) and one Table 2 cell (1 MB locked,
75 ms); then the notebook, headless, on it. Real namespaces, delay lines, captures and probes.
Three scenarios keep it short on a shared machine: the iperf3 scenarios (mptcp-paper, tcp-fast)
run the same engine paths as the other labs' tests, the sysctl-only Table 2 cells the same
flow as mptcp-paper-app with another tcp_wmem."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mptcplab.analysis.sendbuffer import eq1_required_bytes
from mptcplab.record.model import Repetition, Summary
from mptcplab.results.aggregate import scenario_value
from mptcplab.results.read import load_summary
from mptcplab.tools.latency import expected_locked_buffer
from mptcplab.traffic.latency_result import LatencyMetrics

from .labkit import run_notebook, run_repo_lab, side

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.netns

SCENARIOS = ["mptcp-paper-app", "mptcp-paper-locked", "table2-locked-wmem1m-rtt75ms"]
MIB = 1048576


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_repo_lab("sndbuf", tmp_path_factory.mktemp("results"), 5, len(SCENARIOS), *SCENARIOS)


@pytest.fixture(scope="module")
def summary(quick_run: Path) -> Summary:
    return load_summary(quick_run)


def rep(summary: Summary, name: str) -> Repetition:
    reps = summary.reps_of(name)
    assert len(reps) == 1, name
    return reps[0]


def latency(summary: Summary, name: str) -> LatencyMetrics:
    r = rep(summary, name)
    flows = [f for f in r.flows if f.role == "measured"]
    lm = flows[0].metrics_of(LatencyMetrics) if flows else None
    assert flows and flows[0].kind == "latency" and lm is not None, name
    return lm


def value(summary: Summary, name: str, metric: str, path: str | None = None) -> float | None:
    return scenario_value(summary.reps_of(name), metric, path).value


def test_every_scenario_ran_and_mptcp_used_both_paths(summary: Summary) -> None:
    assert summary.complete and [r.name for r in summary.scenarios] == SCENARIOS
    for name in SCENARIOS:
        r = rep(summary, name)
        # shaped at 100 Mbit/s per path: never above two paths' worth
        assert r.goodput_mbps is not None and 0 < r.goodput_mbps <= 200, name
        assert r.mptcp.verified, (name, [w.message for w in r.warnings])
        # the slow path's base RTT is the configured one (80 or 75 ms) plus well under 2 ms
        b = [s for s in r.subflows if s.path == "B"][0]
        want = 75.0 if "rtt75ms" in name else 80.0
        assert b.rtt_min_ms is not None and want <= b.rtt_min_ms < want + 2, (name, b.rtt_min_ms)
        assert b.path_rate_mbps == 100.0


def test_locked_buffer_is_the_papers_and_sysctl_only_is_upstreams(summary: Summary) -> None:
    # forced (SO_SNDBUFFORCE): the paper's 1 MiB whatever this host's net.core.wmem_max
    locked = latency(summary, "mptcp-paper-locked")
    assert locked.sndbuf_requested == MIB // 2
    assert locked.sndbuf_effective == expected_locked_buffer(MIB // 2, cap=0, forced=True) == MIB
    # sysctl only, tcp_wmem 1 MiB min = default = max: upstream's MPTCP socket holds
    # tcp_wmem[0] + the subflows' buffers, more than the paper's 1 MiB, at most 3 MiB
    free = latency(summary, "mptcp-paper-app")
    assert free.sndbuf_requested is None and free.sndbuf_effective is not None
    assert MIB < free.sndbuf_effective <= 3 * MIB, free.sndbuf_effective
    cell = latency(summary, "table2-locked-wmem1m-rtt75ms")
    assert cell.sndbuf_effective == MIB
    # every latency flow ran cubic on its socket, not the namespace's default
    for name in SCENARIOS:
        assert latency(summary, name).cc == "cubic", name


def test_eq1_per_cell(summary: Summary) -> None:
    # 2 x 100 Mbit/s x the measured slow RTT x 2: ~4.0 MB at 80 ms, ~3.75 MB at 75 ms
    need = value(summary, "mptcp-paper-locked", "eq1_required_bytes")
    assert need is not None and need == pytest.approx(eq1_required_bytes([100e6, 100e6], [0.080]), rel=0.03)
    ratio = value(summary, "mptcp-paper-locked", "eq1_buffer_ratio")
    got = latency(summary, "mptcp-paper-locked").sndbuf_effective
    assert ratio is not None and got is not None and ratio == pytest.approx(got / need)
    assert ratio < 1  # 1 MiB is about a quarter of Eq (1)
    rows = {f.id: f for f in [*summary.findings, *summary.setup_checks]}
    # setup checks of every repetition (min/max): decided even on a quick run's one repetition
    assert side(rows["P004.11-eq1-not-met"]) is True
    assert side(rows["eq1-wmem1m-rtt75ms-locked"]) is True
    assert rows["eq1-wmem4m-rtt50ms-locked"].verdict == "not measurable"  # not run


def test_depth_counts_exist_and_agree(summary: Summary, quick_run: Path) -> None:
    for name in SCENARIOS:
        r = rep(summary, name)
        probes = (r.model_extra or {})["probes"]
        counts = probes["tcp_probe"]["cwnd_reductions"]
        # tcp_probe saw the sender of both subflows (cwnd series for Fig 5/6)
        assert {c["path"] for c in counts.values() if c["samples"] > 0} == {"A", "B"}, (name, counts)
        for path in ("A", "B"):
            total = value(summary, name, "cwnd_reductions", path)
            no_loss = value(summary, name, "cwnd_reductions_no_loss", path)
            assert total is not None and no_loss is not None and 0 <= no_loss <= total
        table = quick_run / r.rel_dir() / "probes" / "cwnd_reductions.csv"
        assert table.is_file()
        # MPTCP-level re-sends: the capture's count and the kernel's are both there; the
        # kernel's counter cannot be below the re-sends the capture saw on the wire
        capture = value(summary, name, "mptcp_retransmissions")
        kernel = value(summary, name, "nstat_mptcp_retrans")
        assert capture is not None and kernel is not None, name
        assert (quick_run / r.rel_dir() / "dsn.csv").is_file()


def test_sender_waits_for_buffer_when_locked(summary: Summary) -> None:
    locked = latency(summary, "mptcp-paper-locked")
    # a bulk sender with a buffer a quarter of Eq (1) must wait for space
    assert locked.blocked_blocks is not None and locked.blocked_blocks > 0
    assert locked.blocked_share is not None and 0 < locked.blocked_share <= 1
    assert value(summary, "mptcp-paper-locked", "send_waits") == locked.blocked_blocks


def test_published_rows_and_report(summary: Summary, quick_run: Path) -> None:
    rows = {p.id: p for p in summary.published}
    assert rows["paper-goodput-mean"].paper_value == 46.8 and rows["paper-goodput-mean"].this_value is not None
    assert rows["paper-goodput-min"].this_statistic == "min over reps"
    assert rows["paper-goodput-sd"].this_value is None  # one repetition has no spread
    assert rows["paper-starvations"].this_value is not None
    assert rows["p2019-opportunistic-1mb"].this_value is not None
    report = (quick_run / "report.md").read_text()
    assert "P004.1-below-one-path" in report and "eq1-wmem1m-rtt75ms-locked" in report
    data = json.loads((quick_run / "summary.json").read_text())
    assert data["repetitions"] == 1  # --quick: one per scenario, whatever the lab's own counts


def test_notebook_executes_against_the_run(quick_run: Path) -> None:
    pytest.importorskip("nbformat")
    outputs = run_notebook("sndbuf", quick_run)
    assert "mptcp-paper-locked" in outputs and "buffer / Eq (1)" in outputs
    assert "P004.11-eq1-not-met" in outputs
    # every figure section drew something
    assert outputs.count("image/png") >= 5
