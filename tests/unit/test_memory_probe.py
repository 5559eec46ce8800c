"""The socket-memory probe (probes/memory.py) on real ``ss -tinmM`` output (tests/data/ss/
tinmM-*.txt, iproute2 6.1 on kernel 6.18, two namespaces joined by two tbf-shaped veth
pairs, 20 and 10 Mbit/s):

* *-latency: one MPTCP latency flow (port 5301, two subflows), client SO_SNDBUF 200000,
  server SO_RCVBUF 100000, sampled mid-transfer at both ends;
* *-two-flows: an MPTCP latency flow on port 5301 and a plain TCP one on port 5302 at once.

Parsing skmem, attribution to the run's flows by port and address, the per-connection
totals, the record summary and the metrics read from it; the dry-run lines."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from mptcplab.metrics import METRICS
from mptcplab.probes.memory import COLUMNS, FlowEnds, SsMemoryProbe, attribute, connection_totals, rows, summary
from mptcplab.probes.registry import REGISTRY
from mptcplab.record.model import Repetition
from mptcplab.results.aggregate import scenario_value
from mptcplab.tools.ss import parse_skmem, parse_ss, parse_ss_sockets

DATA = Path(__file__).resolve().parents[1] / "data" / "ss"
SERVER_ADDRS = frozenset({"10.77.1.2", "10.77.2.2"})
LAT = FlowEnds("lat", "client", "server", 5301, SERVER_ADDRS)
BULK = FlowEnds("bulk", "client", "server", 5302, SERVER_ADDRS)


def text(name: str) -> str:
    return (DATA / f"tinmM-{name}.txt").read_text()


def test_skmem_letters_become_the_kernels_names() -> None:
    assert parse_skmem("x skmem:(r25040,rb200000,t0,tb73216,f1640,w0,o0,bl0,d3) y") == {
        "rmem_alloc": 25040, "rcvbuf": 200000, "wmem_alloc": 0, "sndbuf": 73216, "fwd_alloc": 1640,
        "wmem_queued": 0, "optmem": 0, "backlog": 0, "drops": 3}
    assert parse_skmem("no memory here") == {}


def test_every_socket_with_its_kind_connection_and_memory() -> None:
    socks = parse_ss_sockets(text("client-latency"), t=7.0)
    assert [(s.kind, s.conn, s.lport) for s in socks] == [
        ("subflow", "dff76408", 46165), ("subflow", "dff76408", 45007), ("msk", "dff76408", 46165)]
    sub, join, msk = socks
    # the locked send buffer: 2 x 200000 on the msk and propagated to its subflows
    assert msk.skmem["sndbuf"] == sub.skmem["sndbuf"] == 400000 and msk.skmem["wmem_queued"] == 407152
    assert (sub.cwnd, sub.srtt_ms, sub.snd_wnd, sub.rcv_space, sub.send_q) == (178, 54.148, 131070, 14480, 49254)
    assert join.local == "10.77.2.1" and msk.cwnd is None and msk.t == 7.0
    server = parse_ss_sockets(text("server-latency"))
    assert {s.skmem["rcvbuf"] for s in server} == {200000}  # SO_RCVBUF 100000, doubled
    assert [s.skmem["rmem_alloc"] for s in server if s.kind == "msk"] == [25040]
    # the controllers' parser still reads the same output (it ignores skmem)
    assert len(parse_ss(text("client-latency"))) == 2


def test_plain_tcp_sockets_are_connections_of_their_own() -> None:
    socks = parse_ss_sockets(text("client-two-flows"))
    tcp = [s for s in socks if s.kind == "tcp"]
    assert [(s.conn, s.skmem["wmem_queued"]) for s in tcp] == [("10.77.1.1:58392-10.77.1.2:5302", 797912)]


def test_attribution_by_port_and_server_address() -> None:
    client = parse_ss_sockets(text("client-two-flows"))
    server = parse_ss_sockets(text("server-two-flows"))
    assert {attribute(s, "client", [LAT, BULK]) for s in client} == {("lat", "client"), ("bulk", "client")}
    assert {attribute(s, "server", [LAT, BULK]) for s in server} == {("lat", "server"), ("bulk", "server")}
    # a flow this run does not have: its sockets are not ours
    assert {attribute(s, "client", [LAT]) for s in client if s.pport == 5302} == {None}
    # the same port towards another server address is another run's or another lab's
    other = FlowEnds("lat", "client", "server", 5301, frozenset({"10.99.0.1"}))
    assert all(attribute(s, "client", [other]) is None for s in client)
    # a node that is neither end of the flow
    assert all(attribute(s, "router", [LAT, BULK]) is None for s in client)


def test_table_totals_and_summary() -> None:
    samples = [(100.0, "client", text("client-latency")), (100.0, "server", text("server-latency")),
               (100.1, "client", text("client-two-flows")), (100.1, "server", text("server-two-flows"))]
    table = rows(samples, [LAT, BULK], t_zero=99.0)
    assert list(table.columns) == COLUMNS
    assert sorted(table["t_run"].unique()) == pytest.approx([1.0, 1.1])
    tot = connection_totals(table)
    first = tot[(tot["t"] == 100.0) & (tot["role"] == "client")]
    assert first["snd_bytes"].tolist() == [52582 + 61528 + 407152]  # two subflows + msk
    srv = tot[(tot["t"] == 100.0) & (tot["role"] == "server")]
    assert srv["rcv_bytes"].tolist() == [25040]

    class Body:  # the summary asks only which end sends
        class traffic:  # noqa: N801
            flows: dict[str, object] = {}

    s = summary(table, Body())  # type: ignore[arg-type]
    assert s["samples"] == 2
    assert s["flows"]["lat"]["client"]["snd_max_bytes"] == 52582 + 61528 + 407152
    assert s["flows"]["lat"]["server"]["rcv_max_bytes"] == 25040
    assert s["flows"]["bulk"]["client"]["snd_max_bytes"] == 797912 and s["flows"]["lat"]["sender"] == "client"


def _record(n: int, snd: int, rcv: int, sender: str = "client") -> Repetition:
    other = "server" if sender == "client" else "client"
    return Repetition.model_validate({
        "name": "s", "rep": n, "flows": [{"name": "lat", "kind": "latency", "role": "measured"}],
        "probes": {"ss_interval": {"samples": 30, "flows": {"lat": {
            "sender": sender, sender: {"snd_max_bytes": snd, "rcv_max_bytes": 0},
            other: {"snd_max_bytes": 0, "rcv_max_bytes": rcv}}}}}})


def test_metrics_read_the_sender_and_the_receiver() -> None:
    reps = [_record(1, 500_000, 20_000), _record(2, 700_000, 90_000)]
    assert scenario_value(reps, "skmem_snd_max_bytes").value == 700_000  # max over reps
    assert scenario_value(reps, "skmem_rcv_max_bytes", flow="lat").value == 90_000
    down = [_record(1, 300_000, 10_000, sender="server")]
    assert scenario_value(down, "skmem_snd_max_bytes").value == 300_000
    assert scenario_value(down, "skmem_rcv_max_bytes").value == 10_000
    # a run without the probe: no value
    bare = [Repetition.model_validate({"name": "s", "flows": [{"name": "lat", "role": "measured"}]})]
    assert scenario_value(bare, "skmem_snd_max_bytes").n == 0
    assert METRICS["skmem_rcv_max_bytes"].accepts == frozenset({"flow"})


def test_registered_and_analyze_reads_the_table(tmp_path: Path) -> None:
    assert REGISTRY["ss_interval"] is SsMemoryProbe and SsMemoryProbe.table == "ss.csv"
    assert SsMemoryProbe.analyze(tmp_path).empty  # an older run: nothing, no error
    (tmp_path / "probes").mkdir()
    rows([(1.0, "client", text("client-latency"))], [LAT], None).to_csv(tmp_path / "probes" / "ss.csv", index=False)
    df = SsMemoryProbe.analyze(tmp_path)
    assert len(df) == 3 and df["t_run"].isna().all() and isinstance(df, pd.DataFrame)


def test_achieved_interval_is_the_median_gap_per_node() -> None:
    from mptcplab.probes.memory import achieved_interval_s

    samples = [(0.0, "a", ""), (0.1, "a", ""), (0.3, "a", ""), (0.05, "b", ""), (0.45, "b", "")]
    assert achieved_interval_s(samples) == pytest.approx(0.2)  # gaps 0.1, 0.2 (a), 0.4 (b)
    assert achieved_interval_s([(0.0, "a", "")]) is None
