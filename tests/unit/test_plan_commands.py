"""The generated commands: what --dry-run prints is what runs."""

from pathlib import Path

from mptcplab.backends.netns import NetnsBackend
from mptcplab.emulation.nfqueue import NfqueueEmulator
from mptcplab.emulation.tc import NetemEmulator
from mptcplab.lab.loader import load_lab
from mptcplab.linkcheck import parse_rate_mbps, rate_check_cmds
from mptcplab.net.plan import build_plan
from mptcplab.probes.hostcpu import HostCpuProbe
from mptcplab.probes.registry import REGISTRY
from mptcplab.probes.step import StartProbes, StopProbes, probes_of
from mptcplab.probes.tcpdump import TcpdumpCapture
from mptcplab.run.sequence import Teardown, measurement_steps
from mptcplab.steps.base import Rep, RunContext, Step, render
from mptcplab.steps.counters import FirewallCounters
from mptcplab.steps.flows import StartOffsets
from mptcplab.steps.links import LinkCheck
from mptcplab.steps.sysctls import SYSCTL_READBACK, SysctlReadback
from mptcplab.steps.traffic import Traffic
from mptcplab.traffic.base import KindContext
from mptcplab.traffic.kinds import kind_of

LABS = Path(__file__).resolve().parents[2] / "labs"


def plan_for(name: str, emulator=None):
    lab = load_lab(LABS / "mtu")
    sc = {s.name: s for s in lab.scenarios}[name]
    be = NetnsBackend(prefix="mplabcdef-")
    return be, build_plan(lab.topology, sc, emulator or NfqueueEmulator(binary=Path("/bin/true")), be,
                          Path("/tmp/x")), sc


def rendered(be, cmds):
    return [be.render(c) for c in cmds]


def test_veths_are_created_inside_the_namespaces():
    be, plan, _ = plan_for("mptcp-bottleneck")
    lines = rendered(be, plan.links)
    assert "ip link add name eth1 netns mplabcdef-client type veth peer name eth1 netns mplabcdef-ra" in lines
    assert len(lines) == 5
    assert rendered(be, plan.namespaces)[0] == "ip netns add mplabcdef-client"


def test_node_configuration_commands():
    be, plan, _ = plan_for("mptcp-bottleneck")
    lines = rendered(be, plan.config)
    assert "ip -n mplabcdef-rb1 link set dev eth2 mtu 1500 up" in lines
    assert "ip -n mplabcdef-client rule add from 10.0.2.2 table 101 priority 101" in lines
    assert "ip -n mplabcdef-client route add default via 10.0.2.1 dev eth2 table 101" in lines
    assert "ip netns exec mplabcdef-client ethtool -K eth1 tso off gso off gro off" in lines
    sysctl = [line for line in rendered(be, plan.sysctls) if "mplabcdef-client " in line][0]
    assert "net.ipv4.tcp_mtu_probing=0" in sysctl and "net.mptcp.enabled=1" in sysctl


def test_mptcp_endpoint_and_limits():
    be, plan, _ = plan_for("mptcp-bottleneck")
    lines = rendered(be, plan.mptcp)
    assert "ip -n mplabcdef-client mptcp limits set subflow 2 add_addr_accepted 0" in lines
    assert "ip -n mplabcdef-client mptcp endpoint add 10.0.2.2 dev eth2 subflow" in lines
    be, plan, _ = plan_for("mptcp-reverse")
    assert "ip -n mplabcdef-client mptcp endpoint add 10.0.1.2 dev eth1 subflow" in rendered(be, plan.mptcp)


def test_black_hole_only_in_black_hole_scenarios():
    be, plan, _ = plan_for("blackhole-probing-1")
    lines = rendered(be, plan.config)
    assert any("mplabcdef-rb1 nft add rule inet mptcplab_fw output icmp type destination-unreachable icmp code "
               "frag-needed counter drop" in line for line in lines)
    be, plan, _ = plan_for("mptcp-bottleneck")
    assert not any("mptcplab_fw" in line for line in rendered(be, plan.config))


