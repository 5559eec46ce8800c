"""The containerlab backend against real containers.

`containerlab deploy` refuses this machine's kernel (it needs /proc/modules), so the test
does what deploy would: it creates the containers under containerlab's names
(``clab-<lab>-<node>``, with containerlab's labels), from the lab's images, from the
topology copy the backend would deploy (binds, creation-time sysctls, no management
network), privileged (or the closest this machine allows), and wires the topology's
links as veth pairs between the containers' network namespaces, ends named as the
endpoints say, MTU as containerlab sets it. Then one quick repetition of the mtu lab's
mptcp-bottleneck scenario runs through the real runner, with the backend in its
pre-created mode (no deploy/destroy): node execution, FRR routes on the routers, rate
shaping (tbf: this kernel has no netem, and rate-only links need none), captures
into the run directory, traffic, stop and teardown. A second test runs a two-host lab
whose nodes use the userspace path manager the same way: its listener (``ip mptcp monitor``)
in the containers, the token read from ``ss`` in the container, and upm_tool.py run by the
image's python3 from the engine's package bound in. A third runs the newer lab features in
containers: a block-tcp host filter (nftables in the server's container), a transfer with
direction download, and link_down/link_up with ends: one. Everything is removed in finally.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import secrets
import shutil
import signal
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from mptcplab import runstate
from mptcplab.backends import containerlab as clab
from mptcplab.backends.containerlab import LAB_LABEL, ContainerlabBackend, container_name
from mptcplab.emulation.tc import NetemEmulator
from mptcplab.lab.loader import TOPOLOGY, load_lab
from mptcplab.lab.model import Lab, ScenarioRun
from mptcplab.net.plan import network_for
from mptcplab.run import analyze, measure_repetition
from mptcplab.run.measure import Measured
from mptcplab.run.retry import REPETITION_RETRIED
from mptcplab.steps.base import RunContext

pytestmark = [pytest.mark.appliance, pytest.mark.docker]

REPO = Path(__file__).resolve().parents[2]
IMAGES = ("mptcplab/host:latest", "mptcplab/router:latest")
CLAB_DEFAULT_MTU = 9500  # containerlab's MTU for a link that names none


def sh(argv: list[str], check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"{argv} exited {p.returncode}: {p.stderr.strip()}")
    return p


def docker_answers() -> bool:
    return shutil.which("docker") is not None and sh(["docker", "version"], check=False, timeout=60).returncode == 0


@pytest.fixture(scope="module")
def docker_ready() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root (veth pairs between container namespaces)")
    enabled = Path("/proc/sys/net/mptcp/enabled")
    if not enabled.exists() or enabled.read_text().strip() != "1":
        pytest.skip("the kernel has no MPTCP (net.mptcp.enabled)")
    if not docker_answers():
        ensure = REPO / "tests/appliance/ensure-dockerd.sh"
        if ensure.exists():
            subprocess.run([str(ensure)], capture_output=True, timeout=180)
        if not docker_answers():
            pytest.skip("no working Docker daemon (tests/appliance/ensure-dockerd.sh could not start one)")
    missing = [i for i in IMAGES if sh(["docker", "image", "inspect", i], check=False).returncode != 0]
    if missing:
        pytest.skip(f"lab images missing: {', '.join(missing)} (build them: images/build.sh --offline)")


_PRIV: list[str] | None = None


def privileged() -> list[str]:
    """containerlab runs nodes --privileged; where this sandbox refuses that (a capability
    missing from its bounding set), the nearest: every other capability, no seccomp or
    AppArmor profile, writable /proc/sys."""
    global _PRIV
    if _PRIV is None:
        ok = sh(["docker", "run", "--rm", "--privileged", "--network", "none", IMAGES[0], "true"],
                check=False).returncode == 0
        _PRIV = ["--privileged"] if ok else [
            "--cap-add", "ALL", "--cap-drop", "SYS_RESOURCE", "--security-opt", "seccomp=unconfined",
            "--security-opt", "apparmor=unconfined", "--security-opt", "systempaths=unconfined"]
    return _PRIV


def create_lab_like_containerlab(topo: dict[str, Any]) -> None:
    """Containers and links as `containerlab deploy -t <topo>` makes them."""
    lab = topo["name"]
    pids: dict[str, str] = {}
    for node, spec in topo["topology"]["nodes"].items():
        assert spec["network-mode"] == "none"
        argv = ["docker", "run", "-d", "--name", container_name(lab, node), "--hostname", node, "--network", "none",
                *privileged(), "--label", f"{LAB_LABEL}={lab}", "--label", f"clab-node-name={node}",
                "--label", "clab-node-kind=linux"]
        for b in spec.get("binds", []):
            argv += ["-v", b]
        for k, v in (spec.get("sysctls") or {}).items():
            argv += ["--sysctl", f"{k}={v}"]
        sh([*argv, spec["image"]])
        pids[node] = sh(["docker", "inspect", "-f", "{{.State.Pid}}", container_name(lab, node)]).stdout.strip()
    for link in topo["topology"]["links"]:
        (na, ia), (nb, ib) = (e.split(":", 1) for e in link["endpoints"])
        mtu = str(link.get("mtu", CLAB_DEFAULT_MTU))
        # created directly in the two namespaces: nothing appears in the host's
        sh(["ip", "link", "add", "name", ia, "mtu", mtu, "netns", pids[na],
            "type", "veth", "peer", "name", ib, "mtu", mtu, "netns", pids[nb]])
        for node, iface in ((na, ia), (nb, ib)):
            sh(["nsenter", "-t", pids[node], "-n", "ip", "link", "set", iface, "up"])


def remove_lab(lab: str) -> None:
    ids = sh(["docker", "ps", "-aq", "--filter", f"label={LAB_LABEL}={lab}"], check=False).stdout.split()
    if ids:
        sh(["docker", "rm", "-f", "-v", *ids], check=False)


def leftovers(prefix: str) -> list[str]:
    return sh(["docker", "ps", "-a", "--filter", f"name={prefix}", "--format", "{{.Names}}"]).stdout.split()


def host_ifnames() -> set[str]:
    return {line.split(":")[1].strip().split("@")[0] for line in sh(["ip", "-o", "link", "show"]).stdout.splitlines()}


def in_container(c: str, *argv: str) -> str:
    return sh(["docker", "exec", c, *argv]).stdout


@contextmanager
def pre_created(lab: Lab, sc: ScenarioRun, prefix: str, run_dir: Path
                ) -> Iterator[tuple[dict[str, Any], list[ContainerlabBackend], Callable[[Any], ContainerlabBackend]]]:
    """The lab's containers and links made as containerlab would (the backend's topology
    copy), a make_backend for the runner in pre-created mode, and everything removed at the
    end, checked: no container, no veth end in the host, no namespace."""
    backends: list[ContainerlabBackend] = []

    def make_backend(log: Any) -> ContainerlabBackend:
        # A pre-created lab keeps its configuration (one repetition per lab): an attempt
        # measured again (iperf3's control exchange broke before any data) gets a fresh
        # lab, as a deploying backend would.
        if backends:
            remove_lab(prefix)
            create_lab_like_containerlab(topo)
        be = ContainerlabBackend(lab.path / TOPOLOGY, lab_name=prefix, binds=[run_dir], log=log, deploy=False)
        backends.append(be)
        return be

    probe = ContainerlabBackend(lab.path / TOPOLOGY, lab_name=prefix, binds=[run_dir], deploy=False)
    topo = probe.clab_topology(network_for(lab.topology, sc, "experiment.yml"))
    lab_ifaces = {e.split(":", 1)[1] for link in topo["topology"]["links"] for e in link["endpoints"]}
    host_before = host_ifnames()
    try:
        create_lab_like_containerlab(topo)
        yield topo, backends, make_backend
    finally:
        remove_lab(prefix)
    assert leftovers(prefix) == [], "containers left behind"
    # the veth ends went with the containers' namespaces; none is in the host's
    assert not (host_ifnames() - host_before) & lab_ifaces
    assert not [ns for ns in sh(["ip", "netns", "list"]).stdout.split() if ns.startswith(prefix)]


def measure(lab: Lab, sc: ScenarioRun, out: Path, make_backend: Callable[[Any], ContainerlabBackend]) -> Measured:
    ctx = RunContext(lab, NetemEmulator(), quick=True, log=print, calibrate=True, make_backend=make_backend)
    return measure_repetition(ctx, sc, 1, out, print)  # once more if iperf3 never started


def small_lab(tmp_path: Path, name: str, topo: dict[str, Any], exp: dict[str, Any]
              ) -> tuple[Lab, ScenarioRun, Path, Path]:
    """A one-scenario lab written under tmp_path: the lab, its scenario, the run directory
    and its repetition's directory."""
    (tmp_path / "lab").mkdir()
    (tmp_path / "lab" / TOPOLOGY).write_text(yaml.safe_dump({"name": name, "topology": topo}))
    (tmp_path / "lab" / "experiment.yml").write_text(yaml.safe_dump(exp, sort_keys=False))
    lab = load_lab(tmp_path / "lab")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    return lab, lab.scenarios[0], run_dir, run_dir / "rep1"


