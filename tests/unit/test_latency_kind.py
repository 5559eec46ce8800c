"""Kind ``latency``: the argv it generates from a lab flow, its reading of the tool's real
output (tests/data/latency/, one engine run on this machine) into the FlowResult block and
latency-<flow>.csv, the result model, its metrics (metrics/latency.py) and preflight's
check of the binary."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pydantic import TypeAdapter, ValidationError

from mptcplab.backends.netns import NetnsBackend
from mptcplab.emulation.nfqueue import NfqueueEmulator
from mptcplab.lab.loader import load_lab
from mptcplab.lab.schema import Flow
from mptcplab.metrics import METRICS
from mptcplab.net.plan import build_plan
from mptcplab.record.model import FlowResult, Repetition
from mptcplab.results.aggregate import scenario_value
from mptcplab.traffic.base import KindContext
from mptcplab.traffic.kinds import KINDS, kind_of
from mptcplab.traffic.latency import BLOCK_COLUMNS, LatencyKind, files, table_path
from mptcplab.traffic.latency_result import LatencyMetrics
from mptcplab.traffic.latency_schema import LatencyFlow

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parents[1] / "data" / "latency"
FLOW = TypeAdapter(Flow)
BASE = {"kind": "latency", "client": "client", "server": "server", "server_address": "server:eth1"}


def ctx(duration: float) -> KindContext:
    """The mtu lab's network."""
    lab = load_lab(ROOT / "labs" / "mtu")
    plan = build_plan(lab.topology, lab.scenarios[0], NfqueueEmulator(binary=Path("/bin/true")),
                      NetnsBackend(prefix="mplabcdef-"), Path("/tmp/x"))
    return KindContext(plan.net, duration, False, Path("/tmp/rep"))


def flow(**kw: Any) -> Any:
    return FLOW.validate_python({**BASE, **kw})


def test_schema_defaults_and_registry() -> None:
    f = flow()
    assert isinstance(f, LatencyFlow) and isinstance(kind_of(f), LatencyKind) and "latency" in KINDS
    assert (f.port, f.block, f.direction, f.mptcp, f.rate, f.sndbuf) == (5301, "8KB", "upload", True, None, None)
    assert KINDS["latency"].capture_analysis == "connection"  # proved from the capture like iperf3


@pytest.mark.parametrize("kw,where", [
    ({"block": 16}, "block"), ({"block": "65MiB"}, "block"), ({"sndbuf": "big"}, "sndbuf"),
    ({"rcvbuf": "2GB"}, "rcvbuf"), ({"rate": "fast"}, "rate"), ({"blocks_per_s": 0}, "blocks_per_s"),
    ({"rate": "1Mbit", "blocks_per_s": 5}, "exclude"), ({"window": "1MB"}, "window"),
])
def test_bad_values_are_refused(kw: dict[str, Any], where: str) -> None:
    with pytest.raises(ValidationError) as e:
        flow(**kw)
    assert where in str(e.value)


def test_argv_carries_every_field_and_the_quick_duration(tmp_path: Path) -> None:
    c = ctx(duration=2.5)
    f = flow(bind="client:eth1", block="16KB", rate="2Mbit", sndbuf="200KB", rcvbuf=100_000, mptcp=True)
    k = KINDS["latency"]
    client = k.client_argv(f, "lat", c)
    server = k.server_argv(f, "lat", c)
    assert client[1] == "client" and server[1] == "server" and client[0].endswith("mptcplab-latency")

    def opt(argv: tuple[str, ...], name: str) -> str:
        return argv[argv.index(name) + 1]

    assert opt(client, "--connect") == opt(server, "--listen") == str(c.net.address("server:eth1"))
    assert opt(client, "--port") == opt(server, "--port") == "5301"
    assert opt(client, "--bind") == str(c.net.address("client:eth1")) and opt(client, "--block") == "16000"
    assert opt(client, "--duration") == "2.5" and opt(client, "--rate-bps") == "2000000"
    assert opt(client, "--sndbuf") == "200000" and opt(server, "--rcvbuf") == "100000"
    assert "--rcvbuf" not in client and "--sndbuf" not in server  # each end gets its own buffer
    assert "--tcp" not in client and "--tcp" not in server
    fs = files(c.workdir, "lat")
    assert opt(client, "--json") == str(fs.client_json) and opt(server, "--records") == str(fs.server_records)
    tcp = k.client_argv(flow(mptcp=False, blocks_per_s=100), "lat", c)
    assert "--tcp" in tcp and opt(tcp, "--rate-blocks") == "100" and "--rate-bps" not in tcp
    assert k.output_name("lat", primary=True) == "latency-lat.client.out"


def _rep(tmp_path: Path) -> Path:
    for f in DATA.glob("latency-lat.*"):
        shutil.copy(f, tmp_path / f.name)
    (tmp_path / "latency-lat.client.out").write_text("")
    return tmp_path / "latency-lat.client.out"


