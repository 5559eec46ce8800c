"""Probes on real runs (netns backend): tcp_probe's cwnd series for every subflow of a
two-path MPTCP run, on the capture's 4-tuples and clock; nstat's join counters; the
path manager's events; two concurrent runs of the same lab (same addresses, same
ports, different namespaces) keeping their samples apart; and no tracefs instance
left behind by a run, an interrupted run or a killed one (then `clean`)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from mptcplab import runstate
from mptcplab.probes import tracefs

from .labkit import run_quick
from .probelab import write

REPO = Path(__file__).resolve().parents[2]
MPTCPLAB = [sys.executable, "-m", "mptcplab.cli"]
pytestmark = pytest.mark.netns

Tuple4 = tuple[str, int, str, int]


def _rep_dir(results: Path, lab: str) -> Path:
    runs = sorted(d for d in (results / lab).glob("2*") if d.is_dir())
    assert runs, f"no run of {lab} in {results}"
    return runs[-1] / "scenarios" / "two-paths" / "rep1"


def _instances() -> set[str]:
    d = tracefs.TRACEFS / "instances"
    return {p.name for p in d.iterdir()} if d.is_dir() else set()


def _capture_tuples(rep: Path) -> set[Tuple4]:
    """Every TCP 4-tuple (client side first) in the run's captures, from tshark."""
    out: set[Tuple4] = set()
    for pcap in rep.glob("capture-*.pcap"):
        p = subprocess.run(["tshark", "-r", str(pcap), "-Y", "tcp", "-T", "fields", "-e", "ip.src", "-e",
                            "tcp.srcport", "-e", "ip.dst", "-e", "tcp.dstport"], capture_output=True, text=True,
                           check=True)
        for line in p.stdout.splitlines():
            s, sp, d, dp = line.split("\t")
            t = (s, int(sp), d, int(dp))
            out.add(t if t[3] == 5201 else (t[2], t[3], t[0], t[1]))
    return out


def _probe_tuples(rep: Path) -> set[Tuple4]:
    df = pd.read_csv(rep / "probes" / "tcp_probe.csv")
    df = df[df["event"] == "tcp_probe"]
    out: set[Tuple4] = set()
    for s, sp, d, dp in zip(df["src"], df["sport"], df["dst"], df["dport"], strict=True):
        t = (str(s), int(sp), str(d), int(dp))
        out.add(t if t[3] == 5201 else (t[2], t[3], t[0], t[1]))
    return out


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    root = tmp_path_factory.mktemp("probes")
    lab = write(root / "labs", "probes2")
    rc, summary = run_quick(lab, root / "results")
    assert rc == 0, summary
    rep = _rep_dir(root / "results", "probes2")
    return rep, json.loads((rep / "rep.json").read_text())


def test_tcp_probe_cwnd_series_for_every_subflow_on_the_captures_4_tuples(run: tuple[Path, dict[str, Any]]) -> None:
    rep, rec = run
    assert rec["mptcp"]["verified"] and rec["mptcp"]["subflows"] == 2, rec["warnings"]
    subflows = pd.read_csv(rep / "subflows.csv")
    series = pd.read_csv(rep / "probes" / "subflow_series.csv")
    for sf in subflows.itertuples():
        mine = series[(series["src"] == sf.src) & (series["sport"] == sf.sport) & (series["dst"] == sf.dst)
                      & (series["dport"] == sf.dport)]
        assert (mine["path"] == sf.path).all()
        cwnd = mine["snd_cwnd"].dropna()
        # 3 s of traffic in 100 ms bins: most bins of a subflow that carried data hold a sample
        assert len(cwnd) >= 15, (sf.path, len(cwnd))
        assert (cwnd >= 2).all() and mine["srtt_ms"].dropna().gt(0).all()
    assert rec["probes"]["tcp_probe"]["lost_events"] == 0
    assert sorted(rec["probes"]["tcp_probe"]["subflows_with_samples"]) == sorted(
        f"{s}:{p}" for s, p in zip(subflows["src"], subflows["sport"], strict=True))
    # every socket the probe reported is one the capture saw (the run's own, nothing else)
    assert _probe_tuples(rep) <= _capture_tuples(rep)


def test_tcp_probe_times_are_on_the_capture_clock(run: tuple[Path, dict[str, Any]]) -> None:
    rep, _ = run
    ts = pd.read_csv(rep / "timeseries.csv")
    samples = pd.read_csv(rep / "probes" / "tcp_probe.csv")
    series = pd.read_csv(rep / "probes" / "subflow_series.csv")
    # the first sample of the data sender comes after the data connection's first SYN
    # (t = 0 of the series) and before its data ends
    with_samples = series.dropna(subset=["snd_cwnd"])
    assert with_samples["t"].min() >= 0
    assert with_samples["t"].max() <= ts["t"].max() + 0.2
    assert samples["t"].is_monotonic_increasing or samples["t"].diff().min() > -0.01  # per-CPU buffers interleave