def test_rate_only_links_need_no_daemon_and_shape_both_directions():
    be, plan, _ = plan_for("mptcp-bottleneck")
    assert plan.daemons == []
    tbf = [line for line in rendered(be, plan.emulation) if " tbf " in line]
    # two shaped links, each shaped in both directions
    assert len(tbf) == 4 and all("rate 100000000bit" in line or "rate 100mbit" in line for line in tbf), tbf


def _client_argv(sc, plan) -> list[str]:
    flow = sc.body.traffic.flows["main"]
    return list(kind_of(flow).client_argv(flow, "main", KindContext(plan.net, 3.0)))


def test_iperf3_commands_follow_the_scenario():
    be, plan, sc = plan_for("tcp-b")
    argv = _client_argv(sc, plan)
    assert argv[argv.index("-B") + 1] == "10.0.2.2"  # tcp-b binds path B's client address
    assert "mptcpize" not in argv and "-m" not in argv
    be, plan, sc = plan_for("mptcp-bottleneck")
    argv = _client_argv(sc, plan)
    assert ("mptcpize" in argv) or ("-m" in argv)
    assert "10.0.5.2" in argv and "-t" in argv


def test_netem_emulator_plan_when_kernel_has_it():
    be, plan, _ = plan_for("mptcp-bottleneck", NetemEmulator())
    assert plan.daemons == [] and plan.emulation


def rep_for(name: str, lab_name: str = "mtu", calibrate: bool = True) -> Rep:
    lab = load_lab(LABS / lab_name)
    sc = {s.name: s for s in lab.scenarios}[name]
    be = NetnsBackend(prefix="mplabcdef-")
    em = NfqueueEmulator(binary=Path("/bin/true"))
    plan = build_plan(lab.topology, sc, em, be, Path("/tmp/x"))
    return Rep(RunContext(lab, em, quick=True, calibrate=calibrate), sc, Path("/tmp/x"), be, plan)


def lines(rep: Rep, step: Step) -> list[str]:
    return [rep.backend.render(p.cmd) + (" &" if p.background else "") for p in step.commands(rep)]


def test_link_check_lists_ping_and_the_rate_check():
    rep = rep_for("blackhole-probing-1")
    out = lines(rep, LinkCheck())
    assert "ip netns exec mplabcdef-client ping -U -n -q -c 10 -i 0.01 -W 3 -I 10.0.1.2 10.0.1.1" in out
    assert "ip netns exec mplabcdef-ra iperf3 -s -1 -p 5299 &" in out
    assert ("ip netns exec mplabcdef-client iperf3 -c 10.0.1.1 -B 10.0.1.2 -p 5299 -t 2 -O 1 -C cubic -J") in out
    assert lines(rep_for("blackhole-probing-1", calibrate=False), LinkCheck()) == []  # --no-calibrate


def test_long_links_ping_less_often():
    from mptcplab.emulation.linkmodel import LinkShape
    from mptcplab.linkcheck import ping_cmd

    rep = rep_for("mptcp-paper", "sndbuf")
    pings = [line for line in lines(rep, LinkCheck()) if " ping " in line]
    assert pings and all(" -i 0.01 " in line for line in pings)  # 40 ms: below the 50 ms threshold
    assert ping_cmd("a", "10.0.0.1", "10.0.0.2", LinkShape.parse(delay="60ms")).argv[7] == "0.05"


def test_rate_check_is_one_generator_and_one_parser():
    rc = rate_check_cmds("b", "a", "10.0.0.1", "10.0.0.2", 2.0)
    assert rc.server.node == "b" and rc.client.node == "a" and rc.listening.argv == ("ss", "-Hltn", "sport = :5299")
    assert parse_rate_mbps('{"end": {"sum_received": {"bits_per_second": 95500000.0}}}') == 95.5
    assert parse_rate_mbps('{"error": "unable to connect"}') is None and parse_rate_mbps("") is None


def test_sysctl_read_back_is_data_plus_the_labs_own():
    rep = rep_for("blackhole-probing-1")
    cmds = SysctlReadback()._cmds(rep)
    assert [c.node for c in cmds] == list(rep.plan.net.nodes)
    client = next(c for c in cmds if c.node == "client")
    assert client.argv[:2] == ("sysctl", "-e")
    assert set(SYSCTL_READBACK) <= set(client.argv) and "net.ipv4.tcp_mtu_probing" in client.argv
    assert len(client.argv) == len(set(client.argv))  # each key once


