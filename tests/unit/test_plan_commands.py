"""The generated commands: what --dry-run prints is what runs."""

from pathlib import Path

from mptcplab.backends.netns import NetnsBackend
from mptcplab.emulation.nfqueue import NfqueueEmulator
from mptcplab.emulation.tc import NetemEmulator
from mptcplab.lab.loader import load_lab
from mptcplab.plan import build_plan
from mptcplab.traffic import flow_commands

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
    sysctl = [l for l in rendered(be, plan.sysctls) if "mplabcdef-client " in l][0]
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
               "frag-needed counter drop" in l for l in lines)
    be, plan, _ = plan_for("mptcp-bottleneck")
    assert not any("mptcplab_fw" in l for l in rendered(be, plan.config))


def test_rate_only_links_need_no_daemon_and_shape_both_directions():
    be, plan, _ = plan_for("mptcp-bottleneck")
    assert plan.daemons == []
    tbf = [l for l in rendered(be, plan.emulation) if " tbf " in l]
    # two shaped links, each shaped in both directions
    assert len(tbf) == 4 and all("rate 100000000bit" in l or "rate 100mbit" in l for l in tbf), tbf


def test_iperf3_commands_follow_the_scenario():
    be, plan, sc = plan_for("tcp-b")
    fc = flow_commands(sc.body.traffic.flows["main"], plan.net, 3.0)
    assert fc.client_argv[-2:] == ("-B", "10.0.2.2") or "-B" in fc.client_argv
    assert "mptcpize" not in fc.client_argv and "-m" not in fc.client_argv
    be, plan, sc = plan_for("mptcp-bottleneck")
    fc = flow_commands(sc.body.traffic.flows["main"], plan.net, 3.0)
    assert ("mptcpize" in fc.client_argv) or ("-m" in fc.client_argv)
    assert "10.0.5.2" in fc.client_argv and "-t" in fc.client_argv


def test_netem_emulator_plan_when_kernel_has_it():
    be, plan, _ = plan_for("mptcp-bottleneck", NetemEmulator())
    assert plan.daemons == [] and plan.emulation
