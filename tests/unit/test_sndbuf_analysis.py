"""The send-buffer lab's analysis pieces: Eq (1), the upstream send-buffer rules, cwnd
reductions with and without loss, per-scenario repetitions, the latency tool's --cc."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from mptcplab.analysis.cwnd_events import Socket, count_without_loss, reductions, socket_samples
from mptcplab.analysis.sendbuffer import eq1_required_bytes, parse_wmem, upstream_unlocked_sndbuf
from mptcplab.errors import LabInputError
from mptcplab.record.model import Repetition
from mptcplab.run import RunOptions, repetitions, uniform_repetitions
from mptcplab.tools.latency import LatencyFiles, LatencyParams, client_argv


def test_eq1_matches_the_papers_derived_numbers() -> None:
    # 2 x 100 Mbit/s: RTT 50 -> 2.5 MB, 75 -> 3.75 MB, 80 -> 4.0 MB, 100 -> 5.0 MB (inventory, [D])
    for rtt_ms, mb in ((50, 2.5), (75, 3.75), (80, 4.0), (100, 5.0)):
        got = eq1_required_bytes([100e6, 100e6], [0.0002, rtt_ms / 1000])
        assert got == pytest.approx(mb * 1e6)
    # the largest RTT counts, not the sum or the mean
    assert eq1_required_bytes([100e6, 100e6], [0.08, 0.01]) == pytest.approx(4.0e6)
    assert eq1_required_bytes([100e6, None], [0.08, 0.01]) is None  # type: ignore[list-item]
    assert eq1_required_bytes([], []) is None


def test_upstream_buffer_rules() -> None:
    # unlocked: tcp_wmem[0] + each subflow up to tcp_wmem[2] (the 2020 case: ~3 MiB, not 1 MiB)
    assert upstream_unlocked_sndbuf((1048576, 1048576, 1048576), 2) == 3 * 1048576
    # locked: twice the request, capped by wmem_max first
    assert parse_wmem("4096\t16384 4194304") == (4096, 16384, 4194304)
    assert parse_wmem("1 2") is None and parse_wmem(None) is None


SOCK = Socket("10.0.1.2", 40000, "10.0.5.2", 5301)


def probe_rows(points: list[tuple[float, int]], srtt_us: int = 80_000, skaddr: str = "ff01") -> list[dict]:
    return [{"t": t, "event": "tcp_probe", "src": SOCK.src, "sport": SOCK.sport, "dst": SOCK.dst,
             "dport": SOCK.dport, "snd_cwnd": c, "srtt_us": srtt_us, "skaddr": skaddr} for t, c in points]


def retrans(t: float, skaddr: str = "ff01") -> dict:
    return {"t": t, "event": "tcp_retransmit_skb", "src": None, "sport": SOCK.sport, "dst": None,
            "dport": SOCK.dport, "snd_cwnd": None, "srtt_us": None, "skaddr": skaddr}


def test_a_prr_staircase_is_one_reduction_and_a_retransmission_explains_it() -> None:
    # cwnd 100 -> 50 over five ACKs of one round: one reduction; a retransmission 10 ms
    # before the first step makes it a loss
    pts = [(1.0, 100), (1.01, 90), (1.02, 80), (1.03, 70), (1.04, 60), (1.05, 50), (1.5, 51), (1.6, 52)]
    table = pd.DataFrame(probe_rows(pts) + [retrans(1.0)])
    samples, rtx = socket_samples(table, SOCK)
    ep = reductions(samples, rtx)
    assert len(ep) == 1
    row = ep.iloc[0]
    assert (row["cwnd_before"], row["cwnd_after"], row["decreases"]) == (100, 50, 5)
    assert bool(row["with_loss"]) is True
    assert count_without_loss(samples, rtx) == 0


def test_reductions_apart_and_without_retransmission_count_each() -> None:
    # two reductions 1 s apart (srtt 80 ms), no retransmission: both without loss
    pts = [(0.0, 700), (0.1, 350), (0.2, 351), (1.2, 360), (1.3, 180), (1.31, 170)]
    table = pd.DataFrame(probe_rows(pts))
    samples, rtx = socket_samples(table, SOCK)
    ep = reductions(samples, rtx)
    assert list(ep["decreases"]) == [1, 2]
    assert count_without_loss(samples, rtx) == 2


def test_a_retransmission_of_another_socket_or_long_before_does_not_explain() -> None:
    pts = [(0.0, 100), (2.0, 50)]
    # another socket's retransmission at the same time; ours 1 s earlier (> 2 srtt of 80 ms)
    table = pd.DataFrame(probe_rows(pts) + [retrans(1.99, skaddr="ee02"), retrans(1.0)])
    samples, rtx = socket_samples(table, SOCK)
    assert len(rtx) == 1
    assert count_without_loss(samples, rtx) == 1
    # within two srtt before the decrease: explained
    table = pd.DataFrame(probe_rows(pts) + [retrans(1.9)])
    samples, rtx = socket_samples(table, SOCK)
    assert count_without_loss(samples, rtx) == 0


def test_samples_of_the_receiver_socket_are_not_the_senders() -> None:
    rows = probe_rows([(0.0, 10), (0.1, 5)])
    for r in rows:  # the reverse 4-tuple: the receiver's socket
        r["src"], r["dst"], r["sport"], r["dport"] = SOCK.dst, SOCK.src, SOCK.dport, SOCK.sport
    samples, _ = socket_samples(pd.DataFrame(rows), SOCK)
    assert samples.empty
    assert reductions(samples, samples).empty


LAB = Path(__file__).resolve().parents[2] / "labs" / "sndbuf"


def test_repetitions_per_scenario() -> None:
    from mptcplab.lab.loader import load_lab

    lab = load_lab(LAB)
    sc = {s.name: s for s in lab.scenarios}
    opts = RunOptions(results_root=Path("/tmp"))
    assert repetitions(lab, opts, sc["mptcp-paper"]) == 5
    assert repetitions(lab, opts, sc["table2-wmem1m-rtt75ms"]) == 3
    assert repetitions(lab, opts, sc["table2-locked-wmem4m-rtt100ms"]) == 3
    assert uniform_repetitions(lab, opts, [sc["mptcp-paper"], sc["tcp-fast"]]) == 5
    assert uniform_repetitions(lab, opts, list(lab.scenarios)) is None
    # --quick and --reps apply to every scenario
    quick = RunOptions(results_root=Path("/tmp"), quick=True)
    assert uniform_repetitions(lab, quick, list(lab.scenarios)) == 1
    assert uniform_repetitions(lab, RunOptions(results_root=Path("/tmp"), reps=2), list(lab.scenarios)) == 2
    with pytest.raises(LabInputError):
        repetitions(lab, RunOptions(results_root=Path("/tmp"), reps=0), sc["mptcp-paper"])


def test_latency_cc_reaches_the_client_argv() -> None:
    files = LatencyFiles.in_dir(Path("/tmp"), "lat")
    argv = client_argv(LatencyParams(server_address="10.0.0.2", cc="cubic"), files, Path("/bin/x"))
    assert argv[argv.index("--cc") + 1] == "cubic"
    assert "--cc" not in client_argv(LatencyParams(server_address="10.0.0.2"), files, Path("/bin/x"))
    with pytest.raises(ValueError):
        LatencyParams(server_address="10.0.0.2", cc="cubic; rm")


def rep_record(**extra: object) -> Repetition:
    base: dict[str, object] = {
        "name": "s", "rep": 1, "goodput_mbps": 90.0,
        "subflows": [
            {"path": "A", "bytes": 10_000_000, "rtt_min_ms": 0.1, "path_rate_mbps": 100.0,
             "retransmissions": 2, "mptcp_retransmissions": 5},
            {"path": "B", "bytes": 2_000_000, "rtt_min_ms": 80.0, "path_rate_mbps": 100.0,
             "retransmissions": 0, "mptcp_retransmissions": 1},
        ],
        "flows": [{"name": "main", "kind": "latency", "role": "measured",
                   "latency": {"sndbuf_effective": 1048576, "blocked_blocks": 70, "blocked_share": 0.9}}],
        "probes": {"nstat": {"client": {"MPTcpExtMPTCPRetrans": 6}, "server": {"MPTcpExtOFOQueue": 9}},
                   "tcp_probe": {"cwnd_reductions": {
                       "10.0.1.2:1": {"path": "A", "samples": 100, "reductions": 3, "without_loss": 1},
                       "10.0.3.2:2": {"path": "B", "samples": 50, "reductions": 4, "without_loss": 4}}}},
    }
    base.update(extra)
    return Repetition.model_validate(base)


def test_cc_depth_metrics_read_the_record() -> None:
    from mptcplab.metrics import METRICS, Select

    r = rep_record()

    def m(name: str, path: str | None = None) -> float | None:
        return METRICS[name].per_rep(r, Select(path=path))

    assert m("eq1_required_bytes") == pytest.approx(4.0e6)
    assert m("eq1_buffer_ratio") == pytest.approx(1048576 / 4.0e6)
    assert (m("mptcp_retransmissions", "A"), m("mptcp_retransmissions")) == (5.0, 6.0)
    assert m("nstat_mptcp_retrans") == 6.0
    assert m("tcp_retransmissions", "A") == 2.0 and m("tcp_retransmissions", "B") == 0.0
    assert (m("cwnd_reductions", "A"), m("cwnd_reductions_no_loss", "A"), m("cwnd_reductions_no_loss")) == (3, 1, 5)
    assert (m("send_waits"), m("blocked_share")) == (70.0, 0.9)
    # absent evidence is None, not 0: no probes, a subflow without samples, no buffer read back
    bare = rep_record(probes={}, flows=[])
    assert METRICS["nstat_mptcp_retrans"].per_rep(bare, Select()) is None
    assert METRICS["cwnd_reductions"].per_rep(bare, Select(path="A")) is None
    assert METRICS["eq1_buffer_ratio"].per_rep(bare, Select()) is None
    nosamples = rep_record(probes={"tcp_probe": {"cwnd_reductions": {
        "x": {"path": "B", "samples": 0, "reductions": 0, "without_loss": 0}}}})
    assert METRICS["cwnd_reductions"].per_rep(nosamples, Select(path="B")) is None
    # a path without an RTT: Eq (1) is unknown
    norate = rep_record(subflows=[{"path": "A", "bytes": 1, "rtt_min_ms": None, "path_rate_mbps": 100.0}])
    assert METRICS["eq1_required_bytes"].per_rep(norate, Select()) is None


def test_min_and_std_statistics() -> None:
    from mptcplab.results.aggregate import scenario_value

    reps = [rep_record(goodput_mbps=g, rep=i) for i, g in enumerate((42.4, 49.8, 46.0), 1)]
    assert scenario_value(reps, "goodput_min_mbps").value == 42.4
    assert scenario_value(reps, "goodput_max_mbps").value == 49.8
    assert scenario_value(reps, "goodput_sd_mbps").value == pytest.approx(3.7005, abs=1e-3)
    assert scenario_value(reps[:1], "goodput_sd_mbps").value is None
