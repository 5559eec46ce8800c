"""What the lab tells the analysis: path rates, backup paths, paths drawn by ADD_ADDR."""

from __future__ import annotations

from pathlib import Path

from mptcplab.analysis.labspec import backup_paths, path_links, path_rates, signal_paths
from mptcplab.emulation.linkmodel import Endpoint
from mptcplab.lab.loader import load_lab
from mptcplab.lab.network import Network, build_network
from mptcplab.lab.schema import ClabTopology, ExperimentBody

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
