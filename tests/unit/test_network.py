"""Addressing and routing derived from the topology (pure computation)."""

from ipaddress import IPv4Address, IPv4Network
from pathlib import Path

from mptcplab.lab.loader import load_lab
from mptcplab.lab.network import build_network

LABS = Path(__file__).resolve().parents[2] / "labs"


def mtu_net(scenario: str = "mptcp-bottleneck"):
    lab = load_lab(LABS / "mtu")
    sc = {s.name: s for s in lab.scenarios}[scenario]
    return build_network(lab.topology, sc.body)


def routes(net, node, table=None):
    return {(str(r.dst) if r.dst else "default"): (str(r.via) if r.via else None, r.dev)
            for r in net.nodes[node].routes if r.table == table}


def test_routers_take_dot_one_and_hosts_dot_two():
    net = mtu_net()
    link = net.link_of("client:eth1")
    assert str(link.addr(link.a)) == "10.0.1.2/24" and str(link.addr(link.b)) == "10.0.1.1/24"
    assert net.address("server:eth1") == IPv4Address("10.0.5.2")


def test_mtus_and_scenario_override():
    assert mtu_net().link_of("rb1:eth2").mtu == 1500
    assert mtu_net("mptcp-uniform").link_of("rb1:eth2").mtu == 9000


def test_routes_go_through_routers_only_and_are_shortest():
    net = mtu_net()
    # server reaches path B's client subnet back through B's routers, not through the client
    assert routes(net, "server")["10.0.2.0/24"] == ("10.0.5.1", "eth1")
    assert routes(net, "ra")["10.0.2.0/24"] == ("10.0.4.1", "eth3")
    assert routes(net, "rb2")["10.0.2.0/24"] == ("10.0.3.1", "eth1")
    # main table of the client: the server is closer through A
    assert routes(net, "client")["10.0.5.0/24"] == ("10.0.1.1", "eth1")
    # hosts never forward: no route of a router points at a host as next hop
    host_addrs = {str(link.addr(ep).ip) for link in net.links for ep in (link.a, link.b)
                  if net.nodes[ep.node].role == "host"}
    for node in net.nodes.values():
        if node.role == "router":
            assert not {str(r.via) for r in node.routes} & host_addrs


def test_multihomed_host_has_per_source_tables():
    net = mtu_net()
    rules = {str(r.src): r.table for r in net.nodes["client"].rules}
    assert set(rules) == {"10.0.1.2", "10.0.2.2"}
    tb = routes(net, "client", rules["10.0.2.2"])
    assert tb["default"] == ("10.0.2.1", "eth2") and tb["10.0.2.0/24"] == (None, "eth2")
    ta = routes(net, "client", rules["10.0.1.2"])
    assert ta["default"] == ("10.0.1.1", "eth1")
    # single-homed hosts get no policy rules
    assert net.nodes["server"].rules == []


def test_every_subnet_reachable_from_every_node():
    net = mtu_net()
    subnets = {link.subnet for link in net.links}
    for name in net.nodes:
        local = {link.subnet for _, link in net.interfaces(name)}
        assert subnets - local == {r.dst for r in net.nodes[name].routes if r.table is None}, name


def test_router_sysctls_forward_and_hosts_do_not():
    net = mtu_net()
    assert net.nodes["ra"].sysctls["net.ipv4.ip_forward"] == "1"
    assert "net.ipv4.ip_forward" not in net.nodes["client"].sysctls
    assert net.nodes["client"].sysctls["net.ipv4.conf.default.rp_filter"] == "0"
    assert IPv4Network("10.0.3.0/24") == net.link_of("rb2:eth1").subnet