def test_firewall_counters_only_on_black_hole_routers():
    assert lines(rep_for("blackhole-probing-1"), FirewallCounters()) == \
        ["ip netns exec mplabcdef-rb1 nft -j list table inet mptcplab_fw"]
    assert lines(rep_for("mptcp-bottleneck"), FirewallCounters()) == []


def test_traffic_lists_servers_polls_and_clients_in_start_order():
    rep = rep_for("mptcp-bottleneck")
    out = lines(rep, Traffic())
    assert out[0].endswith("iperf3 --help")
    server = next(i for i, line in enumerate(out) if " -s -1 -p 5201 -J" in line)
    poll = out.index("ip netns exec mplabcdef-server ss -Hltn 'sport = :5201'")
    client = next(i for i, line in enumerate(out) if "iperf3 -c 10.0.5.2" in line)
    assert server < poll < client and out[client].endswith(" &")


def test_start_offsets():
    rep = rep_for("mptcp-bottleneck")
    flows = rep.body.traffic.flows
    late = flows["main"].model_copy(update={"start": "2s"})
    early = flows["main"].model_copy(update={"start": "0s"})
    s = StartOffsets({"late": late, "early": early})
    assert s.due(0.0) == ["early"] and s.due(1.9) == [] and not s.done
    assert s.due(2.0) == ["late"] and s.done


def test_dry_run_lines_cover_every_step_and_end_with_teardown():
    rep = rep_for("blackhole-probing-1")
    out = render(rep, [*measurement_steps(), Teardown()])
    titles = [line for line in out if line.startswith("# step: ")]
    assert len(titles) == len(measurement_steps()) + 1
    assert out[-1] == "ip netns del mplabcdef-rb2"
    assert "ip netns pids mplabcdef-client" in out


def test_the_capture_is_every_repetitions_first_probe_and_no_lab_key_turns_it_off() -> None:
    rep = rep_for("blackhole-probing-1")  # labs/mtu turns no probe on
    # the host's CPU accounting is mandatory too, and last: its interval is the traffic's
    assert [type(p) for p in probes_of(rep)] == [TcpdumpCapture, HostCpuProbe]
    assert TcpdumpCapture.name not in REGISTRY and HostCpuProbe.name not in REGISTRY  # no lab can name them


def test_the_dry_run_prints_one_tcpdump_per_capture_point_under_start_probes() -> None:
    rep = rep_for("blackhole-probing-1")
    out = render(rep, [StartProbes(), StopProbes()])
    assert out[0].startswith("# step: start probes")
    tcpdump = [line for line in out if " tcpdump " in line and not line.startswith("#")]
    assert [line.split(" tcpdump ")[0] for line in tcpdump] == ["ip netns exec mplabcdef-client"] * 2
    assert all(line.endswith(" tcp or icmp &") for line in tcpdump)
    assert "/tmp/x/capture-client-eth1.pcap" in tcpdump[0] and "-i eth2" in tcpdump[1]
    assert out[-1].startswith("# step: stop probes")  # a signal stops it: no command


def test_teardown_runs_the_backends_hooks_in_order_and_removes_nodes_when_collect_fails() -> None:
    """pre_stop, then collect (the nodes' files into the run directory), then destroy, then
    post_stop; a collect that raises still leaves destroy to run (nothing of the run stays)."""
    calls: list[str] = []

    class Recording(NetnsBackend):
        def pre_stop(self) -> None:
            calls.append("pre_stop")

        def collect(self, out: Path) -> None:
            calls.append(f"collect {out}")
            if fail:
                raise OSError("node gone")

        def destroy(self) -> None:
            calls.append("destroy")

        def post_stop(self) -> None:
            calls.append("post_stop")

    for fail in (False, True):
        calls.clear()
        rep = rep_for("blackhole-probing-1")
        rep.backend = Recording(prefix="mplabcdef-")
        try:
            Teardown().run(rep)
        except OSError:
            assert fail
        assert calls == (["pre_stop", "collect /tmp/x", "destroy"] if fail
                         else ["pre_stop", "collect /tmp/x", "destroy", "post_stop"])
