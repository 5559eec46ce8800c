"""IPv6 in the lab format: v6-only and dual-stack addressing, routes, sysctls, the commands
that configure them and the MPTCP endpoints, the timeline's endpoint events, the checks of
bad addressing, and the analysis' expectations of a v6 run (pure: nothing is run)."""

from __future__ import annotations

from ipaddress import IPv4Address, IPv6Address, IPv6Network, ip_address
from pathlib import Path
from typing import Any

import pytest
from labfiles import write_lab

from mptcplab.analysis.labspec import (
    expected_paths,
    path_hops,
    path_of_address,
    path_rates,
    retired_paths,
    signal_paths,
)
from mptcplab.backends.netns import NetnsBackend
from mptcplab.emulation.linkmodel import Endpoint
from mptcplab.emulation.nfqueue import NfqueueEmulator
from mptcplab.errors import LabInputError
from mptcplab.lab.events import EndpointAdd, EndpointDelete, EndpointFlags
from mptcplab.lab.joinwarnings import join_warnings
from mptcplab.lab.loader import load_lab
from mptcplab.lab.network import build_network, path_reaches
from mptcplab.net.plan import build_plan
from mptcplab.record.model import Event
from mptcplab.timeline.endpoint_actions import endpoint_cmds
from mptcplab.timeline.env import ActionEnv
from mptcplab.values.fields import address_ref, is_endpoint_ref

#: client:eth1 and client:eth2 through one router r to server:eth1 (links 0, 1, 2)
TOPOLOGY = {"name": "six", "topology": {
    "nodes": {n: {"kind": "linux", "image": "mptcplab/host:latest"} for n in ("client", "r", "server")},
    "links": [{"endpoints": ["client:eth1", "r:eth1"]}, {"endpoints": ["client:eth2", "r:eth2"]},
              {"endpoints": ["r:eth3", "server:eth1"]}]}}
V6_ONLY = {"pool": None, "pool6": "fd00:35::/48"}
DUAL = {"pool6": "fd00:35::/48"}
SERVER6 = "fd00:35:0:3::2"


def experiment(addressing: dict[str, Any], **over: Any) -> dict[str, Any]:
    exp: dict[str, Any] = {
        "paths": {"A": "client:eth1", "B": "client:eth2"},
        "addressing": addressing,
        "links": {"client:eth1": {"rate": "20mbit"}, "client:eth2": {"rate": "10mbit"}},
        "nodes": {
            "client": {"role": "host", "mptcp": {"limits": {"subflows": 2, "add_addr_accepted": 1},
                                                 "endpoints": [{"address": "client:eth2", "flags": ["subflow"],
                                                                "id": 2}]}},
            "r": {"role": "router"},
            "server": {"role": "host", "mptcp": {"limits": {"subflows": 2}}},
        },
        "traffic": {"flows": {"main": {"client": "client", "server": "server", "server_address": "server:eth1",
                                       "bind": "client:eth1", "mptcp": True, "duration": "2s"}}},
        "capture": [{"point": "client:eth1"}, {"point": "client:eth2"}],
        "scenarios": [{"name": "one"}],
    }
    exp.update(over)
    return exp


def write(tmp: Path, exp: dict[str, Any]) -> Path:
    return write_lab(tmp, "six", TOPOLOGY, exp)


def load(tmp: Path, exp: dict[str, Any]):
    lab = load_lab(write(tmp, exp))
    sc = lab.scenarios[0]
    return lab, sc, build_network(lab.topology, sc.body)


def refused(tmp: Path, exp: dict[str, Any]) -> LabInputError:
    with pytest.raises(LabInputError) as e:
        load_lab(write(tmp, exp))
    return e.value


def routes(net, node: str, table: int | None = None) -> dict[str, tuple[str | None, str]]:
    return {(str(r.dst) if r.dst else f"default{r.version}"): (str(r.via) if r.via else None, r.dev)
            for r in net.nodes[node].routes if r.table == table}


# ------------------------------------------------------------------ references


