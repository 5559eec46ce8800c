"""The balance-rr emulation (mptcplab/net/bonding.py): schema, load-time checks, the commands of
each leg, and the MPTCP signal endpoint with a port (labs/http's 8-subflow scenario)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from mptcplab.errors import LabInputError
from mptcplab.lab.loader import load_lab
from mptcplab.lab.network import build_network
from mptcplab.lab.schema import MptcpEndpoint, NodeSpec
from mptcplab.lab.stripe import RR_MARK_BASE, RR_TABLE_BASE, stripe_of
from mptcplab.net.bonding import RR_TABLE, balance_rr_cmds
from mptcplab.net.mptcp import mptcp_cmds

REPO = Path(__file__).resolve().parents[2]
HTTP = load_lab(REPO / "labs" / "http")


def scenario(name: str):
    return next(s for s in HTTP.scenarios if s.name == name)


def test_direct_legs_route_the_one_peer_address_per_interface_and_mark_in_turn():
    sc = scenario("rr-100k")
    net = build_network(HTTP.topology, sc.body)
    s = stripe_of(net, sc.body, "client")
    assert s is not None and s.dst == net.address("server:eth1")
    assert [(leg.iface, leg.gateway, leg.mark, leg.table) for leg in s.legs] == [
        ("eth1", None, RR_MARK_BASE + 1, RR_TABLE_BASE), ("eth2", None, RR_MARK_BASE + 2, RR_TABLE_BASE + 1)]
    text = [" ".join(c.argv) for c in balance_rr_cmds(net, sc.body, "client")]
    assert text[:4] == [f"ip route add {s.dst}/32 dev eth1 table 200",
                        "ip rule add fwmark 0x4d520001 table 200 priority 50",
                        f"ip route add {s.dst}/32 dev eth2 table 201",
                        "ip rule add fwmark 0x4d520002 table 201 priority 50"]
    # the marking rule comes last (before it, nothing is marked), in a route chain of the output hook
    assert "type route hook output" in text[5]
    assert text[6] == (f"nft add rule ip {RR_TABLE} out ip daddr {s.dst} meta mark set numgen inc mod 2 "
                       "offset 0x4d520001 counter")
    # both directions are striped: the server's replies to the client's address too
    assert stripe_of(net, sc.body, "server").dst == net.address("client:eth1")  # type: ignore[union-attr]


def test_other_scenarios_have_no_striping():
    for name in ("tcp-100k", "mptcp-100k"):
        sc = scenario(name)
        net = build_network(HTTP.topology, sc.body)
        assert balance_rr_cmds(net, sc.body, "client") == balance_rr_cmds(net, sc.body, "server") == []


def test_a_leg_through_a_router_goes_via_the_router():
    lab = load_lab(REPO / "labs" / "asym")
    body = lab.scenarios[0].body
    nodes = dict(body.nodes)
    nodes["client"] = nodes["client"].model_copy(update={"balance_rr": NodeSpec.model_validate(
        {"role": "host", "balance_rr": {"to": "server:eth1", "via": ["eth1", "eth2"]}}).balance_rr})
    body = body.model_copy(update={"nodes": nodes})
    net = build_network(lab.topology, body)
    s = stripe_of(net, body, "client")
    assert s is not None
    gws = [leg.gateway for leg in s.legs]
    assert gws == [net.address("router:eth1"), net.address("router:eth2")]
    assert "via" in balance_rr_cmds(net, body, "client")[0].argv


def test_a_leg_to_a_host_that_does_not_own_the_address_is_a_lab_error():
    sc = scenario("rr-100k")
    nodes = dict(sc.body.nodes)
    nodes["client"] = NodeSpec.model_validate(
        {"role": "host", "balance_rr": {"to": "10.0.9.9", "via": ["eth1", "eth2"]}})
    body = sc.body.model_copy(update={"nodes": nodes})
    with pytest.raises(LabInputError, match="balance_rr.via"):
        stripe_of(build_network(HTTP.topology, body), body, "client")


@pytest.mark.parametrize("spec, needle", [
    ({"role": "router", "balance_rr": {"to": "10.0.1.1", "via": ["eth1", "eth2"]}}, "role: host"),
    ({"role": "host", "balance_rr": {"to": "10.0.1.1", "via": ["eth1"]}}, "at least 2"),
    ({"role": "host", "balance_rr": {"to": "10.0.1.1", "via": ["eth1", "eth1"]}}, "twice"),
    ({"role": "host", "balance_rr": {"to": "10.0.1.1", "via": ["eth1", "eth2; reboot"]}}, "pattern"),
    ({"role": "host", "balance_rr": {"to": "nowhere", "via": ["eth1", "eth2"]}}, "IPv4"),
])
def test_bad_balance_rr_is_a_schema_error(spec: dict, needle: str):
    with pytest.raises(ValidationError, match=needle):
        NodeSpec.model_validate(spec)


def test_signal_endpoint_with_a_port():
    sc = scenario("reorder-8sf-download")
    net = build_network(HTTP.topology, sc.body)
    eps = [" ".join(c.argv) for c in mptcp_cmds(sc.body, net, "server")
           if c.argv[:4] == ("ip", "mptcp", "endpoint", "add")]
    assert len(eps) == 7
    assert f"ip mptcp endpoint add {net.address('server:eth1')} dev eth1 port 10001 id 3 signal" in eps
    with pytest.raises(ValidationError, match="only a signal endpoint"):
        MptcpEndpoint.model_validate({"address": "10.0.1.1", "port": 10001, "flags": ["subflow"]})
