"""The ``latency`` flow kind run by the engine (netns backend): a two-path MPTCP lab
(client with two 40 Mbit/s paths through one router to the server), one latency flow
3 s back to back with the client's send buffer locked, and the ``ss_interval`` memory
probe on. Asserted from the tool's own records, its getsockopt read-back and the capture:
blocks arrived, the locked buffer reads back as the kernel's doubled value, both subflows
carried data, the percentiles are ordered; the probe sampled this flow's connection only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from mptcplab.tools.latency import expected_locked_buffer

from .labkit import by_name, run_quick, write_lab
from .probelab import TOPOLOGY, experiment

pytestmark = pytest.mark.netns

SNDBUF = 200_000
PORT = 5301


def lab_experiment() -> dict[str, Any]:
    exp = experiment(duration="3s")
    exp["probes"] = {"ss_interval": "100ms"}
    exp["traffic"] = {"flows": {"lat": {
        "kind": "latency", "client": "client", "server": "server", "server_address": "server:eth1",
        "bind": "client:eth1", "mptcp": True, "duration": "3s", "block": "8KB", "sndbuf": SNDBUF,
        "port": PORT}}}
    exp["capture"] = [{"point": "client:eth1"}, {"point": "client:eth2"}]
    return exp


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    root = tmp_path_factory.mktemp("latflow")
    lab = write_lab(root, "latflow", TOPOLOGY, lab_experiment())
    rc, summary = run_quick(lab, root / "results")
    runs = sorted((root / "results" / "latflow").glob("2*/summary.json"))
    rep = runs[-1].parent / "scenarios" / "two-paths" / "rep1"
    assert rc == 0, (rc, by_name(summary)["two-paths"]["warnings"])
    return rep, by_name(summary)["two-paths"]


def _flow(rec: dict[str, Any]) -> dict[str, Any]:
    return next(f for f in rec["flows"] if f["name"] == "lat")


def _wmem_max() -> int:
    # a fresh namespace inherits net.core.wmem_max from the host's initial value
    return int(Path("/proc/sys/net/core/wmem_max").read_text())


def test_blocks_arrive_and_percentiles_are_ordered(run: tuple[Path, dict[str, Any]]) -> None:
    rep, rec = run
    f = _flow(rec)
    lat = f["latency"]
    assert f["kind"] == "latency" and f["iperf3_error"] is None, f
    assert lat["blocks"] > 100 and lat["blocks"] == lat["blocks_sent"], lat
    assert 0 < lat["min_ms"] <= lat["p50_ms"] <= lat["p95_ms"] <= lat["p99_ms"] <= lat["max_ms"], lat
    table = pd.read_csv(rep / "latency-lat.csv")
    assert len(table) == lat["blocks"] and (table["seq"].diff().dropna() == 1).all()
    assert table["delay_ms"].max() == pytest.approx(lat["max_ms"], abs=1e-3)
    # the receiver's goodput cannot exceed the two 40 Mbit/s paths
    assert 1 < f["goodput_mbps"] < 85, f


def test_locked_sndbuf_reads_back_as_the_kernel_gives_it(run: tuple[Path, dict[str, Any]]) -> None:
    _, rec = run
    lat = _flow(rec)["latency"]
    assert lat["sndbuf_requested"] == SNDBUF
    # the kind forces a buffer the lab sets: this host's net.core.wmem_max does not cap it
    assert lat["sndbuf_effective"] == expected_locked_buffer(SNDBUF, cap=_wmem_max(), forced=True)
    assert "buffer-not-as-requested" not in {w["code"] for w in rec["warnings"]}
    assert lat["rcvbuf_requested"] is None  # not asked: autotuned, read back but not locked


def test_mptcp_proved_from_the_capture_with_both_subflows_carrying_data(run: tuple[Path, dict[str, Any]]) -> None:
    rep, rec = run
    f = _flow(rec)
    assert f["verified"] and f["mptcp"]["verified"], rec["warnings"]
    carried = {s["path"] for s in f["subflows"] if s["established"] and (s["bytes"] or 0) > 0}
    assert carried == {"A", "B"}, f["subflows"]
    assert all(s["dport"] == PORT for s in f["subflows"])
    assert json.loads((rep / "latency-lat.client.json").read_text())["mptcp_active"] is True


def test_memory_probe_samples_this_flows_connection_at_both_ends(run: tuple[Path, dict[str, Any]]) -> None:
    rep, rec = run
    ss = pd.read_csv(rep / "probes" / "ss.csv")
    assert set(ss["flow"]) == {"lat"} and set(ss["role"]) == {"client", "server"}
    # attributed by the flow's port: the server's local port, the client's peer port
    assert (ss[ss["role"] == "server"]["lport"] == PORT).all() and (ss[ss["role"] == "client"]["pport"] == PORT).all()
    # one MPTCP connection: one token per node, its msk and its two subflows
    for role, g in ss.groupby("role"):
        assert g["conn"].nunique() == 1, (role, g["conn"].unique())
        assert set(g["socket"]) == {"msk", "subflow"} and g[g["socket"] == "subflow"]["lport"].nunique() >= 1
    assert ss[ss["socket"] == "subflow"].groupby("role")["local"].nunique()["client"] == 2  # both paths
    # sampled over the whole 3 s transfer: from within one sampling step of its start to within
    # one of its end. The step is the one achieved (every 100 ms asked; `ss` in a node takes
    # longer than that on a loaded host), measured from the samples, not a fixed 0.5 s margin
    step = max(0.1, float(ss.groupby("node")["t"].apply(lambda t: t.drop_duplicates().sort_values().diff().median())
                          .max()))
    assert ss["t"].nunique() >= 10 and ss["t_run"].min() < 0.4 + step and ss["t_run"].max() > 2.6 - step, \
        (step, ss["t_run"].min(), ss["t_run"].max())
    # the client's msk reports the locked buffer the tool read back, and queues at most about it
    lat = _flow(rec)["latency"]
    client_msk = ss[(ss["role"] == "client") & (ss["socket"] == "msk")]
    assert (client_msk["sndbuf"] == lat["sndbuf_effective"]).all(), client_msk["sndbuf"].unique()
    assert 0 < client_msk["wmem_queued"].max() <= lat["sndbuf_effective"] + 2 * 8000 + 65536
    summary = rec["probes"]["ss_interval"]["flows"]["lat"]
    assert summary["sender"] == "client" and summary["client"]["snd_max_bytes"] >= client_msk["wmem_queued"].max()
    # the raw samples are kept next to the table
    assert (rep / "probes" / "ss-client.txt").read_text().startswith("# t=")