def test_address_refs_tell_interfaces_from_v6_literals() -> None:
    assert is_endpoint_ref("client:eth1") and not is_endpoint_ref("fd00::1") and not is_endpoint_ref("10.0.0.1")
    assert address_ref("fd00:35:0:3::2") == "fd00:35:0:3::2"
    assert address_ref("client:eth1") == "client:eth1"
    with pytest.raises(ValueError, match="IPv4 or IPv6"):
        address_ref("fd00::zz")
    with pytest.raises(ValueError):
        address_ref("1:2:3")  # neither a 'node:iface' (two colons) nor an address


# ------------------------------------------------------------------ addressing


def test_v6_only_routers_take_1_hosts_2_and_no_ipv4(tmp_path: Path) -> None:
    _, _, net = load(tmp_path, experiment(V6_ONLY))
    link = net.link_of("client:eth1")
    assert link.v4 is None and link.v6 is not None
    assert str(link.addr(Endpoint.parse("client:eth1"))) == "fd00:35:0:1::2/64"
    assert str(link.addr(Endpoint.parse("r:eth1"))) == "fd00:35:0:1::1/64"
    assert net.address("server:eth1") == IPv6Address(SERVER6)
    assert net.versions == {6}


def test_dual_stack_refs_name_ipv4_and_addresses_gives_both(tmp_path: Path) -> None:
    _, _, net = load(tmp_path, experiment(DUAL))
    assert net.address("server:eth1") == IPv4Address("10.0.3.2")
    assert net.addresses("server:eth1") == [IPv4Address("10.0.3.2"), IPv6Address(SERVER6)]
    assert net.address(SERVER6) == IPv6Address(SERVER6)
    assert net.versions == {4, 6}
    assert ip_address(SERVER6) in net.node_addresses("server")


def test_explicit_v6_addresses_override_the_pool(tmp_path: Path) -> None:
    exp = experiment({**V6_ONLY, "addresses6": {"r:eth3": "2001:db8:9::1/64", "server:eth1": "2001:db8:9::9/64"}})
    _, _, net = load(tmp_path, exp)
    assert net.address("server:eth1") == IPv6Address("2001:db8:9::9")
    assert net.link_of("server:eth1").subnet == IPv6Network("2001:db8:9::/64")
    assert net.link_of("client:eth2").subnet == IPv6Network("fd00:35:0:2::/64")  # the pool numbers the rest


def test_ipv4_lab_unchanged_by_the_v6_fields(tmp_path: Path) -> None:
    _, _, net = load(tmp_path, experiment({}))
    assert net.versions == {4}
    assert all(link.v6 is None for link in net.links)
    assert not [k for node in net.nodes.values() for k in node.sysctls if "ipv6" in k]
    assert all(r.version == 4 for node in net.nodes.values() for r in node.routes)


# ------------------------------------------------------------------ bad addressing


@pytest.mark.parametrize("addressing, field, words", [
    ({"pool": None}, "addressing.pool", "gets no address"),
    ({"pool6": "fd00::/64", "prefixlen6": 48}, "addressing.prefixlen6", "larger than the pool"),
    ({"pool6": "fd00::/63", "prefixlen6": 64}, "addressing.pool6", "too few /64 subnets"),
    ({**V6_ONLY, "addresses6": {"r:eth3": "2001:db8::1/64"}}, "addressing.addresses6.server:eth1", "both ends"),
    ({**V6_ONLY, "addresses6": {"r:eth3": "2001:db8::1/64", "server:eth1": "2001:db8:1::2/64"}},
     "addressing.addresses6.server:eth1", "same subnet"),
    ({**V6_ONLY, "addresses6": {"r:eth3": "2001:db8::/64", "server:eth1": "2001:db8::2/64"}},
     "addressing.addresses6.r:eth3", "subnet-router anycast"),
    ({**V6_ONLY, "addresses6": {"r:eth3": "fd00:35:0:1::7/64", "server:eth1": "fd00:35:0:1::8/64"}},
     "addressing.addresses6.r:eth3", "overlaps"),
    ({**V6_ONLY, "addresses6": {"nobody:eth9": "2001:db8::1/64"}}, "addressing.addresses6.nobody:eth9",
     "no link"),
])
def test_bad_v6_addressing_names_the_field(tmp_path: Path, addressing: dict[str, Any], field: str,
                                           words: str) -> None:
    err = refused(tmp_path, experiment(addressing))
    assert err.field == field and words in err.problem, (err.field, err.problem)