def measure_and_read(lab: Lab, sc: ScenarioRun, out: Path, make_backend: Callable[[Any], ContainerlabBackend]
                     ) -> tuple[Measured, dict[str, Any], dict[str, dict[str, str]]]:
    """One repetition measured and analyzed: the measurement, the record, events.csv by action."""
    measured = measure(lab, sc, out, make_backend)
    record = analyze(measured.job).model_dump()
    with (out / "events.csv").open() as f:
        events = {r["action"]: r for r in csv.DictReader(f)}
    return measured, record, events


def test_one_repetition_on_containers_named_as_containerlab_names_them(docker_ready: None, tmp_path: Path) -> None:
    prefix = "mplt" + secrets.token_hex(4)
    lab = load_lab(REPO / "labs/mtu")
    sc = next(s for s in lab.scenarios if s.name == "mptcp-bottleneck")
    # The link rate check serves iperf3 on the link's far end, here a router, and the
    # router image has no iperf3: RTT checks (ping) stay, the rate check is off, and the
    # shaping is checked below from the qdiscs and the goodput instead.
    body = sc.body.model_copy(update={"calibration": sc.body.calibration.model_copy(update={"rate_check": False})})
    sc = dataclasses.replace(sc, body=body)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    out = run_dir / "rep1"
    with pre_created(lab, sc, prefix, run_dir) as (topo, backends, make_backend):
        measured = measure(lab, sc, out, make_backend)
        record = analyze(measured.job).model_dump()  # read as rep.json holds it
        subs = {s["path"]: s for s in record["subflows"]}
        print(f"\ncontainerlab backend, {sc.name}: {record['goodput_mbps']:.1f} Mbit/s, verified "
              f"{record['mptcp']['verified']}, segments A/B {subs.get('A', {}).get('median_seg')}/"
              f"{subs.get('B', {}).get('median_seg')}, captures {record['capture_stats']}, "
              f"measured in {measured.seconds:.1f} s")

        # MPTCP, both subflows carrying data; PMTUD found path B's 1500 bytes
        assert record["mptcp"]["negotiated"] and record["mptcp"]["verified"], record["warnings"]
        assert subs["A"]["bytes"] > 0 and subs["B"]["bytes"] > 0, record["subflows"]
        assert subs["A"]["median_seg"] > 1500 and subs["B"]["median_seg"] <= 1500 - 40
        assert subs["B"]["icmp_frag_needed"] >= 1 and 1500 in subs["B"]["icmp_mtus"]
        assert 20 < record["goodput_mbps"] <= 200, record["goodput_mbps"]
        # tcpdump stopped by SIGINT inside the container: counters printed, file in the run directory
        for point in ("client:eth1", "client:eth2"):
            stats = record["capture_stats"][point]
            assert stats.get("captured", 0) > 0 and stats.get("dropped") == 0, stats
            assert (out / f"capture-{point.replace(':', '-')}.pcap").stat().st_size > 0
        # the link checks pinged through the containers; the shaping is tbf at 100 Mbit/s
        assert {c.link for c in measured.job.calibration} == {"client:eth1--ra:eth1", "client:eth2--rb1:eth1"}
        for entry in measured.job.calibration:
            rtt = [c for c in entry.checks if c.quantity == "rtt_min_ms"]
            assert rtt and rtt[0].measured is not None, entry
        for node, dev in (("client", "eth1"), ("client", "eth2"), ("ra", "eth1"), ("rb1", "eth1")):
            qdisc = in_container(container_name(prefix, node), "tc", "qdisc", "show", "dev", dev)
            assert "tbf" in qdisc and "rate 100Mbit" in qdisc, (node, qdisc)
        # sysctls set inside the containers and read back
        assert measured.sysctls["rb1"]["net.ipv4.ip_forward"] == "1"
        assert measured.sysctls["client"]["net.ipv4.tcp_mtu_probing"] == "0"
        assert measured.sysctls["client"]["net.ipv4.conf.all.rp_filter"] == "0"

        # routers: FRR static routes, installed by zebra
        for router, prefixes in (("ra", ("10.0.2.0/24", "10.0.3.0/24")),
                                 ("rb1", ("10.0.1.0/24", "10.0.4.0/24", "10.0.5.0/24"))):
            c = container_name(prefix, router)
            shown = in_container(c, "vtysh", "-c", "show ip route static")
            kernel = in_container(c, "ip", "-4", "route", "show").splitlines()
            for p in prefixes:
                assert f"S>* {p}" in shown, shown
                # zebra's protocol 196, which FRR's rt_protos.d names "static"
                assert any(line.startswith(p + " ") and "proto static" in line for line in kernel), kernel
        log = (out / "commands.log").read_text()
        assert f"docker exec {container_name(prefix, 'rb1')} vtysh -c 'configure terminal'" in log
        assert f"docker exec {container_name(prefix, 'rb1')} ip route add" not in log
        assert (f"docker exec {container_name(prefix, 'client')} ip route add default via 10.0.2.1 dev eth2 table 101"
                in log)

        # teardown: no process of the run is left in any container, nor a PID file, nor the state file
        for node in topo["topology"]["nodes"]:
            ps = in_container(container_name(prefix, node), "ps", "-eo", "comm").split()
            assert not {"iperf3", "tcpdump", "ping"} & set(ps), (node, ps)
            assert in_container(container_name(prefix, node), "sh", "-c",
                                "ls /tmp | grep -c mptcplab- || true").strip() == "0"
        assert not (runstate.STATE_DIR / f"clab-{prefix}.json").exists()
        # at most one attempt again, and then the record says so
        assert len(backends) in (1, 2), len(backends)
        retried = [w for w in measured.job.warnings if isinstance(w, dict) and w["code"] == REPETITION_RETRIED]
        assert (len(backends) == 2) == bool(retried), record["warnings"]


