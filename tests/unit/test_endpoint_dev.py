"""An MPTCP endpoint given as an IPv4-mapped literal (``::ffff:a.b.c.d``) is added with the
``dev`` of the node's interface that has the IPv4 address it maps, as mptcp_join.sh gives
``dev ns2eth3``: without it the kernel binds the subflow to no interface and its join leaves
by the route to the server (client:eth1). An IPv6 literal gets it only where the node has a
per-source table for it: labs/selftests' hosts have none (direct links), and a v6 subflow
bound to eth3 finds no route to the server's eth1 address (the join fails to connect,
MPJoinSynTxConnectErr), so it keeps no dev there. At setup (net/mptcp.py) and as a timeline
event (timeline/actions.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from mptcplab.emulation.nfqueue import NfqueueEmulator
from mptcplab.lab.events import EndpointAdd
from mptcplab.lab.loader import load_lab
from mptcplab.lab.model import Lab
from mptcplab.lab.network import Network, build_network
from mptcplab.net.mptcp import endpoint_dev, mptcp_cmds
from mptcplab.timeline.endpoint_actions import endpoint_cmds
from mptcplab.timeline.env import ActionEnv

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def lab() -> Lab:
    return load_lab(REPO / "labs" / "selftests")


def added(lab: Lab, scenario: str, node: str) -> list[str]:
    sc = next(s for s in lab.scenarios if s.name == scenario)
    net = build_network(lab.topology, sc.body)
    cmds = mptcp_cmds(sc.body, net, node)
    return [" ".join(c.argv) for c in cmds if c.argv[:4] == ("ip", "mptcp", "endpoint", "add")]


def net_of(lab: Lab, scenario: str) -> Network:
    sc = next(s for s in lab.scenarios if s.name == scenario)
    return build_network(lab.topology, sc.body)


@pytest.mark.parametrize(("scenario", "node", "argv"), [
    ("single-subflow-ipv4-mapped", "client", "ip mptcp endpoint add ::ffff:10.0.3.2 dev eth3 subflow"),
    ("single-subflow-v6-map-v4", "client", "ip mptcp endpoint add ::ffff:10.0.3.2 dev eth3 subflow"),
    ("signal-address-ipv4-mapped", "server", "ip mptcp endpoint add ::ffff:10.0.2.1 dev eth2 signal"),
    # IPv6 literals: no per-source table on these hosts, no dev
    ("single-subflow-ipv6", "client", "ip mptcp endpoint add dead:beef:3::2 subflow"),
    ("remove-subflow-and-signal-ipv6", "client", "ip mptcp endpoint add dead:beef:3::2 id 2 subflow"),
    ("remove-subflow-and-signal-ipv6", "server", "ip mptcp endpoint add dead:beef:2::1 id 1 signal"),
])
def test_a_mapped_literal_gets_the_interface_that_has_its_address(lab: Lab, scenario: str, node: str,
                                                                   argv: str) -> None:
    assert added(lab, scenario, node) == [argv]


def test_a_reference_keeps_its_interface_and_an_unknown_address_gets_none(lab: Lab) -> None:
    net = net_of(lab, "single-subflow-ipv6")
    assert endpoint_dev(net, "client", "client:eth4") == "eth4"
    assert endpoint_dev(net, "client", "10.0.4.2") == "eth4"
    assert endpoint_dev(net, "client", "::ffff:10.0.4.2") == "eth4"
    assert endpoint_dev(net, "client", "dead:beef:4::2") is None  # no per-source table here
    # the server's address is none of the client's interfaces'
    assert endpoint_dev(net, "client", "dead:beef:1::1") is None
    assert endpoint_dev(net, "client", "::ffff:10.0.9.2") is None


def test_a_timeline_endpoint_add_of_a_literal_gets_its_dev_too(lab: Lab) -> None:
    env = ActionEnv(net_of(lab, "single-subflow-ipv4-mapped"), NfqueueEmulator(binary=Path("/bin/true")))
    for address, dev in (("::ffff:10.0.2.2", "eth2"), ("10.0.2.2", "eth2"), ("client:eth4", "eth4")):
        add = EndpointAdd(at=1.0, action="endpoint_add", node="client", address=address, flags=["subflow"], id=5)
        [c] = endpoint_cmds(env, add)
        assert c.argv[5:] == ("dev", dev, "id", "5", "subflow"), c.argv


V6_ROUTED = {  # client - r - server, two client paths: the client has a per-source table per path
    "topology": {"nodes": {n: {"kind": "linux", "image": f"mptcplab/{'router' if n == 'r' else 'host'}:latest"}
                           for n in ("client", "r", "server")},
                 "links": [{"endpoints": ["client:eth1", "r:eth1"]}, {"endpoints": ["client:eth2", "r:eth2"]},
                           {"endpoints": ["r:eth3", "server:eth1"]}]},
}


def test_an_ipv6_literal_with_a_per_source_table_gets_its_interface(tmp_path: Path) -> None:
    lab_dir = tmp_path / "v6r"
    lab_dir.mkdir()
    (lab_dir / "topology.clab.yml").write_text(yaml.safe_dump({"name": "v6r", **V6_ROUTED}))
    (lab_dir / "experiment.yml").write_text(yaml.safe_dump({
        "paths": {"A": "client:eth1", "B": "client:eth2"},
        "addressing": {"pool": None, "pool6": "fd00:36::/48"},
        "nodes": {"client": {"role": "host", "mptcp": {"limits": {"subflows": 1}}},
                  "r": {"role": "router"}, "server": {"role": "host"}},
        "traffic": {"flows": {"main": {"client": "client", "server": "server", "server_address": "server:eth1",
                                       "mptcp": True, "duration": "5s"}}},
        "capture": [{"point": "client:eth1"}], "scenarios": [{"name": "one"}]}))
    lab = load_lab(lab_dir)
    net = build_network(lab.topology, lab.scenarios[0].body)
    eth2 = str(net.address("client:eth2"))
    assert ":" in eth2 and any(str(r.src) == eth2 for r in net.nodes["client"].rules)
    assert endpoint_dev(net, "client", eth2) == "eth2"
    # the server, one interface, has no per-source table: no dev for its own v6 literal
    assert endpoint_dev(net, "server", str(net.address("server:eth1"))) is None