def test_v6_literals_must_belong_to_their_node(tmp_path: Path) -> None:
    exp = experiment(V6_ONLY)
    exp["traffic"]["flows"]["main"]["server_address"] = "fd00:35:0:1::2"  # the client's
    err = refused(tmp_path, exp)
    assert err.field == "traffic.flows.main.server_address" and "not an address of server" in err.problem
    exp = experiment(V6_ONLY)
    exp["nodes"]["client"]["mptcp"]["endpoints"] = [{"address": "fd00:35:0:3::2", "flags": ["subflow"]}]
    err = refused(tmp_path, exp)
    assert err.field == "nodes.client.mptcp.endpoints[0].address"
    # a v6 literal of the node passes the loader's interface check (it has two colons, not one)
    exp["nodes"]["client"]["mptcp"]["endpoints"] = [{"address": "fd00:35:0:2::2", "flags": ["subflow"]}]
    load(tmp_path, exp)


def test_v6_balance_rr_is_refused(tmp_path: Path) -> None:
    exp = experiment(V6_ONLY)
    exp["nodes"]["client"]["balance_rr"] = {"to": "server:eth1", "via": ["eth1", "eth2"]}
    err = refused(tmp_path, exp)
    assert err.field == "nodes.client.balance_rr.to" and "IPv4 only" in err.problem


# ------------------------------------------------------------------ routes and sysctls


def test_v6_routes_per_source_tables_and_rules(tmp_path: Path) -> None:
    _, _, net = load(tmp_path, experiment(V6_ONLY))
    assert routes(net, "server") == {"fd00:35:0:1::/64": ("fd00:35:0:3::1", "eth1"),
                                     "fd00:35:0:2::/64": ("fd00:35:0:3::1", "eth1")}
    assert routes(net, "client")["fd00:35:0:3::/64"] == ("fd00:35:0:1::1", "eth1")
    rules = {str(r.src): r.table for r in net.nodes["client"].rules}
    assert rules == {"fd00:35:0:1::2": 100, "fd00:35:0:2::2": 101}
    assert routes(net, "client", 101) == {"fd00:35:0:2::/64": (None, "eth2"), "default6": ("fd00:35:0:2::1", "eth2")}
    assert routes(net, "r") == {}  # every subnet is connected
    assert path_reaches(net, Endpoint.parse("client:eth2"), IPv6Address(SERVER6))
    assert not path_reaches(net, Endpoint.parse("client:eth2"), IPv4Address("10.0.3.2"))


def test_dual_stack_routes_both_families_and_ipv4_as_before(tmp_path: Path) -> None:
    _, _, v4 = load(tmp_path, experiment({}))
    _, _, dual = load(tmp_path, experiment(DUAL))
    for name in v4.nodes:
        assert [r for r in dual.nodes[name].routes if r.version == 4] == v4.nodes[name].routes
        assert [r for r in dual.nodes[name].rules if r.version == 4] == v4.nodes[name].rules
    assert {r.version for r in dual.nodes["client"].rules} == {4, 6}
    assert {str(r.src): r.table for r in dual.nodes["client"].rules if r.version == 6} == {
        "fd00:35:0:1::2": 100, "fd00:35:0:2::2": 101}


def test_v6_sysctls_forward_on_routers_and_skip_dad(tmp_path: Path) -> None:
    _, _, net = load(tmp_path, experiment(V6_ONLY))
    assert net.nodes["r"].sysctls["net.ipv6.conf.all.forwarding"] == "1"
    assert "net.ipv6.conf.all.forwarding" not in net.nodes["client"].sysctls
    for node in net.nodes.values():
        assert node.sysctls["net.ipv6.conf.default.accept_dad"] == "0"
        assert node.sysctls["net.ipv6.conf.all.keep_addr_on_down"] == "1"