def test_clean_removes_the_containers_of_a_killed_run(docker_ready: None) -> None:
    """A run killed after deploy leaves containers and its state file: `mptcplab clean`
    removes them by containerlab's lab label; the lab of a live run stays."""
    dead_lab, live_lab = ("mplt" + secrets.token_hex(4) for _ in range(2))
    dead = subprocess.Popen(["true"])
    dead.wait()
    live = subprocess.Popen(["sleep", "300"])
    states = [runstate.STATE_DIR / f"clab-{dead_lab}.json", runstate.STATE_DIR / f"clab-{live_lab}.json"]
    try:
        runstate.STATE_DIR.mkdir(parents=True, exist_ok=True)
        for lab, pid, state in ((dead_lab, dead.pid, states[0]), (live_lab, live.pid, states[1])):
            sh(["docker", "run", "-d", "--name", container_name(lab, "h"), "--network", "none",
                "--label", f"{LAB_LABEL}={lab}", IMAGES[0], "sleep", "infinity"])
            state.write_text(json.dumps({"lab": lab, "pid": pid, "owned": True, "topology": None,
                                         "containers": [container_name(lab, "h")]}))
        removed = clab.clean()
        assert container_name(dead_lab, "h") in removed
        assert leftovers(dead_lab) == [] and not states[0].exists()
        assert leftovers(live_lab) == [container_name(live_lab, "h")] and states[1].exists()
    finally:
        live.send_signal(signal.SIGKILL)
        live.wait()
        for lab, state in zip((dead_lab, live_lab), states, strict=True):
            remove_lab(lab)
            state.unlink(missing_ok=True)
    assert leftovers(dead_lab) == [] and leftovers(live_lab) == []