def test_read_real_output(tmp_path: Path) -> None:
    o = KINDS["latency"].read(_rep(tmp_path))
    m = o.metrics
    assert o.error is None, o.error
    assert m["blocks"] == m["blocks_sent"] == 150 and m["block_bytes"] == 8000
    assert m["min_ms"] <= m["p50_ms"] <= m["p95_ms"] <= m["p99_ms"] <= m["max_ms"]
    # 50 blocks/s x 8000 bytes: 3.2 Mbit/s at both ends
    assert o.goodput_mbps == pytest.approx(3.2, rel=0.02) and o.sender_mbps == pytest.approx(3.2, rel=0.02)
    assert (m["sndbuf_requested"], m["sndbuf_effective"]) == (200_000, 400_000)
    assert (m["rcvbuf_requested"], m["rcvbuf_effective"]) == (100_000, 200_000)
    assert m["blocked_s"] == 0.0 and m["mptcp_active"] is True and m["subflows"] == 2
    table = pd.read_csv(table_path(tmp_path, "lat"))
    assert list(table.columns) == BLOCK_COLUMNS and len(table) == 150
    assert table["delay_ms"].median() == pytest.approx(m["p50_ms"], abs=1e-3)
    # the record block the runner stores validates in the result model
    fr = FlowResult.model_validate({"name": "lat", "kind": "latency", "latency": m})
    lm = fr.metrics_of(LatencyMetrics)
    assert lm is not None and lm.p99_ms == m["p99_ms"]


def test_read_without_output_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    out = tmp_path / "latency-lat.client.out"
    out.write_text("")
    o = KINDS["latency"].read(out)
    assert o.error is not None and "no latency summary" in o.error and o.goodput_mbps is None
    assert o.metrics["blocks"] == 0


def test_preflight_names_a_missing_binary(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MPTCPLAB_LATENCY", str(tmp_path / "nope"))
    why = KINDS["latency"].host_problem()
    assert why is not None and "not built" in why and "\n" not in why
    monkeypatch.setenv("MPTCPLAB_LATENCY", "/bin/true")
    assert KINDS["latency"].host_problem() is None


def _record(n: int, p50: float, goodput: float, sndbuf: int) -> Repetition:
    lat = {"blocks": 10, "p50_ms": p50, "p95_ms": p50 + 1, "p99_ms": p50 + 2, "mean_ms": p50,
           "sndbuf_effective": sndbuf, "rcvbuf_effective": None, "blocked_s": 0.5 * n}
    return Repetition.model_validate({"name": "s", "rep": n, "goodput_mbps": 40.0, "flows": [
        {"name": "bulk", "kind": "iperf3", "role": "measured", "goodput_mbps": 40.0},
        {"name": "lat", "kind": "latency", "role": "competing", "goodput_mbps": goodput, "latency": lat}]})


def test_latency_metrics_select_the_named_flow() -> None:
    reps = [_record(1, 10.0, 2.0, 400_000), _record(2, 30.0, 4.0, 400_000), _record(3, 20.0, 3.0, 400_000)]
    for name in ("latency_p50_ms", "latency_p95_ms", "latency_p99_ms", "latency_mean_ms", "sndbuf_effective_bytes",
                 "rcvbuf_effective_bytes", "blocked_s", "flow_goodput_mbps"):
        assert METRICS[name].accepts == frozenset({"flow"}), name
    assert scenario_value(reps, "latency_p50_ms", flow="lat").value == 20.0  # median over reps
    assert scenario_value(reps, "latency_p99_ms", flow="lat").value == 22.0
    assert scenario_value(reps, "latency_mean_ms", flow="lat").value == pytest.approx(20.0)
    assert scenario_value(reps, "sndbuf_effective_bytes", flow="lat").value == 400_000
    assert scenario_value(reps, "blocked_s", flow="lat").value == pytest.approx(1.0)
    # not read back: no value, not zero
    assert scenario_value(reps, "rcvbuf_effective_bytes", flow="lat").n == 0
    # flow_goodput_mbps works for any kind; without flow: the primary measured flow (bulk, iperf3)
    assert scenario_value(reps, "flow_goodput_mbps", flow="lat").value == pytest.approx(3.0)
    assert scenario_value(reps, "flow_goodput_mbps").value == pytest.approx(40.0)
    assert METRICS["flow_goodput_mbps"].scales and not METRICS["latency_p50_ms"].scales
    # the primary flow is not a latency flow, a missing flow has nothing: None, left out
    assert scenario_value(reps, "latency_p50_ms").value is None
    assert scenario_value(reps, "latency_p50_ms", flow="nope").value is None


def test_published_checks_take_the_latency_metrics_with_a_flow_only() -> None:
    from mptcplab.errors import LabInputError
    from mptcplab.lab.metriccheck import check_metrics
    from mptcplab.lab.schema import Published

    def check(**expect: Any) -> None:
        source = {"id": "s", "title": "t", "authors": ["a"], "year": 2026, "document": "d", "kernel": "k",
                  "testbed": "t"}
        check_metrics(Published.model_validate({"source": source, "findings": [
            {"id": "f", "scenario": None, "statement": "s", "where": "w", "expect": expect}]}), Path("published.yml"))

    check(metric="latency_p99_ms", flow="lat", op="<", value=50)
    with pytest.raises(LabInputError, match="does not take window"):
        check(metric="latency_p99_ms", flow="lat", window=(0.0, 2.0), op="<", value=50)
    with pytest.raises(LabInputError, match="does not take path"):
        check(metric="skmem_snd_max_bytes", path="A", op="<", value=1)