# ------------------------------------------------------------------ commands


def plan(tmp_path: Path, exp: dict[str, Any]) -> tuple[NetnsBackend, Any]:
    lab, sc, _ = load(tmp_path, exp)
    be = NetnsBackend(prefix="mpl6test-")
    return be, build_plan(lab.topology, sc, NfqueueEmulator(binary=Path("/bin/true")), be, Path("/tmp/x"))


def argvs(cmds) -> list[tuple[str | None, tuple[str, ...]]]:
    return [(c.node, tuple(c.argv)) for c in cmds]


def test_v6_config_commands(tmp_path: Path) -> None:
    _, p = plan(tmp_path, experiment(V6_ONLY))
    config = argvs(p.config)
    assert ("client", ("ip", "addr", "add", "fd00:35:0:1::2/64", "dev", "eth1", "nodad")) in config
    assert ("server", ("ip", "route", "add", "fd00:35:0:1::/64", "via", "fd00:35:0:3::1", "dev", "eth1")) in config
    # `ip route` takes the family from its addresses (a default route is ::/0); `ip rule`
    # reads an address as IPv4 unless told -6, so its lines run alone, outside the ip batch
    assert ("client", ("ip", "route", "add", "::/0", "via", "fd00:35:0:2::1", "dev", "eth2", "table", "101")) \
        in config
    rule = ("ip", "-6", "rule", "add", "from", "fd00:35:0:2::2", "table", "101", "priority", "101")
    assert ("client", rule) in config
    assert not [a for _, a in config if ("-6" in a and a[1] != "-6") or "10.0.1.2/24" in a]
    rule_cmd = next(c for c in p.config if tuple(c.argv) == rule)
    from mptcplab.backends.netns import NetnsBackend
    assert not NetnsBackend().batchable(rule_cmd)


def test_dual_stack_interface_gets_both_addresses(tmp_path: Path) -> None:
    _, p = plan(tmp_path, experiment(DUAL))
    config = argvs(p.config)
    assert ("client", ("ip", "addr", "add", "10.0.1.2/24", "dev", "eth1")) in config
    assert ("client", ("ip", "addr", "add", "fd00:35:0:1::2/64", "dev", "eth1", "nodad")) in config


def test_v6_mptcp_endpoints(tmp_path: Path) -> None:
    exp = experiment(V6_ONLY)
    exp["nodes"]["server"]["mptcp"]["endpoints"] = [{"address": SERVER6, "flags": ["signal"], "port": 7001}]
    _, p = plan(tmp_path, exp)
    mptcp = argvs(p.mptcp)
    assert ("client", ("ip", "mptcp", "endpoint", "add", "fd00:35:0:2::2", "dev", "eth2", "id", "2", "subflow")) \
        in mptcp
    # a v6 literal of a node without a per-source table (one interface): no `dev`
    # (net/mptcp.endpoint_dev: IPv6 would find no route through a bound interface)
    assert ("server", ("ip", "mptcp", "endpoint", "add", SERVER6, "port", "7001", "signal")) in mptcp