#: two hosts joined by two links (paths A and B), both on the userspace path manager
UPM_TOPO = {"nodes": {n: {"kind": "linux", "image": IMAGES[0]} for n in ("client", "server")},
            "links": [{"endpoints": ["client:eth1", "server:eth1"]}, {"endpoints": ["client:eth2", "server:eth2"]}]}
ANNOUNCE, CREATE = 1.0, 2.0
UPM_EXP: dict[str, Any] = {
    "paths": {"A": "client:eth1", "B": "client:eth2"},
    "nodes": {n: {"role": "host", "mptcp": {"path_manager": "userspace"}} for n in ("client", "server")},
    "links": {"client:eth1": {"rate": "20mbit"}, "client:eth2": {"rate": "20mbit"}},
    "traffic": {
        "flows": {"main": {"client": "client", "server": "server", "server_address": "server:eth1",
                           "bind": "client:eth1", "mptcp": True, "duration": "5s"}},
        "events": [
            {"at": ANNOUNCE, "action": "upm_announce", "node": "server", "flow": "main",
             "address": "server:eth2", "id": 5},
            {"at": CREATE, "action": "upm_subflow_create", "node": "client", "flow": "main",
             "local": "client:eth2", "local_id": 2, "remote": "server:eth2"}]},
    "capture": [{"point": "client:eth1"}, {"point": "client:eth2"}],
    "calibration": {"enabled": False},
    "quick": {"duration": "5s", "repetitions": 1},
    "scenarios": [{"name": "upm", "description": "userspace PM: server:eth2 announced at 1 s, "
                                                 "a subflow to it from client:eth2 at 2 s"}],
}


