"""Every analyzed MPTCP flow gets the depth tables (runner.analyze -> analysis.write_tables,
top-level flow in the repetition's directory, the others in flows/<name>/), and joins to a
server endpoint's own port (``port:``) are subflows of their connection (FlowSpec.join_ports).

Connections are written packet by packet (test_depth.Conn) into capture files; the lab is
the bad-lab suite's valid base with a second MPTCP flow.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
from pathlib import Path

import pandas as pd
import pcapkit as K
import pytest
import yaml
from test_depth import ACK, C1, C2, PSH, SPEC, SYN, Conn, reinjection_conn

from mptcplab.analysis import CaptureFile, FlowAnalysis, analyze_flow, pcapread
from mptcplab.analysis.analyze import TABLE_FILES
from mptcplab.analysis.labspec import join_ports
from mptcplab.analysis.standalone import analyze_files
from mptcplab.capture import capture_file_name
from mptcplab.lab.loader import load_lab
from mptcplab.net.plan import network_for
from mptcplab.record.model import CalibrationCheck, LinkCalibration, Repetition, Summary
from mptcplab.results.read import load_dsn, load_timeseries
from mptcplab.run import AnalysisJob, analyze
from mptcplab.traffic.base import ClientRun
from mptcplab.traffic.connections import check_connections

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
pytestmark = pytest.mark.skipif(not pcapread.library_path().is_file(),
                                reason="native capture reader not built (make -C native)")


N = 15       # segments per subflow: above the contribution rule's floor of 10 full ones


def striped(c: Conn) -> Conn:
    """Handshakes, then N segments on each subflow in turn, each ACKed."""
    c.handshakes()
    for i in range(N):
        c.data(1, 101 + 1000 * i, 1 + 2000 * i, 1 + 1000 * i)
        c.data(2, 701 + 1000 * i, 1001 + 2000 * i, 1 + 1000 * i)
        c.ack(1, 1101 + 1000 * i, 2001 + 2000 * i)
        c.ack(2, 1701 + 1000 * i, 2001 + 2000 * i)
    return c


def joined_on_10001() -> Conn:
    """The join went to port 10001 (an announced address:port)."""
    return striped(Conn(join_port=10001))


def analyze_one_file(path: Path, ports: tuple[int, ...]) -> FlowAnalysis:
    return analyze_flow([CaptureFile(path, "p")], dataclasses.replace(SPEC, join_ports=ports))


def test_join_to_an_announced_port_is_a_subflow_of_the_connection(tmp_path: Path) -> None:
    path = joined_on_10001().write(tmp_path / "j.pcap")
    r = analyze_one_file(path, (10001,))
    assert [(s.kind, s.dport, s.path) for s in r.subflows] == [("mp_capable", 5201, "A"), ("mp_join", 10001, "B")]
    b = r.subflows_on("B")[0]
    assert b.established and b.bytes == 1000 * N and b.share == pytest.approx(0.5)
    assert r.verified and r.connections == 1
    assert set(r.dsn.to_pandas()["subflow"]) == {f"{C1}:40000", f"{C2}:40001"}
    assert set(r.timeseries.to_pandas()["path"]) == {"A", "B"}
    # without the port, the join is not seen: path B has no subflow
    blind = analyze_one_file(path, ())
    assert [s.dport for s in blind.subflows] == [5201] and not blind.verified


def test_a_plain_connection_on_a_join_port_is_not_the_flows(tmp_path: Path) -> None:
    c = joined_on_10001()
    # another application's TCP connection to port 10001, carrying more than the flow
    c.add(C1, 45000, c.s, 10001, 1, 0, SYN, b"")
    c.add(c.s, 10001, C1, 45000, 9, 2, SYN | ACK, b"")
    c.add(C1, 45000, c.s, 10001, 2, 10, ACK, b"")
    for i in range(5):
        c.add(C1, 45000, c.s, 10001, 2 + 1000 * i, 10, ACK | PSH, b"", b"x" * 1000)
    r = analyze_one_file(c.write(tmp_path / "p.pcap"), (10001,))
    assert r.connections == 1 and sorted(s.sport for s in r.subflows) == [40000, 40001]


def test_connection_check_counts_joins_to_other_ports(tmp_path: Path) -> None:
    """http/churn flows (traffic/connections.py) follow the same ports."""
    caps = [CaptureFile(joined_on_10001().write(tmp_path / "j.pcap"), "server:eth1")]
    seen = check_connections(caps, SPEC.server_ip, 5201, "server", join_ports=(10001,))
    assert seen.mptcp == 1 and seen.summary()["connections_joined"] == 1
    assert check_connections(caps, SPEC.server_ip, 5201, "server").summary()["connections_joined"] == 0


def test_analyze_command_follows_joins_to_other_ports(tmp_path: Path) -> None:
    path = joined_on_10001().write(tmp_path / "j.pcap")
    fa, g = analyze_files([path], tmp_path / "out")
    assert g.server_port == 5201 and g.join_ports == (10001,)
    assert any("join ports 10001" in h for h in g.how)
    assert [s.dport for s in fa.subflows] == [5201, 10001]


def test_join_ports_are_the_servers_port_endpoints() -> None:
    lab = load_lab(ROOT / "labs" / "http")
    by_name = {s.name: s for s in lab.scenarios}
    eight = by_name["reorder-8sf-download"].body
    assert join_ports(eight, eight.traffic.flows["bulk"]) == (10000, 10001, 10002, 10003)
    # the web scenarios announce the flow's own port: nothing else to follow
    web = next(s for n, s in by_name.items() if n.startswith("mptcp-")).body
    assert join_ports(web, web.traffic.flows["web"]) == ()
    tcp = next(s for n, s in by_name.items() if n.startswith("tcp-")).body
    assert join_ports(tcp, tcp.traffic.flows["web"]) == ()


def split_by_client(conns: list[Conn], out: Path, points: dict[str, str]) -> None:
    """Each client address's frames into its capture point's file."""
    frames = sorted((f for c in conns for f in c.frames), key=lambda f: f[0])
    for point, ip in points.items():
        raw = K.ip_bytes(ip)
        mine = [f for f in frames if raw in (f[1][26:30], f[1][30:34])]   # IPv4 src, dst
        K.write_pcap(out / capture_file_name(point), mine)


def two_flow_rep(tmp_path: Path, ran: tuple[str, ...] = ("main", "second"),
                 calibration: list[LinkCalibration] | None = None) -> tuple[Path, Path, Repetition]:
    """The bad-lab suite's valid base with a second MPTCP flow, its captures written and analyzed:
    (run directory, repetition directory, the record analyze returned). ``ran``: the flows whose
    client ran (the others never started)."""
    lab_dir = tmp_path / "lab"
    shutil.copytree(DATA / "bad-labs" / "_base", lab_dir)
    exp = yaml.safe_load((lab_dir / "experiment.yml").read_text())
    exp["traffic"]["flows"]["second"] = {"client": "client", "server": "server", "server_address": "server:eth1",
                                         "mptcp": True, "duration": "10s", "port": 5202}
    (lab_dir / "experiment.yml").write_text(yaml.safe_dump(exp))
    lab = load_lab(lab_dir)
    sc = next(s for s in lab.scenarios if s.name.startswith("mptcp"))
    net = network_for(lab.topology, sc, "experiment.yml")
    srv = str(net.address("server:eth1"))
    assert (str(net.address("client:eth1")), str(net.address("client:eth2"))) == (C1, C2)
    run = tmp_path / "run"
    out = run / "scenarios" / sc.name / "rep1"
    out.mkdir(parents=True)
    main = striped(Conn(s=srv))
    second = reinjection_conn(s=srv, port=5202, cport=41000, kc=0x0102030405060708, ks=0x1112131415161718)
    split_by_client([main, second], out, {"client:eth1": C1, "client:eth2": C2})
    report = DATA / "mptcp_b_starved__iperf3.json"
    clients = {n: ClientRun(report, 0.0, "iperf3", 0) for n in ran}
    return run, out, analyze(AnalysisJob(sc.name, 1, {}, out, sc.body, net, "main", clients, calibration or [], {}, []))


def test_every_mptcp_flow_gets_its_depth_tables(tmp_path: Path) -> None:
    run, out, rec = two_flow_rep(tmp_path)

    files = [*TABLE_FILES.values(), "subflows.csv"]
    # the top-level flow's tables stay where they were
    for f in files:
        assert (out / f).is_file(), f
    assert set(pd.read_csv(out / "dsn.csv")["subflow"]) == {f"{C1}:40000", f"{C2}:40001"}
    assert pd.read_csv(out / "mptcp_retransmissions.csv").empty
    assert not (out / "flows" / "main").exists()
    # the other flow's: the same files, its own connection
    d = out / "flows" / "second"
    for f in files:
        assert (d / f).is_file(), f
    assert set(pd.read_csv(d / "dsn.csv")["subflow"]) == {f"{C1}:41000", f"{C2}:41001"}
    rx = pd.read_csv(d / "mptcp_retransmissions.csv")
    assert list(rx.columns) == list(pd.read_csv(out / "mptcp_retransmissions.csv").columns)
    assert (rx["subflow"].tolist(), rx["first_subflow"].tolist()) == ([f"{C2}:41001"], [f"{C1}:41000"])
    assert set(pd.read_csv(d / "subflows.csv")["sport"]) == {41000, 41001}
    # the flow's record carries the depth summary the top level's verdict carries
    flows = {f.name: f for f in rec.flows}
    assert rec.mptcp == flows["main"].mptcp
    mp = flows["second"].mptcp
    assert (mp.negotiated, mp.data_retransmissions, mp.data_retrans_bytes) == (True, 1, 1000)
    assert mp.dss_checksum is False and mp.checksum_required is False
    assert {"hol_segments", "ooo_share", "hol_p95_ms", "hol_unavailable"} <= mp.model_fields_set
    assert rec.mptcp.data_retransmissions == 0
    # rep.json is the record analyze returns
    assert Repetition.model_validate_json((out / "rep.json").read_text()) == rec
    # and the result model's loaders read either flow's
    summary = Summary(lab="base", run_id="t", scenarios=[rec])
    assert set(load_dsn(run, summary)["subflow"]) == {f"{C1}:40000", f"{C2}:40001"}
    assert load_dsn(run, summary, flow="main").equals(load_dsn(run, summary))
    theirs = load_dsn(run, summary, flow="second")
    assert set(theirs["subflow"]) == {f"{C1}:41000", f"{C2}:41001"} and theirs.attrs["missing"] == []
    assert set(load_timeseries(run, summary, flow="second")["subflow"]) == {f"{C1}:41000", f"{C2}:41001"}
    assert load_dsn(run, summary, flow="absent").empty


def _link(ok: bool) -> LinkCalibration:
    return LinkCalibration(link="l", ok=ok, checks=[CalibrationCheck(quantity="rtt_min_ms", ok=ok)])


@pytest.mark.parametrize(("case", "ran", "links_ok"), [("both", ("main", "second"), (True, False)),
                                                       ("second-not-run", ("main",), (True, True))])
def test_rep_json_is_the_one_the_dict_records_wrote(tmp_path: Path, case: str, ran: tuple[str, ...],
                                                    links_ok: tuple[bool, ...]) -> None:
    """rep.json, byte for byte, as analyze wrote it when the flows' records were dicts
    (tests/data/flow-tables-rep/<case>.json, written then from this fixture; the analysis'
    own time set to 0.0): the typed FlowResults and calibration change nothing in the file."""
    _, out, rec = two_flow_rep(tmp_path, ran, [_link(ok) for ok in links_ok])
    text = re.sub(r'"analysis_seconds": [0-9.e-]+', '"analysis_seconds": 0.0', (out / "rep.json").read_text())
    assert text == (DATA / "flow-tables-rep" / f"{case}.json").read_text()
    assert rec.calibration_ok is all(links_ok)
    flows = {f.name: f for f in rec.flows}
    assert list(flows) == ["main", "second"] and rec.mptcp is flows["main"].mptcp
    if case == "second-not-run":
        assert flows["second"].verified is False and flows["second"].mptcp.requested
        assert any(w.code == "flow-not-run" for w in rec.warnings)