def test_nstat_counts_the_join_on_the_server(run: tuple[Path, dict[str, Any]]) -> None:
    rep, rec = run
    nstat = pd.read_csv(rep / "probes" / "nstat.csv")
    row = nstat[(nstat["node"] == "server") & (nstat["counter"] == "MPTcpExtMPJoinSynRx")]
    assert len(row) == 1 and int(row["delta"].iloc[0]) >= 1
    assert rec["probes"]["nstat"]["server"]["MPTcpExtMPJoinSynRx"] >= 1
    # the router carries no MPTCP socket: its MPTCP counters did not move
    r = nstat[(nstat["node"] == "r") & nstat["counter"].str.startswith("MPTcpExt")]
    assert (r["delta"] == 0).all()


def test_the_monitor_records_each_subflow_established(run: tuple[Path, dict[str, Any]]) -> None:
    rep, _ = run
    events = pd.read_csv(rep / "probes" / "mptcp_monitor.csv")
    client = events[events["node"] == "client"]
    subflows = pd.read_csv(rep / "subflows.csv")
    for sf in subflows.itertuples():
        kind = "established" if sf.initial else "sf_established"
        hit = client[(client["event"] == kind) & (client["saddr"] == sf.src) & (client["sport"] == sf.sport)]
        assert len(hit) == 1, (kind, sf.src, sf.sport, client[["event", "saddr", "sport"]].to_dict("records"))
    assert (events[events["node"] == "server"]["event"] == "listener_created").any()


def test_a_run_leaves_no_tracefs_instance(run: tuple[Path, dict[str, Any]]) -> None:
    rep, _ = run
    meta = json.loads((rep / "probes" / "tcp_probe.json").read_text())
    assert meta["instance"].startswith("mptcplab-") and meta["trace_bytes"] > 0
    assert meta["instance"] not in _instances()
    assert not (runstate.STATE_DIR / f"tracefs-{meta['instance']}.json").exists()


def test_two_concurrent_runs_keep_their_probe_data_apart(tmp_path: Path) -> None:
    """The same lab twice at once: same addresses, same server port, different
    namespaces. Each run's tcp_probe file holds its own sockets only."""
    labs = [write(tmp_path / f"labs{i}", "probes2") for i in range(2)]
    procs = []
    for i, lab in enumerate(labs):
        log = (tmp_path / f"run{i}.log").open("wb")
        procs.append(subprocess.Popen([*MPTCPLAB, "run", str(lab), "--quick", "--results", str(tmp_path / f"r{i}")],
                                      cwd=REPO, stdout=log, stderr=subprocess.STDOUT))
    try:
        for p in procs:
            p.wait(timeout=300)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    reps = []
    for i, p in enumerate(procs):
        assert p.returncode == 0, (tmp_path / f"run{i}.log").read_text()[-2000:]
        reps.append(_rep_dir(tmp_path / f"r{i}", "probes2"))
    probe = [_probe_tuples(r) for r in reps]
    capture = [_capture_tuples(r) for r in reps]
    assert probe[0] and probe[1]
    assert capture[0] != capture[1], "both runs drew the same ports: the test cannot tell them apart"
    for mine, other in ((0, 1), (1, 0)):
        assert probe[mine] <= capture[mine]
        assert not probe[mine] & (capture[other] - capture[mine]), "a sample of the other run's sockets"


def _wait_for_instance(p: subprocess.Popen[bytes], timeout: float = 120) -> str:
    """The tracefs instance the run with this PID owns, once it exists (found through
    its ownership record: other runs on the host make theirs at the same time)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and p.poll() is None:
        for f in runstate.STATE_DIR.glob(tracefs.STATE_GLOB):
            try:
                data = json.loads(f.read_text())
            except (OSError, ValueError):
                continue
            name = f.name.removeprefix("tracefs-").removesuffix(".json")
            if data.get("pid") == p.pid and name in _instances():
                return name
        time.sleep(0.05)
    raise AssertionError(f"run {p.pid} made no tracefs instance (exit {p.poll()})")


@pytest.mark.parametrize("how", ["interrupted", "killed"])
def test_an_interrupted_or_killed_run_leaves_no_instance_clean_cannot_remove(tmp_path: Path, how: str) -> None:
    lab = write(tmp_path / "labs", "probes2", duration="6s")
    p = subprocess.Popen([*MPTCPLAB, "run", str(lab), "--quick", "--results", str(tmp_path / "r")], cwd=REPO,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        name = _wait_for_instance(p)
        p.send_signal(signal.SIGINT if how == "interrupted" else signal.SIGKILL)
        p.wait(timeout=120)
        if how == "killed":
            assert name in _instances()  # nobody removed it: clean's job
            subprocess.run([*MPTCPLAB, "clean"], cwd=REPO, capture_output=True, check=True, timeout=120)
        assert name not in _instances()
        assert not (runstate.STATE_DIR / f"tracefs-{name}.json").exists()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        subprocess.run([*MPTCPLAB, "clean"], cwd=REPO, capture_output=True, timeout=120)