def test_timeline_endpoint_events_with_v6(tmp_path: Path) -> None:
    _, _, net = load(tmp_path, experiment(V6_ONLY))
    env = ActionEnv(net, NfqueueEmulator(binary=Path("/bin/true")))
    add = EndpointAdd(at=1.0, action="endpoint_add", node="client", address="client:eth2", flags=["subflow"], id=3)
    assert [c.argv for c in endpoint_cmds(env, add)] == [
        ("ip", "mptcp", "endpoint", "add", "fd00:35:0:2::2", "dev", "eth2", "id", "3", "subflow")]
    lit = EndpointAdd(at=1.0, action="endpoint_add", node="client", address="fd00:35:0:2::2", flags=["subflow"])
    # a literal of a per-source table's address: its interface (mptcp_join.sh's `dev ns2eth3`)
    assert [c.argv for c in endpoint_cmds(env, lit)] == [
        ("ip", "mptcp", "endpoint", "add", "fd00:35:0:2::2", "dev", "eth2", "subflow")]
    flags = EndpointFlags(at=1.0, action="endpoint_flags", node="client", address="client:eth2", flags="backup")
    assert [c.argv for c in endpoint_cmds(env, flags)] == [
        ("ip", "mptcp", "endpoint", "change", "fd00:35:0:2::2", "backup")]
    delete = EndpointDelete(at=1.0, action="endpoint_delete", node="client", id=0, address="client:eth1")
    assert [c.argv for c in endpoint_cmds(env, delete)] == [
        ("ip", "mptcp", "endpoint", "delete", "id", "0", "fd00:35:0:1::2")]


# ------------------------------------------------------------------ the analysis' expectations


def test_v6_paths_rates_and_expected_paths(tmp_path: Path) -> None:
    _, sc, net = load(tmp_path, experiment(V6_ONLY))
    body, flow = sc.body, sc.body.traffic.flows["main"]
    assert path_of_address(body, net) == {"fd00:35:0:1::2": "A", "fd00:35:0:2::2": "B"}
    hops = path_hops(net, Endpoint.parse("client:eth2"), IPv6Address(SERVER6))
    assert hops is not None and [lk.name for lk, _ in hops] == ["client:eth2--r:eth2", "r:eth3--server:eth1"]
    assert path_rates(body, net, "server") == {"A": 20e6, "B": 10e6}
    assert expected_paths(body, net, flow) == ("A", "B")


def test_dual_stack_paths_know_both_families(tmp_path: Path) -> None:
    exp = experiment(DUAL)
    exp["nodes"]["client"]["mptcp"]["endpoints"] = [{"address": "fd00:35:0:2::2", "flags": ["subflow"], "id": 2}]
    exp["nodes"]["server"]["mptcp"]["endpoints"] = [{"address": SERVER6, "flags": ["signal"]}]
    exp["traffic"]["flows"]["main"]["server_address"] = SERVER6
    _, sc, net = load(tmp_path, exp)
    body, flow = sc.body, sc.body.traffic.flows["main"]
    assert path_of_address(body, net) == {"10.0.1.2": "A", "::ffff:10.0.1.2": "A", "fd00:35:0:1::2": "A",
                                          "10.0.2.2": "B", "::ffff:10.0.2.2": "B", "fd00:35:0:2::2": "B"}
    # the v6 literal endpoint is path B's; the announced v6 address is reached first by A
    assert expected_paths(body, net, flow) == ("A", "B")
    assert signal_paths(body, net, flow) == ("A",)
    events = [Event(planned_s=1.0, actual_s=1.0, action="endpoint_delete", rc=0, epoch_s=100.0, node="client",
                    endpoint_id=2)]
    retired, why = retired_paths(body, net, flow, events)
    assert retired == {"B": 100.0} and "deleted" in why["B"]


def test_validate_warns_of_an_endpoint_of_the_other_family(tmp_path: Path) -> None:
    exp = experiment(DUAL)
    exp["traffic"]["flows"]["main"].update(server_address=SERVER6, bind=None)
    warnings = join_warnings(load_lab(write(tmp_path, exp)))
    assert len(warnings) == 1 and "nodes.client.mptcp.endpoints[0].address" in warnings[0]
    assert "client:eth2 is IPv4 (10.0.2.2)" in warnings[0] and "no subflow joins" in warnings[0]
    # an announced IPv4 server address gives it a join of its own family: no warning
    exp["nodes"]["server"]["mptcp"]["endpoints"] = [{"address": "server:eth1", "flags": ["signal"]}]
    assert join_warnings(load_lab(write(tmp_path, exp))) == []
    # the same lab over IPv4: nothing to say
    assert join_warnings(load_lab(write(tmp_path, experiment(DUAL)))) == []
