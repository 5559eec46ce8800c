"""What the lab tells the analysis: path rates, backup paths, paths drawn by ADD_ADDR, and
the repetition's facts built from them once (lab_facts)."""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest

from mptcplab.analysis.labspec import (
    backup_paths,
    config_diagnostics,
    expected_paths,
    join_ports,
    lab_facts,
    path_links,
    path_of_address,
    path_rates,
    retired_paths,
    signal_paths,
)
from mptcplab.emulation.linkmodel import Endpoint
from mptcplab.lab.loader import load_lab
from mptcplab.lab.network import Network, build_network
from mptcplab.lab.schema import ClabTopology, ExperimentBody
from mptcplab.record.model import Event

REPO = Path(__file__).resolve().parents[2]


def mtu_lab(scenario: str = "mptcp-bottleneck"):
    lab = load_lab(REPO / "labs" / "mtu")
    sc = next(s for s in lab.scenarios if s.name == scenario)
    return lab, sc.body, build_network(lab.topology, sc.body)


def test_path_links_follow_the_routes_to_the_server():
    _, body, net = mtu_lab()
    links = path_links(net, Endpoint.parse("client:eth2"), net.address("server:eth1"))
    assert [lk.name for lk in links or []] == [
        "client:eth2--rb1:eth1", "rb1:eth2--rb2:eth1", "rb2:eth2--ra:eth3", "ra:eth2--server:eth1"]


def test_path_rates_are_the_lowest_configured_rate_on_the_path():
    _, body, net = mtu_lab()
    assert path_rates(body, net, "server") == {"A": 100e6, "B": 100e6}
    slow = body.model_copy(update={"links": {**body.links, "rb2:eth2": body.links["client:eth1"].model_copy(
        update={"rate": "4mbit"})}})
    net2 = build_network(mtu_lab()[0].topology, slow)
    assert path_rates(slow, net2, "server") == {"A": 100e6, "B": 4e6}


def disjoint(signal: bool, accepted: int) -> tuple[ExperimentBody, Network]:
    topo = ClabTopology.model_validate({"name": "d", "topology": {
        "nodes": {n: {"kind": "linux", "image": "x"} for n in ("client", "server", "ra", "rb")},
        "links": [{"endpoints": ["client:eth1", "ra:eth1"]}, {"endpoints": ["client:eth2", "rb:eth1"]},
                  {"endpoints": ["ra:eth2", "server:eth1"]}, {"endpoints": ["rb:eth2", "server:eth2"]}]}})
    srv_eps = [{"address": "server:eth2", "flags": ["signal"]}] if signal else []
    body = ExperimentBody.model_validate({
        "paths": {"A": "client:eth1", "B": "client:eth2"},
        "nodes": {"client": {"role": "host", "mptcp": {"limits": {"add_addr_accepted": accepted},
                                                       "endpoints": [{"address": "client:eth2",
                                                                      "flags": ["subflow", "backup"]}]}},
                  "server": {"role": "host", "mptcp": {"endpoints": srv_eps}},
                  "ra": {"role": "router"}, "rb": {"role": "router"}},
        "traffic": {"flows": {"main": {"client": "client", "server": "server", "server_address": "server:eth1",
                                       "bind": "client:eth1"}}}})
    return body, build_network(topo, body)


def test_announced_address_draws_a_subflow_on_the_path_that_reaches_it():
    body, net = disjoint(signal=True, accepted=1)
    flow = body.traffic.flows["main"]
    assert path_links(net, Endpoint.parse("client:eth2"), net.address("server:eth1")) is None  # disjoint
    assert signal_paths(body, net, flow) == ("B",)
    # a client that accepts no announcement, or a server that makes none: nothing expected
    body0, net0 = disjoint(signal=True, accepted=0)
    assert signal_paths(body0, net0, body0.traffic.flows["main"]) == ()
    body1, net1 = disjoint(signal=False, accepted=1)
    assert signal_paths(body1, net1, body1.traffic.flows["main"]) == ()