def test_userspace_path_manager_events_in_containers(docker_ready: None, tmp_path: Path) -> None:
    """The server announces server:eth2 at 1 s, the client opens a subflow from client:eth2
    to it at 2 s, both through upm_tool.py in the containers; the join is accepted because
    the listener runs in the server's container (without it the kernel refuses it)."""
    prefix = "mplt" + secrets.token_hex(4)
    lab, sc, run_dir, out = small_lab(tmp_path, "upm", UPM_TOPO, UPM_EXP)
    net = network_for(lab.topology, sc, "experiment.yml")
    with pre_created(lab, sc, prefix, run_dir) as (topo, backends, make_backend):
        measured, record, events = measure_and_read(lab, sc, out, make_backend)
        print(f"\ncontainerlab backend, userspace PM: subflows {record['subflows']}, events {events}, "
              f"measured in {measured.seconds:.1f} s")

        # every event ran, exit status 0, with the token read from ss in the container
        assert set(events) == {"upm_announce", "upm_subflow_create"}, events
        for r in events.values():
            assert r["rc"] == "0" and r["capture_s"], r
            assert "{token}=" in r["result"] and "{token}" not in r["commands"], r
        log = (out / "commands.log").read_text()
        client = container_name(prefix, "client")
        assert f"docker exec {client} python3 -I {clab.ENGINE_DIR}/timeline/upm_tool.py subflow-create" in log

        # the created subflow, client:eth2 -> server:eth2, carried data from after the create on
        created = float(events["upm_subflow_create"]["capture_s"])
        b = [s for s in record["subflows"] if s["path"] == "B"]
        assert len(b) == 1 and b[0]["initial"] is False and b[0]["established"], record["subflows"]
        assert b[0]["src"] == str(net.address("client:eth2")) and b[0]["dst"] == str(net.address("server:eth2"))
        assert (b[0]["bytes"] or 0) > 100_000, b[0]
        assert created < b[0]["first_data_t"] < created + 1.0, (created, b[0])
        a = [s for s in record["subflows"] if s["path"] == "A" and s["initial"]]
        assert a and a[0]["first_data_t"] < created and (a[0]["bytes"] or 0) > 0, a
        assert record["mptcp"]["negotiated"] and record["mptcp"]["verified"], record["warnings"]

        # the listeners ran in both containers; the server's saw the join it accepted
        assert "SF_ESTABLISHED" in (out / "upm-listener-server.log").read_text()
        assert (out / "upm-listener-client.log").exists()
        # stopped at teardown: no listener, tool or PID file left in a container
        for node in topo["topology"]["nodes"]:
            ps = in_container(container_name(prefix, node), "ps", "-eo", "args")
            assert "mptcp monitor" not in ps and "upm_tool" not in ps and "iperf3" not in ps, (node, ps)
            assert in_container(container_name(prefix, node), "sh", "-c",
                                "ls /tmp | grep -c mptcplab- || true").strip() == "0"
        assert len(backends) in (1, 2), len(backends)


