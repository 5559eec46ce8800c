"""Traffic kinds: the argv each generates, the parsers on real tool output
(tests/data/traffic/, captured from iperf3 3.12, wrk 4.1 and the churn client on this
machine), the registry, fairness, and the Traffic step's dry-run lines for several kinds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter

from mptcplab.backends.netns import NetnsBackend
from mptcplab.emulation.nfqueue import NfqueueEmulator
from mptcplab.lab.loader import load_lab
from mptcplab.lab.schema import Flow
from mptcplab.net.plan import build_plan
from mptcplab.steps.base import Rep, RunContext
from mptcplab.steps.flows import event_started_flows, flow_duration, measured_flows
from mptcplab.steps.traffic import Traffic
from mptcplab.traffic.base import KindContext
from mptcplab.traffic.churn import TOOL
from mptcplab.traffic.churn_schema import ChurnFlow
from mptcplab.traffic.fairness import jain_index, shares
from mptcplab.traffic.http import parse_wrk, wrk_script
from mptcplab.traffic.http_schema import HttpFlow
from mptcplab.traffic.iperf3_schema import IperfFlow
from mptcplab.traffic.kinds import KINDS, kind_of
from mptcplab.traffic.udp_schema import UdpFlow

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "traffic"
FLOW = TypeAdapter(Flow)
BASE = {"client": "client", "server": "server", "server_address": "server:eth1"}


def net():
    lab = load_lab(ROOT / "labs" / "mtu")
    sc = lab.scenarios[0]
    be = NetnsBackend(prefix="mplabcdef-")
    plan = build_plan(lab.topology, sc, NfqueueEmulator(binary=Path("/bin/true")), be, Path("/tmp/x"))
    return lab, sc, be, plan


def ctx(duration: float = 3.0, multipath: bool | None = False) -> KindContext:
    return KindContext(net()[3].net, duration, multipath, Path("/tmp/rep"))


def flow(**kw: Any) -> Any:
    return FLOW.validate_python({**BASE, **kw})


def test_kind_defaults_to_iperf3_and_registry_covers_every_schema_class():
    assert isinstance(flow(), IperfFlow) and kind_of(flow()).name == "iperf3"
    assert isinstance(flow(kind="udp", rate="10mbit"), UdpFlow)
    assert isinstance(flow(kind="http"), HttpFlow) and isinstance(flow(kind="churn"), ChurnFlow)
    assert set(KINDS) == {"iperf3", "udp", "http", "churn", "latency", "hold", "transfer"}


def test_iperf3_byte_count_replaces_the_duration():
    c = ctx()
    argv = KINDS["iperf3"].client_argv(flow(bytes="1GB", direction="download"), "main", c)
    assert argv[argv.index("-n") + 1] == str(1000**3) and "-t" not in argv and "-R" in argv
    assert argv[:2] == ("mptcpize", "run")  # no -m in this iperf3: mptcpize
    timed = KINDS["iperf3"].client_argv(flow(), "main", c)
    assert timed[timed.index("-t") + 1] == "3" and "-n" not in timed
    mp = KINDS["iperf3"].client_argv(flow(), "main", ctx(multipath=True))
    assert "mptcpize" not in mp and "-m" in mp


def test_byte_count_flow_keeps_its_duration_limit_in_quick_runs():
    lab, sc, be, plan = net()
    rc = RunContext(lab, NfqueueEmulator(binary=Path("/bin/true")), quick=True)
    assert flow_duration(rc, sc.body, flow(bytes="1GB", duration="60s")) == 60
    assert flow_duration(rc, sc.body, flow(duration="60s")) == 3  # quick.duration


def test_udp_flood_argv_binds_its_path_at_its_rate():
    argv = KINDS["udp"].client_argv(flow(kind="udp", rate="40mbit", bind="client:eth2", length=1200), "flood", ctx())
    assert "mptcpize" not in argv and "-m" not in argv  # UDP is never MPTCP
    assert argv[argv.index("-u") + 1:argv.index("-u") + 3] == ("-b", "40000000")
    assert argv[argv.index("-B") + 1] == "10.0.2.2" and argv[argv.index("-l") + 1] == "1200"
    assert KINDS["udp"].server_argv(flow(kind="udp", rate="1mbit", port=5301), "f", ctx())[-4:] == \
        ("-1", "-p", "5301", "-J")


def test_udp_mptcp_is_refused():
    with pytest.raises(ValueError):
        flow(kind="udp", rate="1mbit", mptcp=True)


def test_udp_parser_reads_the_receivers_report():
    o = KINDS["udp"].read(DATA / "iperf3-udp-client.json")
    assert o.error is None
    assert o.goodput_mbps == pytest.approx(19.4558, rel=1e-3)
    assert o.metrics["packets"] == 1713 and o.metrics["lost_packets"] == 0
    assert o.metrics["jitter_ms"] == pytest.approx(0.00967, rel=1e-2)


def test_byte_count_parser_reports_the_bytes_received():
    o = KINDS["iperf3"].read(DATA / "iperf3-bytes-client.json")
    assert o.metrics["bytes_received"] == 5111808 and o.goodput_mbps and o.goodput_mbps > 0


def test_http_argv_serves_a_docroot_under_mptcpize_and_loads_it_with_wrk():
    f = flow(kind="http", sizes=["10KB", "1MB"], connections=16, threads=2)
    c = ctx(duration=4)
    srv = KINDS["http"].server_argv(f, "web", c)
    assert srv[:5] == ("mptcpize", "run", "busybox", "httpd", "-f")
    assert srv[srv.index("-p") + 1] == "10.0.5.2:8080" and srv[-1] == "/tmp/rep/www-web"
    cl = KINDS["http"].client_argv(f, "web", c)
    assert cl[:3] == ("mptcpize", "run", "wrk") and cl[cl.index("-c") + 1] == "16" and cl[cl.index("-d") + 1] == "4s"
    assert cl[cl.index("-s") + 1] == "/tmp/rep/wrk-web.lua" and cl[-1] == "http://10.0.5.2:8080/f10000.bin"
    tcp = KINDS["http"].client_argv(flow(kind="http", mptcp=False), "web", c)
    assert tcp[0] == "wrk" and "-s" not in tcp


def test_http_refuses_bind_and_more_threads_than_connections():
    with pytest.raises(ValueError, match="bind"):
        flow(kind="http", bind="client:eth1")
    with pytest.raises(ValueError, match="threads"):
        flow(kind="http", connections=1, threads=2)


def test_http_prepare_writes_files_of_the_sizes_and_the_rotation_script(tmp_path: Path):
    f = flow(kind="http", sizes=[100, "2KB"])
    KINDS["http"].prepare(f, "web", KindContext(net()[3].net, 1, None, tmp_path))
    assert (tmp_path / "www-web" / "f100.bin").stat().st_size == 100
    assert (tmp_path / "www-web" / "f2000.bin").stat().st_size == 2000
    assert '"/f100.bin", "/f2000.bin"' in (tmp_path / "wrk-web.lua").read_text()
    assert "wrk.format(nil, paths[i])" in wrk_script(["/a"])


def test_wrk_parser_reads_rate_percentiles_and_goodput():
    o = parse_wrk((DATA / "wrk-latency.txt").read_text())
    assert o.error is None
    m = o.metrics
    assert m["requests"] == 1761 and m["requests_per_s"] == pytest.approx(844.38)
    assert m["latency_p50_ms"] == pytest.approx(5.62) and m["latency_p99_ms"] == pytest.approx(60.28)
    assert m["latency_max_ms"] == pytest.approx(75.35) and m["socket_errors"] == 0
    assert o.goodput_mbps == pytest.approx(17.11 * 1024**2 * 8 / 2.09 / 1e6, rel=1e-6)


def test_wrk_parser_says_what_went_wrong():
    assert "unable to connect" in (parse_wrk((DATA / "wrk-refused.txt").read_text()).error or "")
    o = parse_wrk((DATA / "wrk-404.txt").read_text())
    assert o.error == "1156 of 1156 responses were not 2xx/3xx" and o.metrics["socket_errors"] == 1156


def test_churn_argv_runs_the_projects_own_tool_with_the_engines_python():
    f = flow(kind="churn", rate=300, count=1000, size="1KB", bind="client:eth1")
    argv = KINDS["churn"].client_argv(f, "ch", ctx(duration=5))
    assert argv[:3] == (sys.executable, "-I", str(TOOL)) and argv[3] == "client"
    assert argv[argv.index("--rate") + 1] == "300" and argv[argv.index("--count") + 1] == "1000"
    assert argv[argv.index("--size") + 1] == "1000" and argv[argv.index("--bind") + 1] == "10.0.1.2"
    assert argv[-1] == "--mptcp"
    srv = KINDS["churn"].server_argv(f, "ch", ctx())
    assert srv[3:] == ("server", "--address", "10.0.5.2", "--port", "7000", "--mptcp")



def test_latency_forces_the_buffers_a_lab_sets_and_only_those():
    # forced (SO_*BUFFORCE): the host's net.core.wmem_max/rmem_max must not change a lab's buffer
    locked = flow(kind="latency", sndbuf=524288, rcvbuf="200KB")
    client = KINDS["latency"].client_argv(locked, "lat", ctx())
    assert client[client.index("--sndbuf") + 1] == "524288" and "--force-buffers" in client
    server = KINDS["latency"].server_argv(locked, "lat", ctx())
    assert server[server.index("--rcvbuf") + 1] == "200000" and "--force-buffers" in server
    free = flow(kind="latency")  # autotuned: nothing set, nothing forced
    assert "--force-buffers" not in KINDS["latency"].client_argv(free, "lat", ctx())
    assert "--force-buffers" not in KINDS["latency"].server_argv(free, "lat", ctx())

def test_hold_is_a_background_flow_ready_when_the_server_counts_every_connection():
    f = flow(kind="hold", connections=3, port=7100)
    k = KINDS["hold"]
    assert k.background and f.role == "competing" and k.capture_analysis == "connections"
    argv = k.client_argv(f, "hold", ctx())
    assert argv[:4] == (sys.executable, "-I", str(TOOL), "hold") and argv[argv.index("--count") + 1] == "3"
    ready = k.client_ready_cmd(f)
    assert ready is not None and ready.node == "server" and "-M" in ready.argv and "( sport = :7100 )" in ready.argv
    two = "ESTAB 0 0 10.0.5.2:7100 10.0.1.2:40000\nESTAB 0 0 10.0.5.2:7100 10.0.1.2:40001\n"
    assert not k.client_ready(f, two) and k.client_ready(f, two + "ESTAB 0 0 10.0.5.2:7100 10.0.1.2:40002\n")
    tcp = flow(kind="hold", connections=0, mptcp=False)
    assert "-t" in (k.client_ready_cmd(tcp) or cmd_none()).argv and k.client_ready(tcp, "")


def cmd_none() -> Any:
    raise AssertionError("a hold flow has a readiness command")


def test_hold_parser_says_how_many_were_held(tmp_path: Path):
    p = tmp_path / "hold.json"
    p.write_text(json.dumps({"requested": 5, "held": 5, "failed": 0, "open_s": 0.01, "seconds": 3.0, "errors": {}}))
    assert KINDS["hold"].read(p).error is None and KINDS["hold"].read(p).metrics["held"] == 5
    p.write_text(json.dumps({"requested": 5, "held": 3, "failed": 2, "open_s": 0.01, "seconds": 3.0,
                             "errors": {"TimeoutError": 2}}))
    assert "held 3 of 5" in (KINDS["hold"].read(p).error or "")
    assert "no hold client report" in (KINDS["hold"].read(tmp_path / "none.json").error or "")


def test_churn_parser_reads_the_clients_report():
    o = KINDS["churn"].read(DATA / "churn-client.json")
    assert o.error is None and o.metrics["completed"] == 601 and o.metrics["rate_per_s"] == pytest.approx(300.209)


def test_churn_tool_runs_on_loopback(tmp_path: Path):
    """The tool itself, over plain TCP on loopback (MPTCP needs the namespaces: integration)."""
    import socket
    import time

    with socket.socket() as s:  # a free port (others may run this test at the same time)
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    srv = subprocess.Popen([sys.executable, "-I", str(TOOL), "server", "--address", "127.0.0.1", "--port", port])
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", int(port)), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        out = subprocess.run([sys.executable, "-I", str(TOOL), "client", "--address", "127.0.0.1", "--port", port,
                              "--count", "20", "--duration", "5", "--size", "100"],
                             capture_output=True, text=True, timeout=20)
    finally:
        srv.terminate()
        srv.wait(timeout=5)
    data = json.loads(out.stdout)
    assert data["completed"] == 20 and data["failed"] == 0 and len(data["connections"]) == 20


def test_jain_index_and_shares():
    assert jain_index([10.0, 10.0]) == pytest.approx(1.0)
    assert jain_index([10.0, 0.0]) == pytest.approx(0.5)
    assert jain_index([3.0, 1.0]) == pytest.approx(16 / 20)
    assert jain_index([]) is None and jain_index([0.0, 0.0]) is None
    assert shares({"a": 3.0, "b": 1.0}) == {"a": 0.75, "b": 0.25}
    assert shares({"a": 0.0}) == {"a": None}


def rep_with(flows: dict[str, Any]) -> Rep:
    lab, sc, be, plan = net()
    body = sc.body.model_copy(update={"traffic": sc.body.traffic.model_copy(
        update={"flows": {n: flow(**f) for n, f in flows.items()}})})
    sc2 = sc.__class__(**{**sc.__dict__, "body": body})
    plan = build_plan(lab.topology, sc2, NfqueueEmulator(binary=Path("/bin/true")), be, Path("/tmp/x"))
    return Rep(RunContext(lab, NfqueueEmulator(binary=Path("/bin/true")), quick=True), sc2, Path("/tmp/x"), be, plan)


def test_traffic_step_lists_every_kinds_server_readiness_and_client():
    rep = rep_with({"main": {"bind": "client:eth1"}, "web": {"kind": "http", "role": "competing"},
                    "flood": {"kind": "udp", "rate": "20mbit", "port": 5301, "start": "1s", "role": "competing"}})
    out = [rep.backend.render(p.cmd) for p in Traffic().commands(rep)]
    text = "\n".join(out)
    assert "busybox httpd -f -p 10.0.5.2:8080" in text and "wrk -t 1 -c 8 -d 3s --latency" in text
    assert "ss -Hltn 'sport = :8080'" in text and "ss -Hltn 'sport = :5301'" in text
    clients = [line for line in out if " -c 10.0.5.2" in line or " wrk " in line]
    assert len(clients) == 3 and "-u -b 20000000" in clients[-1]  # the +1 s flood is last
    assert measured_flows(rep.body) == ["main"] and event_started_flows(rep.body) == set()


def test_flow_control_starts_once_stops_with_sigint_and_reports_the_start(tmp_path: Path):
    """The CONTRACT seam: start(name) / stop(name), from any thread."""
    import signal
    import threading

    from mptcplab.traffic.control import FlowControl

    sent: list[int] = []
    seen: list[tuple[str, float]] = []

    def spawn(name: str) -> tuple[subprocess.Popen[bytes], Path]:
        return subprocess.Popen(["sleep", "30"]), tmp_path / f"{name}.out"

    def send(p: subprocess.Popen[bytes], sig: int) -> None:
        sent.append(sig)
        p.send_signal(sig)

    fc = FlowControl(spawn, send, lambda n, t: seen.append((n, t)))
    t = threading.Thread(target=fc.start, args=("flood",))
    t.start()
    t.join()
    fc.start("flood")  # a second start of the same flow does nothing
    assert list(fc.started) == ["flood"] and [n for n, _ in seen] == ["flood"] and fc.running() == ["flood"]
    fc.stop("flood")
    fc.started["flood"].proc.wait(timeout=5)
    assert sent == [signal.SIGINT] and fc.started["flood"].stopped and fc.running() == []
    fc.stop("flood")  # not running: nothing sent
    fc.stop("ghost")
    assert sent == [signal.SIGINT]
