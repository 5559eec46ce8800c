"""IPv4-mapped IPv6 literals (``::ffff:10.0.1.1``, mptcp_join.sh's v4mapped_tests) in the lab
format: accepted where a node's address is expected when the node has the IPv4 address it
maps, refused (one line: file, field, problem) when not, kept as written in the commands, and
mapped to the path of their IPv4 address by the analysis (on the wire the packets are IPv4).
Pure: nothing is run."""

from __future__ import annotations

from ipaddress import IPv4Address, IPv6Address, ip_address
from pathlib import Path
from typing import Any

import pytest
from labfiles import write_lab

from mptcplab.analysis.labspec import expected_paths, lab_facts, path_of_address, signal_paths
from mptcplab.errors import LabInputError
from mptcplab.lab.joinwarnings import join_warnings
from mptcplab.lab.loader import load_lab
from mptcplab.lab.network import build_network, wire_address
from mptcplab.traffic.base import KindContext
from mptcplab.traffic.kinds import KINDS

REPO = Path(__file__).resolve().parents[2]

#: two hosts joined by two links, as mptcp_join.sh's ns1/ns2 (10.0.N.1 server, 10.0.N.2 client)
TOPOLOGY = {"name": "pair", "topology": {
    "nodes": {n: {"kind": "linux", "image": "mptcplab/host:latest"} for n in ("client", "server")},
    "links": [{"endpoints": ["client:eth1", "server:eth1"]}, {"endpoints": ["client:eth2", "server:eth2"]}]}}


def experiment(server_address: str = "::ffff:10.0.1.1", client_ep: str = "::ffff:10.0.2.2",
               server_ep: str = "::ffff:10.0.2.1", **over: Any) -> dict[str, Any]:
    exp: dict[str, Any] = {
        "paths": {"A": "client:eth1", "B": "client:eth2"},
        "addressing": {"addresses": {"server:eth1": "10.0.1.1/24", "client:eth1": "10.0.1.2/24",
                                     "server:eth2": "10.0.2.1/24", "client:eth2": "10.0.2.2/24"}},
        "nodes": {
            "client": {"role": "host", "mptcp": {"limits": {"subflows": 2, "add_addr_accepted": 1},
                                                 "endpoints": [{"address": client_ep, "flags": ["subflow"]}]}},
            "server": {"role": "host", "mptcp": {"limits": {"subflows": 2},
                                                 "endpoints": [{"address": server_ep, "flags": ["signal"]}]}},
        },
        "traffic": {"flows": {"main": {"kind": "transfer", "client": "client", "server": "server",
                                       "server_address": server_address, "bind": "client:eth1",
                                       "mptcp": True, "bytes": "1MB"}}},
        "capture": [{"point": "server:eth1"}],
        "scenarios": [{"name": "one"}],
    }
    exp.update(over)
    return exp


def write(tmp: Path, exp: dict[str, Any]) -> Path:
    return write_lab(tmp, "pair", TOPOLOGY, exp)


def refused(tmp: Path, exp: dict[str, Any]) -> LabInputError:
    with pytest.raises(LabInputError) as e:
        load_lab(write(tmp, exp))
    return e.value


def test_wire_address_unmaps_only_ipv4_mapped_addresses() -> None:
    assert wire_address(ip_address("::ffff:10.0.1.1")) == IPv4Address("10.0.1.1")
    assert wire_address(ip_address("dead:beef:1::1")) == IPv6Address("dead:beef:1::1")
    assert wire_address(ip_address("10.0.1.1")) == IPv4Address("10.0.1.1")
    # an IPv4-compatible or NAT64 form is no IPv4-mapped address
    assert wire_address(ip_address("64:ff9b::a00:101")).version == 6


def test_mapped_literals_of_the_nodes_ipv4_addresses_are_accepted_and_kept_as_written(tmp_path: Path) -> None:
    lab = load_lab(write(tmp_path, experiment()))
    body = lab.scenarios[0].body
    net = build_network(lab.topology, body)
    assert net.owns("server", "::ffff:10.0.1.1") and net.owns("client", "::ffff:10.0.2.2")
    assert not net.owns("server", "::ffff:10.0.1.2")
    # commands print the literal as the lab (and mptcp_join.sh) writes it, not ::ffff:a00:101
    assert str(net.address("::ffff:10.0.1.1")) == "::ffff:10.0.1.1"
    assert net.address("::ffff:10.0.1.1") == ip_address("::ffff:10.0.1.1")
    spec = body.nodes["server"].mptcp
    assert spec is not None and spec.endpoints[0].address == "::ffff:10.0.2.1"


@pytest.mark.parametrize("over, field, maps", [
    ({"server_address": "::ffff:10.0.1.2"}, "traffic.flows.main.server_address", "10.0.1.2"),  # the client's
    ({"server_address": "::ffff:10.0.9.1"}, "traffic.flows.main.server_address", "10.0.9.1"),  # nobody's
    ({"client_ep": "::ffff:10.0.2.1"}, "nodes.client.mptcp.endpoints[0].address", "10.0.2.1"),
    ({"server_ep": "::ffff:10.0.3.1"}, "nodes.server.mptcp.endpoints[0].address", "10.0.3.1"),
])
def test_a_mapped_literal_of_an_ipv4_address_the_node_lacks_is_refused(
        tmp_path: Path, over: dict[str, str], field: str, maps: str) -> None:
    err = refused(tmp_path, experiment(**over))
    node = field.split(".")[1] if field.startswith("nodes.") else "server"
    assert err.field == field
    assert err.problem.startswith(f"{over[next(iter(over))]} is not an address of {node}")
    assert f"maps {maps}" in err.problem
    line = str(err)
    assert "\n" not in line and "experiment.yml" in line and field in line