#: two hosts joined by three links: A carries the connection, B (the client's subflow
#: endpoint) loses the server's end for a second, C (another subflow endpoint) is refused
FEAT_TOPO = {"nodes": {n: {"kind": "linux", "image": IMAGES[0]} for n in ("client", "server")},
             "links": [{"endpoints": [f"client:eth{i}", f"server:eth{i}"]} for i in (1, 2, 3)]}
FEAT_ADDR = {f"{n}:eth{i}": f"10.37.{i}.{1 if n == 'server' else 2}" for n in ("client", "server") for i in (1, 2, 3)}
FEAT_PORT, FEAT_BYTES = 7100, 6_000_000
LINK_DOWN, LINK_UP = 1.0, 2.0
FEAT_EXP: dict[str, Any] = {
    "paths": {"A": "client:eth1", "B": "client:eth2", "C": "client:eth3"},
    "addressing": {"addresses": {ep: f"{ip}/24" for ep, ip in FEAT_ADDR.items()}},
    # 16 Mbit/s over A and B together: the 6 MB download lasts past the outage (about 4 s)
    "links": {"client:eth1": {"rate": "8mbit"}, "client:eth2": {"rate": "8mbit"}},
    "nodes": {
        "client": {"role": "host", "mptcp": {
            "limits": {"subflows": 2, "add_addr_accepted": 0},
            "endpoints": [{"address": "client:eth2", "flags": ["subflow"]},
                          {"address": "client:eth3", "flags": ["subflow"]}]}},
        "server": {"role": "host", "mptcp": {"limits": {"subflows": 2, "add_addr_accepted": 0}},
                   "middlebox": [{"kind": "block-tcp", "source": FEAT_ADDR["client:eth3"], "action": "reject"}]},
    },
    "traffic": {
        "flows": {"main": {"kind": "transfer", "client": "client", "server": "server",
                           "server_address": "server:eth1", "bind": "client:eth1", "mptcp": True,
                           "direction": "download", "bytes": "6MB", "seed": 37, "duration": "15s",
                           "port": FEAT_PORT}},
        "events": [{"at": LINK_DOWN, "action": "link_down", "link": "server:eth2", "ends": "one"},
                   {"at": LINK_UP, "action": "link_up", "link": "server:eth2", "ends": "one"}]},
    "probes": {"nstat": True},
    "capture": [{"point": f"client:eth{i}", "snaplen": 128} for i in (1, 2, 3)],
    "calibration": {"enabled": False},
    "quick": {"duration": "15s", "repetitions": 1},
    "scenarios": [{"name": "features", "description": "block-tcp on the server, a download, "
                                                      "server:eth2 down at 1 s and up at 2 s at that end only"}],
}


def tshark_fields(pcap: Path, *fields: str, where: str) -> list[list[str]]:
    """Each packet of ``pcap`` matching the display filter ``where``: its ``fields``."""
    argv = ["tshark", "-r", str(pcap), "-Y", where, "-T", "fields", *(a for f in fields for a in ("-e", f))]
    return [line.split("\t") for line in sh(argv, timeout=60).stdout.splitlines() if line.strip()]


