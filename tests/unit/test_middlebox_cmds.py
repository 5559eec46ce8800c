"""Middleboxes in the lab schema and as nftables commands (middlebox/nft.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from mptcplab.lab.loader import load_lab
from mptcplab.lab.schema import NodeSpec
from mptcplab.middlebox.nft import MB_TABLE, middlebox_cmds
from mptcplab.net.config import firewall_cmds

REPO = Path(__file__).resolve().parents[2]


def body_with(node: str, spec: dict):
    lab = load_lab(REPO / "labs" / "mtu")
    body = lab.scenarios[0].body
    nodes = dict(body.nodes)
    nodes[node] = NodeSpec.model_validate(spec)
    return body.model_copy(update={"nodes": nodes})


def test_each_kind_is_one_counted_rule_in_the_forward_hook():
    body = body_with("rb1", {"role": "router", "middlebox": [
        {"kind": "drop-mp-join"}, {"kind": "strip-mptcp-syn", "iface": "eth1"}, {"kind": "strip-mptcp-data"}]})
    cmds = middlebox_cmds(body, "rb1")
    assert all(c.node == "rb1" for c in cmds)
    assert cmds[0].argv == ("nft", "add", "table", "inet", MB_TABLE)
    assert cmds[1].argv[:6] == ("nft", "add", "chain", "inet", MB_TABLE, "forward")
    assert "hook" in cmds[1].argv and "forward" in cmds[1].argv[6:]
    drop, strip_syn, strip_data = (" ".join(c.argv) for c in cmds[2:])
    assert drop.endswith("tcp flags & (syn|ack) == syn tcp option mptcp subtype 1 counter drop")
    assert "iifname eth1 tcp flags syn tcp option mptcp exists counter reset tcp option mptcp" in strip_syn
    assert strip_data.endswith("tcp flags & syn == 0 tcp option mptcp exists counter reset tcp option mptcp")


def test_no_middlebox_no_commands_and_the_black_hole_is_unchanged():
    body = body_with("rb1", {"role": "router", "drop_icmp_frag_needed": True})
    assert middlebox_cmds(body, "rb1") == []
    assert [c.argv[1] for c in firewall_cmds(body, "rb1")] == ["add", "add", "add"]
    both = body_with("rb1", {"role": "router", "drop_icmp_frag_needed": True,
                             "middlebox": [{"kind": "drop-mp-join"}]})
    assert len(firewall_cmds(both, "rb1")) == 6


@pytest.mark.parametrize("spec, needle", [
    ({"role": "host", "middlebox": [{"kind": "nat"}]}, "on a router only"),
    ({"role": "router", "middlebox": [{"kind": "rewrite-everything"}]}, "kind"),
    ({"role": "router", "middlebox": [{"kind": "drop-mp-join", "iface": "eth1; rm -rf /"}]}, "iface"),
    ({"role": "router", "middlebox": [{"kind": "drop-mp-join", "extra": 1}]}, "extra"),
])
def test_bad_middlebox_is_a_schema_error(spec: dict, needle: str):
    with pytest.raises(ValidationError, match=needle):
        NodeSpec.model_validate(spec)


def _rules(kind: dict) -> list[str]:
    body = body_with("rb1", {"role": "router", "middlebox": [kind]})
    return [" ".join(c.argv) for c in middlebox_cmds(body, "rb1")[2:]]


STRIP = "tcp option mptcp exists counter reset tcp option mptcp"


@pytest.mark.parametrize("kind, tail", [
    ({"kind": "strip-mptcp-syn-only"}, "tcp flags & (syn|ack) == syn " + STRIP),
    ({"kind": "strip-mptcp-synack"}, "tcp flags & (syn|ack) == syn|ack " + STRIP),
    ({"kind": "strip-mptcp-third-ack"},
     "tcp flags & syn == 0 ct direction original ct original packets <= 3 " + STRIP),
    ({"kind": "strip-mptcp-mid", "after_packets": 50},
     "tcp flags & syn == 0 ct direction original ct original packets > 50 " + STRIP),
    ({"kind": "drop-mp-capable-syn"}, "tcp flags & (syn|ack) == syn tcp option mptcp subtype 0 counter drop"),
])
def test_nsdi_rows_are_one_counted_forward_rule(kind: dict, tail: str):
    (rule,) = _rules(kind)
    assert rule.startswith(f"nft add rule inet {MB_TABLE} forward ") and rule.endswith(tail)


def test_nat_is_a_masquerading_nat_chain():
    chain, rule = _rules({"kind": "nat", "iface": "eth1"})
    assert "type nat hook postrouting priority 100" in chain
    assert rule.endswith("postrouting iifname eth1 meta nfproto ipv4 counter masquerade")


def test_strict_firewall_drops_invalid_and_tracks_windows():
    rule, sysctl = _rules({"kind": "strict-firewall"})
    assert rule.endswith("forward ct state invalid counter drop")
    assert sysctl == "sysctl -q -w net.netfilter.nf_conntrack_tcp_be_liberal=0"


@pytest.mark.parametrize("box, needle", [
    ({"kind": "strip-mptcp-mid", "after_packets": 1}, "after_packets"),
    ({"kind": "nat", "to": "1.2.3.4"}, "to"),
])
def test_bad_new_middlebox_fields(box: dict, needle: str):
    with pytest.raises(ValidationError, match=needle):
        NodeSpec.model_validate({"role": "router", "middlebox": [box]})
