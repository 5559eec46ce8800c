"""The containerlab backend's commands, exactly: docker exec, ip batches, the PID
wrapper, signals, deploy/destroy and clean. No Docker: subprocess is replaced by a
recorder, so these run anywhere."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from mptcplab import runstate
from mptcplab.backends import containerlab as clab
from mptcplab.backends.base import CommandFailed
from mptcplab.backends.containerlab import PID_WRAPPER, ContainerlabBackend
from mptcplab.commands import cmd
from mptcplab.emulation.tc import NetemEmulator
from mptcplab.lab.loader import load_lab
from mptcplab.net.plan import Plan, build_plan

LABS = Path(__file__).resolve().parents[2] / "labs"
TOPO = LABS / "mtu" / "topology.clab.yml"
LAB = "mpl0a1b2c-mtu"


class Recorder:
    """Stands in for subprocess.run: records argv and stdin, answers from a table."""

    def __init__(self, answers: dict[tuple[str, ...], tuple[int, str, str]] | None = None) -> None:
        self.calls: list[tuple[list[str], str | None]] = []
        self.answers = answers or {}

    def __call__(self, argv: list[str], input: str | None = None, **_: Any) -> subprocess.CompletedProcess[str]:
        self.calls.append((list(argv), input))
        for prefix, (rc, out, err) in self.answers.items():
            if tuple(argv[:len(prefix)]) == prefix:
                return subprocess.CompletedProcess(argv, rc, out, err)
        return subprocess.CompletedProcess(argv, 0, "", "")

    @property
    def argvs(self) -> list[list[str]]:
        return [a for a, _ in self.calls]


@pytest.fixture
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "state"
    monkeypatch.setattr(runstate, "STATE_DIR", d)  # what the backends write and clean() reads
    return d


def backend(tmp_path: Path, **kw: Any) -> ContainerlabBackend:
    return ContainerlabBackend(TOPO, lab_name=LAB, workdir=tmp_path / "clab", binds=[tmp_path / "run"], **kw)


def plan_for(be: ContainerlabBackend, scenario: str = "mptcp-bottleneck") -> Plan:
    lab = load_lab(LABS / "mtu")
    sc = {s.name: s for s in lab.scenarios}[scenario]
    return build_plan(lab.topology, sc, NetemEmulator(), be, Path("/tmp/x"))


def test_node_commands_are_docker_exec_argument_lists(tmp_path: Path) -> None:
    be = backend(tmp_path)
    assert be.container("rb1") == "clab-mpl0a1b2c-mtu-rb1"
    assert be.node_argv("client", ["sysctl", "-q", "-w", "a.b=1"]) == \
        ["docker", "exec", "clab-mpl0a1b2c-mtu-client", "sysctl", "-q", "-w", "a.b=1"]
    # a lab string with shell metacharacters stays one argument
    assert be.render_argv("client", ["echo", "a b; rm -rf /"]) == \
        "docker exec clab-mpl0a1b2c-mtu-client echo 'a b; rm -rf /'"
    assert be.render(cmd("containerlab", "version")) == "containerlab version"


def test_lab_names_are_unique_per_backend() -> None:
    a, b = ContainerlabBackend(TOPO, deploy=False), ContainerlabBackend(TOPO, deploy=False)
    assert a.lab != b.lab and clab.RUN_LAB_RE.match(a.lab) and a.lab.endswith("-mtu")


def test_deploy_is_the_node_creation_stage_and_teardown_destroys(tmp_path: Path) -> None:
    be = backend(tmp_path)
    plan = plan_for(be)
    copy = str(tmp_path / "clab" / f"{LAB}.clab.yml")
    assert [c.argv for c in plan.namespaces] == [("containerlab", "deploy", "-t", copy)]
    assert plan.links == []  # containerlab wires the links with the nodes
    assert [c.argv for c in be.teardown_cmds(plan.net)] == [("containerlab", "destroy", "-t", copy, "--cleanup")]
    pre = ContainerlabBackend(TOPO, lab_name=LAB, deploy=False)
    assert plan_for(pre).namespaces == [] and pre.teardown_cmds(plan.net) == []


def test_topology_copy(tmp_path: Path, state_dir: Path) -> None:
    be = backend(tmp_path)
    plan = plan_for(be)
    original = TOPO.read_text()
    be.begin(plan.net)
    be.pre_start(plan.net)
    topo = yaml.safe_load(be.topology_file.read_text())
    assert TOPO.read_text() == original  # the lab's own file (and its hash) is untouched
    assert topo["name"] == LAB
    assert topo["topology"]["links"] == yaml.safe_load(original)["topology"]["links"]
    run = str((tmp_path / "run").absolute())
    for node in topo["topology"]["nodes"].values():
        assert node["network-mode"] == "none"
        # the run directory, and the engine's package read-only (its programs run by path)
        assert node["binds"] == [f"{run}:{run}", f"{clab.ENGINE_DIR}:{clab.ENGINE_DIR}:ro"]
        # what a new interface copies is set when Docker creates the namespace
        assert node["sysctls"] == {"net.ipv4.conf.all.rp_filter": "0", "net.ipv4.conf.default.rp_filter": "0"}
    st = json.loads((state_dir / f"clab-{LAB}.json").read_text())
    assert st["lab"] == LAB and st["pid"] == os.getpid() and st["owned"] is True
    assert st["topology"] == str(be.topology_file) and "clab-mpl0a1b2c-mtu-ra" in st["containers"]


def test_relative_binds_of_the_lab_point_into_the_lab_directory(tmp_path: Path) -> None:
    raw = yaml.safe_load(TOPO.read_text())
    raw["topology"]["nodes"]["client"]["binds"] = ["data:/data:ro", "/abs:/abs"]
    (tmp_path / "lab").mkdir()
    topo_file = tmp_path / "lab" / "topology.clab.yml"
    topo_file.write_text(yaml.safe_dump(raw))
    be = ContainerlabBackend(topo_file, lab_name=LAB, workdir=tmp_path / "w")
    net = plan_for(be).net
    binds = be.clab_topology(net)["topology"]["nodes"]["client"]["binds"]
    assert binds[:2] == [f"{tmp_path / 'lab' / 'data'}:/data:ro", "/abs:/abs"]


def test_the_engines_programs_run_with_the_nodes_python_from_the_bound_package(tmp_path: Path) -> None:
    from mptcplab.timeline import upm

    be = backend(tmp_path)
    tool = [sys.executable, "-I", str(upm.TOOL), "remove", "--token", "7", "--id", "5"]
    argv = be.node_argv("server", tool)
    assert argv == ["docker", "exec", "clab-mpl0a1b2c-mtu-server", "python3", "-I", str(upm.TOOL),
                    "remove", "--token", "7", "--id", "5"]
    # the tool's path is inside the directory every node gets bound in
    assert upm.TOOL.is_relative_to(clab.ENGINE_DIR) and (clab.ENGINE_DIR / "__init__.py").is_file()
    net = plan_for(be).net
    assert all(f"{clab.ENGINE_DIR}:{clab.ENGINE_DIR}:ro" in n["binds"]
               for n in be.clab_topology(net)["topology"]["nodes"].values())
    # spawned ones too (the wrapper execs the rest of its arguments)
    assert be.spawn_argv("server", "/tmp/p.pid", tool)[-8:-6] == ["python3", "-I"]
    # any other command is left alone
    assert be.node_argv("server", ["python3", "x"])[3:] == ["python3", "x"]


def test_consecutive_ip_commands_of_a_node_are_one_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rec = Recorder()
    monkeypatch.setattr(clab.subprocess, "run", rec)
    be = backend(tmp_path)
    be.run([cmd("ip", "link", "set", "dev", "eth1", "mtu", 9000, "up", node="client"),
            cmd("ip", "addr", "add", "10.0.1.2/24", "dev", "eth1", node="client"),
            cmd("ethtool", "-K", "eth1", "tso", "off", node="client"),
            cmd("ip", "mptcp", "endpoint", "flush", node="server")])
    assert rec.calls == [
        (["docker", "exec", "-i", "clab-mpl0a1b2c-mtu-client", "ip", "-batch", "-"],
         "link set dev eth1 mtu 9000 up\naddr add 10.0.1.2/24 dev eth1\n"),
        (["docker", "exec", "clab-mpl0a1b2c-mtu-client", "ethtool", "-K", "eth1", "tso", "off"], None),
        (["docker", "exec", "clab-mpl0a1b2c-mtu-server", "ip", "mptcp", "endpoint", "flush"], None),
    ]


def test_a_failed_batch_names_the_failing_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rec = Recorder({("docker", "exec", "-i"): (1, "", 'Cannot find device "eth9"\nCommand failed -:2\n')})
    monkeypatch.setattr(clab.subprocess, "run", rec)
    with pytest.raises(CommandFailed) as e:
        backend(tmp_path).run([cmd("ip", "link", "set", "lo", "up", node="ra"),
                               cmd("ip", "link", "set", "eth9", "up", node="ra")])
    assert "docker exec clab-mpl0a1b2c-mtu-ra ip link set eth9 up" in str(e.value)


def test_unchecked_commands_are_not_batched_and_do_not_raise(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rec = Recorder({("docker",): (1, "", "no")})
    monkeypatch.setattr(clab.subprocess, "run", rec)
    out = backend(tmp_path).run([cmd("ip", "route", "del", "x", node="ra", check=False),
                                 cmd("ip", "route", "del", "y", node="ra", check=False)])
    assert [p.returncode for p in out] == [1, 1] and len(rec.calls) == 2


def test_routers_get_frr_static_routes_hosts_keep_ip_route(tmp_path: Path) -> None:
    plan = plan_for(backend(tmp_path))
    rb1 = [c.argv for c in plan.config if c.node == "rb1"]
    assert ("timeout", "30", "sh", "-c", 'until vtysh -c "show daemons" 2>/dev/null | grep -qw staticd; '
            "do sleep 0.1; done") in rb1
    assert ("vtysh", "-c", "configure terminal", "-c", "ip route 10.0.1.0/24 10.0.3.2 eth2",
            "-c", "ip route 10.0.4.0/24 10.0.3.2 eth2", "-c", "ip route 10.0.5.0/24 10.0.3.2 eth2") in rb1
    wait = next(a for a in rb1 if a[:2] == ("timeout", "10"))
    assert wait[-7:] == ("sh", "10.0.1.0/24", "main", "10.0.4.0/24", "main", "10.0.5.0/24", "main")
    assert not any(a[:2] == ("ip", "route") for a in rb1)
    client = [c.argv for c in plan.config if c.node == "client"]
    assert ("ip", "route", "add", "default", "via", "10.0.2.1", "dev", "eth2", "table", "101") in client
    assert ("ip", "rule", "add", "from", "10.0.2.2", "table", "101", "priority", "101") in client
    assert not any(a[0] == "vtysh" for a in client)


def test_frr_route_forms() -> None:
    from ipaddress import IPv4Address, IPv4Network

    from mptcplab.lab.network import Node, Route
    from mptcplab.net.config import frr_route_cmds

    n = Node("r", "router", routes=[Route(None, IPv4Address("10.0.0.1"), "eth1"),
                                    Route(IPv4Network("10.0.9.0/24"), None, "eth2", table=7)])
    vt = frr_route_cmds(n)[1].argv
    assert vt == ("vtysh", "-c", "configure terminal", "-c", "ip route 0.0.0.0/0 10.0.0.1 eth1",
                  "-c", "ip route 10.0.9.0/24 eth2 table 7")
    assert frr_route_cmds(n)[2].argv[-4:] == ("default", "main", "10.0.9.0/24", "7")
    assert frr_route_cmds(Node("r", "router")) == []


def test_netns_plans_are_unchanged_ip_routes_everywhere() -> None:
    from mptcplab.backends.netns import NetnsBackend

    be = NetnsBackend(prefix="mplabcdef-")
    lab = load_lab(LABS / "mtu")
    sc = {s.name: s for s in lab.scenarios}["mptcp-bottleneck"]
    plan = build_plan(lab.topology, sc, NetemEmulator(), be, Path("/tmp/x"))
    assert ("ip", "route", "add", "10.0.1.0/24", "via", "10.0.3.2", "dev", "eth2") in \
        [c.argv for c in plan.config if c.node == "rb1"]
    assert not any(c.argv[0] in ("vtysh", "timeout") for c in plan.config)
    # the backend declares how routers get routes
    be.router_routes = "frr"  # type: ignore[misc]
    frr = build_plan(lab.topology, sc, NetemEmulator(), be, Path("/tmp/x"))
    assert any(c.argv[0] == "vtysh" for c in frr.config)


def test_spawn_goes_through_the_pid_wrapper(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[tuple[list[str], dict[str, Any]]] = []

    class FakePopen:
        pid = 4242

        def __init__(self, argv: list[str], **kw: Any) -> None:
            started.append((argv, kw))

        def poll(self) -> int | None:
            return None

    monkeypatch.setattr(clab.subprocess, "Popen", FakePopen)
    be = backend(tmp_path)
    be.spawn("client", ["tcpdump", "-i", "eth1", "-w", "/r/x.pcap", "tcp", "or", "icmp"])
    argv, kw = started[0]
    pidfile = argv[7]
    assert argv == ["docker", "exec", "clab-mpl0a1b2c-mtu-client", "sh", "-c", 'echo $$ > "$1"; shift; exec "$@"',
                    "sh", pidfile, "tcpdump", "-i", "eth1", "-w", "/r/x.pcap", "tcp", "or", "icmp"]
    assert PID_WRAPPER == argv[5] and pidfile.startswith("/tmp/mptcplab-") and pidfile.endswith("-1.pid")
    assert kw["stdin"] == subprocess.DEVNULL and kw["start_new_session"] is True
    be.spawn("client", ["iperf3", "-s"])
    assert started[1][0][7].endswith("-2.pid")  # one PID file per process


def test_signal_reaches_the_process_in_the_container(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class FakePopen:
        pid = 4242

        def __init__(self, argv: list[str], **kw: Any) -> None:
            pass

        def poll(self) -> int | None:
            return None

    monkeypatch.setattr(clab.subprocess, "Popen", FakePopen)
    rec = Recorder({("docker", "exec", "clab-mpl0a1b2c-mtu-client", "cat"): (0, "37\n", "")})
    monkeypatch.setattr(clab.subprocess, "run", rec)
    be = backend(tmp_path)
    p = be.spawn("client", ["tcpdump", "-i", "eth1"])
    be.signal(p, signal.SIGINT)
    be.signal(p, signal.SIGKILL)
    cat, kill_int, kill_kill = rec.argvs
    assert cat[:4] == ["docker", "exec", "clab-mpl0a1b2c-mtu-client", "cat"] and cat[4].endswith("-1.pid")
    assert kill_int == ["docker", "exec", "clab-mpl0a1b2c-mtu-client", "kill", "-INT", "37"]
    assert kill_kill == ["docker", "exec", "clab-mpl0a1b2c-mtu-client", "kill", "-KILL", "37"]  # PID read once


def test_destroy_stops_processes_then_destroys_the_lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        state_dir: Path) -> None:
    class FakePopen:
        pid = 4242

        def __init__(self, argv: list[str], **kw: Any) -> None:
            self.rc: int | None = None

        def poll(self) -> int | None:
            return self.rc

        def wait(self, timeout: float | None = None) -> int:
            self.rc = -15
            return self.rc

    monkeypatch.setattr(clab.subprocess, "Popen", FakePopen)
    monkeypatch.setattr(clab.shutil, "which", lambda name: f"/usr/bin/{name}")
    lab_ps = ("docker", "ps", "-a", "--filter", f"label=containerlab={LAB}")
    rec = Recorder({("docker", "exec", "clab-mpl0a1b2c-mtu-server", "cat"): (0, "9\n", ""),
                    lab_ps: (0, f"clab-{LAB}-ra\t{LAB}\n", "")})
    monkeypatch.setattr(clab.subprocess, "run", rec)
    lines: list[str] = []
    be = backend(tmp_path, log=lines.append)
    plan = plan_for(be)
    be.begin(plan.net)
    be.pre_start(plan.net)
    be.spawn("server", ["iperf3", "-s"])
    be.destroy()
    argvs = rec.argvs
    assert ["docker", "exec", "clab-mpl0a1b2c-mtu-server", "kill", "-TERM", "9"] in argvs
    destroy = ["containerlab", "destroy", "-t", str(be.topology_file), "--cleanup"]
    assert destroy in argvs
    assert argvs.index(["docker", "exec", "clab-mpl0a1b2c-mtu-server", "kill", "-TERM", "9"]) < argvs.index(destroy)
    # still labelled after destroy (here: the recorder says so): removed by name
    assert ["docker", "rm", "-f", "-v", f"clab-{LAB}-ra"] in argvs
    assert not (state_dir / f"clab-{LAB}.json").exists()
    assert f"containerlab destroy -t {be.topology_file} --cleanup" in lines


def test_pre_created_lab_is_checked_and_left_in_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      state_dir: Path) -> None:
    names = [f"clab-{LAB}-{n}" for n in ("client", "server", "ra", "rb1", "rb2")]
    rec = Recorder({("docker", "inspect"): (0, "".join(f"/{n} true\n" for n in names), "")})
    monkeypatch.setattr(clab.subprocess, "run", rec)
    be = ContainerlabBackend(TOPO, lab_name=LAB, binds=[tmp_path], deploy=False)
    plan = plan_for(be)
    be.begin(plan.net)
    be.pre_start(plan.net)
    assert json.loads((state_dir / f"clab-{LAB}.json").read_text())["owned"] is False
    be.destroy()
    assert not any(a[0] == "containerlab" or a[:2] == ["docker", "rm"] for a in rec.argvs)
    rec.answers = {("docker", "inspect"): (1, "/" + names[0] + " true\n", "No such object")}
    be.begin(plan.net)
    with pytest.raises(RuntimeError, match="not running: clab-mpl0a1b2c-mtu-server"):
        be.pre_start(plan.net)
    be.destroy()


def test_clean_removes_dead_runs_labs_and_orphans_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        state_dir: Path) -> None:
    state_dir.mkdir()
    dead = subprocess.Popen(["true"])
    dead.wait()
    (state_dir / "clab-mpl111111-mtu.json").write_text(json.dumps(
        {"lab": "mpl111111-mtu", "pid": dead.pid, "owned": True, "topology": None}))
    (state_dir / "clab-mpl222222-mtu.json").write_text(json.dumps(
        {"lab": "mpl222222-mtu", "pid": os.getppid(), "owned": True, "topology": None}))  # alive
    (state_dir / "clab-mplt0000-x.json").write_text(json.dumps(
        {"lab": "mplt0000-x", "pid": dead.pid, "owned": False, "topology": None}))  # pre-created: not ours
    listing = ("clab-mpl111111-mtu-a\tmpl111111-mtu\nclab-mpl222222-mtu-a\tmpl222222-mtu\n"
               "clab-mpl333333-mtu-a\tmpl333333-mtu\nclab-mplt0000-x-a\tmplt0000-x\nclab-other-a\tother\n")

    def ps(lab: str | None) -> tuple[int, str, str]:
        rows = [r for r in listing.splitlines() if lab is None or r.endswith("\t" + lab)]
        return 0, "".join(r + "\n" for r in rows), ""

    answers: dict[tuple[str, ...], tuple[int, str, str]] = {
        ("docker", "ps", "-a", "--filter", "label=containerlab"): ps(None)}
    for lab in ("mpl111111-mtu", "mpl333333-mtu"):
        answers[("docker", "ps", "-a", "--filter", f"label=containerlab={lab}")] = ps(lab)
    rec = Recorder(answers)
    monkeypatch.setattr(clab.subprocess, "run", rec)
    monkeypatch.setattr(clab.shutil, "which", lambda name: f"/usr/bin/{name}")
    removed = clab.clean()
    assert sorted(removed) == ["clab-mpl111111-mtu-a", "clab-mpl333333-mtu-a"]
    rms = [a for a in rec.argvs if a[:2] == ["docker", "rm"]]
    assert rms == [["docker", "rm", "-f", "-v", "clab-mpl111111-mtu-a"],
                   ["docker", "rm", "-f", "-v", "clab-mpl333333-mtu-a"]]
    assert sorted(p.name for p in state_dir.iterdir()) == ["clab-mpl222222-mtu.json"]