def test_backup_paths_from_the_client_endpoint_flags():
    body, _ = disjoint(signal=False, accepted=0)
    assert backup_paths(body, body.traffic.flows["main"]) == ("B",)
    _, mbody, _ = mtu_lab()
    assert backup_paths(mbody, mbody.traffic.flows["main"]) == ()


def test_lab_facts_are_the_builders_once_per_repetition():
    """lab_facts: the repetition's facts built once, each flow's equal to the pure builders';
    frozen, so the flows that share it cannot change it for each other."""
    lab = load_lab(REPO / "labs" / "http")
    for sc in lab.scenarios:
        body = sc.body
        net = build_network(lab.topology, body)
        facts = lab_facts(body, net)
        assert dict(facts.path_of_address) == path_of_address(body, net)
        assert list(facts.flows) == list(body.traffic.flows)
        for name, flow in body.traffic.flows.items():
            ff = facts.flows[name]
            assert (ff.name, ff.flow, ff.server_ip) == (name, flow, str(net.address(flow.server_address)))
            assert ff.expected_paths == expected_paths(body, net, flow)
            assert ff.backup_paths == backup_paths(body, flow)
            assert ff.join_ports == join_ports(body, flow)
            assert dict(ff.path_rates_bps) == path_rates(body, net, flow.server, flow.direction)
            assert ff.diagnostics == tuple(config_diagnostics(body, flow))
            assert facts.retired(name, []) == retired_paths(body, net, flow, []) == ({}, {})
    # a flow that joins other ports and one that does not, each its own
    eight = next(s for s in lab.scenarios if s.name == "reorder-8sf-download")
    facts = lab_facts(eight.body, build_network(lab.topology, eight.body))
    assert facts.flows["bulk"].join_ports == (10000, 10001, 10002, 10003)
    assert facts.flows["bulk"].expected_paths
    with pytest.raises(FrozenInstanceError):
        facts.flows["bulk"].join_ports = ()  # type: ignore[misc]


def test_retired_paths_of_the_facts_are_the_builders():
    """LabFacts.retired reads the repetition's events with the facts' own address map: the
    same answer as retired_paths building it again."""
    _, body, net = mtu_lab()
    flow = next(iter(body.traffic.flows.values()))
    down = Event(planned_s=1.0, actual_s=1.0, epoch_s=101.0, action="link_down", target="client:eth2",
                 node="client", link="client:eth2", rc=0)
    facts = lab_facts(body, net)
    name = next(iter(body.traffic.flows))
    got = facts.retired(name, [down])
    assert got == retired_paths(body, net, flow, [down])
    assert got[0] == {"B": 101.0} and "down" in got[1]["B"]


def _selftests_case(name: str):
    lab = load_lab(REPO / "labs" / "selftests")
    sc = next(s for s in lab.scenarios if s.name == name)
    body = sc.body
    return body, build_network(lab.topology, body), body.traffic.flows[next(iter(body.traffic.flows))]


def test_a_userspace_path_manager_promises_no_subflow_for_its_endpoints():
    """mptcp_join.sh 'userspace pm type does not send join': the client has a subflow
    endpoint, but with the userspace PM the kernel opens nothing for it; the same endpoint under
    the in-kernel PM ('single subflow') is expected to carry a subflow."""
    body, net, flow = _selftests_case("userspace-pm-type-does-not-send-join")
    assert body.nodes[flow.client].mptcp.endpoints, "the case configures a client endpoint"
    assert len(expected_paths(body, net, flow)) <= 1
    kbody, knet, kflow = _selftests_case("single-subflow")
    assert len(expected_paths(kbody, knet, kflow)) == 2


def test_a_userspace_path_manager_server_announces_none_of_its_endpoints():
    body, net, flow = _selftests_case("userspace-pm-type-prevents-add-addr")
    assert signal_paths(body, net, flow) == ()
    kbody, knet, kflow = _selftests_case("signal-address")
    assert len(signal_paths(kbody, knet, kflow)) == 1