def test_host_filter_download_and_one_ended_link_down_in_containers(docker_ready: None, tmp_path: Path) -> None:
    """The three newer lab features on containers, each shown where ignoring it would show:
    a block-tcp host filter on the server (nftables in its container) refuses the join from
    client:eth3; a transfer with direction download carries its bytes server -> client only;
    link_down/link_up with ends: one take the server's end of link B down for a second and
    leave the client's end alone."""
    prefix = "mplt" + secrets.token_hex(4)
    lab, sc, run_dir, out = small_lab(tmp_path, "feat", FEAT_TOPO, FEAT_EXP)
    with pre_created(lab, sc, prefix, run_dir) as (_topo, backends, make_backend):
        measured, record, events = measure_and_read(lab, sc, out, make_backend)
        nstat = record["probes"]["nstat"]
        print(f"\ncontainerlab backend, new features: subflows {record['subflows']}, middlebox "
              f"{record.get('middlebox')}, events {events}, measured in {measured.seconds:.1f} s")
        assert len(backends) in (1, 2), len(backends)

    # (1) block-tcp: the join from client:eth3 was tried, rejected by ICMP port unreachable,
    # never reached the server's TCP; the rule's counter moved
    pcap_c = out / "capture-client-eth3.pcap"
    syns = tshark_fields(pcap_c, "ip.src", where=f"!icmp && ip.src == {FEAT_ADDR['client:eth3']} && tcp.flags.syn == 1")
    assert syns, "no SYN from client:eth3: the filter proved nothing"
    assert tshark_fields(pcap_c, "ip.src", where="!icmp && tcp.flags.syn == 1 && tcp.flags.ack == 1") == []
    assert tshark_fields(pcap_c, "ip.src", where="icmp.type == 3 && icmp.code == 3"), "no ICMP port unreachable"
    assert record["middlebox"]["server"] >= 1, record.get("middlebox")
    assert nstat["client"].get("MPTcpExtMPJoinSynTx", 0) >= 2, nstat  # B's join and C's
    assert nstat["server"].get("MPTcpExtMPJoinSynRx", 0) == 1, nstat  # B's only
    assert not [s for s in record["subflows"] if s["path"] == "C" and s["established"]], record["subflows"]
    # the analysis names the refusal (and so does not call the MPTCP run verified)
    assert record["mptcp"]["negotiated"], record["warnings"]
    assert [w for w in record["warnings"] if w["code"] == "join-unreachable" and w.get("path") == "C"], \
        record["warnings"]

    # (2) download: the server sent, the client verified; the capture's payload goes server -> client
    t = record["flows"][0]["transfer"]
    assert t["verdict"] == "equal" and t["upload"] is None, t
    assert t["download"]["sent_bytes"] == t["download"]["received_bytes"] == FEAT_BYTES, t["download"]
    pay = {d: sum(int(x[0]) for i in (1, 2) for x in tshark_fields(
        out / f"capture-client-eth{i}.pcap", "tcp.len", where=f"tcp.len > 0 && tcp.{d} == {FEAT_PORT}"))
        for d in ("srcport", "dstport")}
    assert pay["srcport"] >= FEAT_BYTES and pay["dstport"] < 10_000, pay

    # (3) ends: one: one command each, in the server's container; the client's end untouched
    for action, verb in (("link_down", "down"), ("link_up", "up")):
        row = events[action]
        assert row["rc"] == "0" and row["target"] == "server:eth2 this end only", row
        cmds = row["commands"].split(" ; ")
        assert cmds == [f"docker exec {container_name(prefix, 'server')} ip link set dev eth2 {verb}"], cmds
    log = (out / "commands.log").read_text()
    assert not [ln for ln in log.splitlines() if container_name(prefix, "client") in ln and "eth2 down" in ln]
    # path B carried the download before, nothing reached the client on it while the server's
    # end was down, and it carried data again once that end alone was up
    down_done = float(events["link_down"]["epoch_s"]) + float(events["link_down"]["duration_ms"]) / 1000
    up_at = float(events["link_up"]["epoch_s"])
    to_b = f"tcp && ip.dst == {FEAT_ADDR['client:eth2']}"
    rx = [(float(ts), int(n))
          for ts, n in tshark_fields(out / "capture-client-eth2.pcap", "frame.time_epoch", "tcp.len", where=to_b)]
    assert sum(n for ts, n in rx if ts < down_done) > 100_000, "path B carried no data before the event"
    assert [ts for ts, _ in rx if down_done + 0.1 < ts < up_at] == [], "packets on path B while its far end was down"
    assert sum(n for ts, n in rx if ts > up_at) > 50_000, "path B carried nothing after the link_up"