def test_a_mapped_event_address_is_checked_too(tmp_path: Path) -> None:
    events = [{"at": 1.0, "action": "endpoint_add", "node": "client", "address": "::ffff:10.0.1.2",
               "flags": ["subflow"]}]
    load_lab(write(tmp_path, experiment(traffic={**experiment()["traffic"], "events": events})))
    events[0]["address"] = "::ffff:10.0.1.1"  # the server's
    err = refused(tmp_path, experiment(traffic={**experiment()["traffic"], "events": events}))
    assert err.field == "traffic.events[0].address" and "maps 10.0.1.1" in err.problem


def test_the_analysis_maps_a_mapped_address_to_its_ipv4_path(tmp_path: Path) -> None:
    lab = load_lab(write(tmp_path, experiment()))
    body = lab.scenarios[0].body
    net = build_network(lab.topology, body)
    flow = body.traffic.flows["main"]
    by_addr = path_of_address(body, net)
    assert by_addr["::ffff:10.0.2.2"] == by_addr["10.0.2.2"] == "B"
    assert by_addr["10.0.1.2"] == "A"
    # the mapped subflow endpoint draws a subflow on B; the mapped signal address is where
    # its IPv4 address is
    assert expected_paths(body, net, flow) == ("A", "B")
    plain = load_lab(write(tmp_path, experiment("10.0.1.1", "10.0.2.2", "10.0.2.1"))).scenarios[0].body
    assert signal_paths(body, net, flow) == signal_paths(plain, net, plain.traffic.flows["main"]) != ()
    # the capture shows the server's IPv4 address: the analysis looks for that one
    assert lab_facts(body, net).flows["main"].server_ip == "10.0.1.1"


def test_no_family_warning_between_ipv4_and_a_mapped_address(tmp_path: Path) -> None:
    """The kernel joins from an IPv4 endpoint on an IPv4-mapped connection (mptcp_join.sh
    'single subflow v4-map-v6' expects the join): no 'IPv4 and IPv6' warning."""
    lab = load_lab(write(tmp_path, experiment(client_ep="client:eth2", server_ep="server:eth2")))
    assert not [w for w in join_warnings(lab) if "IPv4" in w and "IPv6" in w]


@pytest.mark.parametrize("name, twin", [
    ("single-subflow-ipv4-mapped", "single-subflow"),
    ("signal-address-ipv4-mapped", "signal-address"),
    ("single-subflow-v4-map-v6", "single-subflow"),
    ("signal-address-v4-map-v6", "signal-address"),
    ("single-subflow-v6-map-v4", "single-subflow"),
    ("signal-address-v6-map-v4", "signal-address"),
])
def test_selftests_v4mapped_cases_expect_the_paths_of_their_ipv4_twins(name: str, twin: str) -> None:
    """Each v4mapped case sets up what its IPv4 case does, some addresses in mapped form:
    the analysis expects the same paths and looks for the server's IPv4 address."""
    lab = load_lab(REPO / "labs" / "selftests")
    facts = {}
    for n in (name, twin):
        body = next(s for s in lab.scenarios if s.name == n).body
        net = build_network(lab.topology, body)
        flow = body.traffic.flows["main"]
        facts[n] = (expected_paths(body, net, flow), signal_paths(body, net, flow),
                    lab_facts(body, net).flows["main"].server_ip)
    assert facts[name] == facts[twin]
    assert facts[name][2] == "10.0.1.1" and "C" in facts[name][0] or facts[name][1] == ("A",)


def test_a_transfer_to_a_mapped_address_binds_the_mapped_ipv4_source(tmp_path: Path) -> None:
    """mptcp_join.sh connects an AF_INET6 socket to ::ffff:10.0.1.1; its source is the bind
    interface's IPv4 address in mapped form, not the interface's IPv6 address (dual stack
    here), which could not reach an IPv4 destination."""
    addressing = {**experiment()["addressing"],
                  "addresses6": {"server:eth1": "dead:beef:1::1/64", "client:eth1": "dead:beef:1::2/64",
                                 "server:eth2": "dead:beef:2::1/64", "client:eth2": "dead:beef:2::2/64"}}
    lab = load_lab(write(tmp_path, experiment(addressing=addressing)))
    body = lab.scenarios[0].body
    ctx = KindContext(net=build_network(lab.topology, body), duration_s=1.0)
    argv = list(KINDS["transfer"].client_argv(body.traffic.flows["main"], "main", ctx))
    assert argv[argv.index("--address") + 1] == "::ffff:10.0.1.1"
    assert argv[argv.index("--bind") + 1] == "::ffff:10.0.1.2"
    plain = experiment("dead:beef:1::1", "client:eth2", "server:eth2", addressing=addressing)
    lab = load_lab(write(tmp_path, plain))
    body = lab.scenarios[0].body
    ctx = KindContext(net=build_network(lab.topology, body), duration_s=1.0)
    argv = list(KINDS["transfer"].client_argv(body.traffic.flows["main"], "main", ctx))
    assert argv[argv.index("--bind") + 1] == "dead:beef:1::2"  # an IPv6 server: the IPv6 source, as before
