"""Host filters: the middlebox list on a ``role: host`` node (nftables output/input hooks,
the modify-payload box on mangle POSTROUTING), the selftests' kinds (drop-add-addr,
block-tcp), and what a host still refuses, as one line naming file, field and problem."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from mptcplab.errors import LabInputError
from mptcplab.lab.loader import load_lab
from mptcplab.lab.schema import ExperimentBody, NodeSpec
from mptcplab.middlebox import rewrite
from mptcplab.middlebox.nft import MB_TABLE, middlebox_cmds
from mptcplab.steps.counters import FirewallCounters

REPO = Path(__file__).resolve().parents[2]
MTU = load_lab(REPO / "labs" / "mtu")
EXE = Path("/x/mptcplab-mbox")


def body_with(node: str, spec: dict[str, Any]) -> ExperimentBody:
    body = MTU.scenarios[0].body
    return body.model_copy(update={"nodes": {**body.nodes, node: NodeSpec.model_validate(spec)}})


def host_rules(*boxes: dict[str, Any]) -> list[str]:
    return [" ".join(c.argv) for c in middlebox_cmds(body_with("client", {"role": "host", "middlebox": list(boxes)}),
                                                      "client")]


def test_a_host_box_goes_in_output_and_input_by_default():
    cmds = host_rules({"kind": "drop-mp-join"})
    assert cmds[0] == f"nft add table inet {MB_TABLE}"
    assert cmds[1] == f"nft add chain inet {MB_TABLE} output {{ type filter hook output priority 0 ; }}"
    assert cmds[2] == f"nft add chain inet {MB_TABLE} input {{ type filter hook input priority 0 ; }}"
    tail = "tcp flags & (syn|ack) == syn tcp option mptcp subtype 1 counter drop"
    assert cmds[3:] == [f"nft add rule inet {MB_TABLE} output {tail}", f"nft add rule inet {MB_TABLE} input {tail}"]
    assert not any("forward" in c for c in cmds)


@pytest.mark.parametrize("direction, chains", [("out", ["output"]), ("in", ["input"]), ("both", ["output", "input"])])
def test_direction_picks_the_hooks_and_iface_its_match(direction: str, chains: list[str]):
    cmds = host_rules({"kind": "drop-add-addr", "direction": direction, "iface": "eth2"})
    made = [c.split()[5] for c in cmds if c.startswith(f"nft add chain inet {MB_TABLE}")]
    assert made == chains
    rules = [c for c in cmds if c.startswith("nft add rule")]
    assert [r.split()[5] for r in rules] == chains
    for r in rules:
        match = "oifname" if r.split()[5] == "output" else "iifname"
        assert r.endswith(f"{match} eth2 tcp option mptcp subtype 3 counter drop")


def test_drop_add_addr_on_a_router_is_a_forward_rule():
    cmds = middlebox_cmds(body_with("rb1", {"role": "router", "middlebox": [{"kind": "drop-add-addr"}]}), "rb1")
    assert [" ".join(c.argv) for c in cmds[2:]] == [
        f"nft add rule inet {MB_TABLE} forward tcp option mptcp subtype 3 counter drop"]


@pytest.mark.parametrize("box, tail", [
    ({"kind": "block-tcp", "source": "10.0.3.2"},
     "ip saddr 10.0.3.2 meta l4proto tcp counter reject with icmpx type port-unreachable"),
    ({"kind": "block-tcp", "source": "10.0.3.2", "action": "drop"}, "ip saddr 10.0.3.2 meta l4proto tcp counter drop"),
    ({"kind": "block-tcp", "destination": "dead:beef:2::1", "action": "drop"},
     "ip6 daddr dead:beef:2::1 meta l4proto tcp counter drop"),
    ({"kind": "block-tcp", "source": "10.0.3.2", "destination": "10.0.3.1"},
     "ip saddr 10.0.3.2 ip daddr 10.0.3.1 meta l4proto tcp counter reject with icmpx type port-unreachable"),
])
def test_block_tcp_rules(box: dict[str, Any], tail: str):
    rules = [r for r in host_rules({**box, "direction": "in"}) if r.startswith("nft add rule")]
    assert rules == [f"nft add rule inet {MB_TABLE} input {tail}"]


def test_host_counters_are_read_like_a_routers():
    body = body_with("client", {"role": "host", "middlebox": [{"kind": "drop-add-addr", "direction": "out"}]})
    rep: Any = type("R", (), {"body": body})()
    assert ("middlebox", "client") in [(w, c.node) for w, c in FirewallCounters._cmds(rep)]


def test_modify_payload_on_a_host_is_mangle_postrouting(tmp_path: Path):
    body = body_with("client", {"role": "host", "middlebox": [
        {"kind": "modify-payload", "iface": "eth1", "after": 5, "every": 1000000}]})
    (rule,), (d,) = rewrite.plan(body, 3, tmp_path, EXE)
    assert rule.node == "client" and d.node == "client"
    assert rule.argv == ("iptables", "-w", "-t", "mangle", "-A", "POSTROUTING", "-o", "eth1", "-p", "tcp",
                         "-j", "NFQUEUE", "--queue-num", "3")
    assert middlebox_cmds(body, "client") == []  # no nft table for the box alone


@pytest.mark.parametrize("spec, needle", [
    ({"role": "host", "middlebox": [{"kind": "nat"}]}, r"middlebox\.0\.kind: nat on a router only"),
    ({"role": "host", "middlebox": [{"kind": "drop-mp-join"}, {"kind": "rewrite-isn"}]},
     r"middlebox\.1\.kind: rewrite-isn on a router only"),
    ({"role": "host", "middlebox": [{"kind": "split-segments"}]}, "split-segments on a router only"),
    ({"role": "host", "middlebox": [{"kind": "coalesce-segments"}]}, "coalesce-segments on a router only"),
    ({"role": "host", "middlebox": [{"kind": "modify-payload", "direction": "in"}]},
     r"middlebox\.0\.direction: modify-payload on a host rewrites what it sends"),
    ({"role": "router", "middlebox": [{"kind": "drop-add-addr", "direction": "out"}]},
     r"middlebox\.0\.direction: a router's box"),
    ({"role": "host", "middlebox": [{"kind": "block-tcp"}]}, "give source, destination or both"),
    ({"role": "host", "middlebox": [{"kind": "block-tcp", "source": "10.0.3.2", "destination": "dead::1"}]},
     "different families"),
    ({"role": "host", "middlebox": [{"kind": "block-tcp", "source": "10.0.3.300"}]}, "source"),
    ({"role": "host", "middlebox": [{"kind": "block-tcp", "source": "10.0.3.2", "action": "accept"}]}, "action"),
    ({"role": "host", "middlebox": [{"kind": "drop-add-addr", "direction": "sideways"}]}, "direction"),
])
def test_what_a_host_refuses(spec: dict[str, Any], needle: str):
    with pytest.raises(ValidationError, match=needle):
        NodeSpec.model_validate(spec)


def test_a_refused_host_box_is_one_line_naming_file_and_field(tmp_path: Path):
    lab = tmp_path / "lab"
    lab.mkdir()
    for f in ("topology.clab.yml", "published.yml"):
        (lab / f).write_text((REPO / "labs" / "mtu" / f).read_text())
    text = (REPO / "labs" / "mtu" / "experiment.yml").read_text()
    assert "\n  client:\n    role: host\n" in text
    (lab / "experiment.yml").write_text(text.replace(
        "\n  client:\n    role: host\n", "\n  client:\n    role: host\n    middlebox:\n    - kind: nat\n", 1))
    with pytest.raises(LabInputError) as err:
        load_lab(lab)
    msg = str(err.value)
    assert "\n" not in msg.strip()
    assert "experiment.yml" in msg and "nodes.client" in msg and "nat on a router only" in msg


def test_modify_payload_count_is_passed_only_when_given(tmp_path: Path):
    once = body_with("client", {"role": "host", "middlebox": [
        {"kind": "modify-payload", "after": 1, "every": 1, "count": 1}]})
    _, (d,) = rewrite.plan(once, 0, tmp_path, EXE)
    assert d.argv[-9:] == ("--after", "1", "--every", "1", "--byte-offset", "100", "--count", "1", "payload-flip")
    plain = body_with("rb1", {"role": "router", "middlebox": [{"kind": "modify-payload"}]})
    _, (d,) = rewrite.plan(plain, 0, tmp_path, EXE)
    assert "--count" not in d.argv  # a router's box as before: the middlebox lab's commands unchanged
    with pytest.raises(ValidationError, match="count"):
        NodeSpec.model_validate({"role": "host", "middlebox": [{"kind": "modify-payload", "count": 0}]})


def test_the_selftests_lab_uses_host_filters():
    lab = load_lab(REPO / "labs" / "selftests")
    kinds = {b.kind for sc in lab.scenarios for n in sc.body.nodes.values() if n.role == "host" for b in n.middlebox}
    assert {"drop-add-addr", "block-tcp", "modify-payload"} <= kinds
