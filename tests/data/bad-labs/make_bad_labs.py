"""Writes tests/data/bad-labs/<case>/: the valid lab in _base/ with one mutation each.

Run from the repository root after changing a case: .venv/bin/python
tests/data/bad-labs/make_bad_labs.py. Every case directory holds the three lab files
(the mutated one starts with a comment saying what was broken) and `expect`, which
tests/unit/test_bad_labs.py reads: the stage that must refuse the lab (`validate`:
the lab files alone; `preflight`: only this host can tell, so plain `validate`
accepts it), the file and the field the one-line error must name, and a word of the
problem.
"""

# ruff: noqa: E501 - one case per line reads better than the line limit
from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
BASE = HERE / "_base"
T, E, P = "topology.clab.yml", "experiment.yml", "published.yml"


@dataclass(frozen=True)
class Case:
    name: str
    file: str
    why: str
    field: str  # the error's field starts with this
    problem: str  # a word of the problem
    edit: Callable[[Any], Any] | None = None  # on the parsed file (returns nothing, or the new document)
    text: Callable[[str], str] | None = None  # on the file's text
    stage: str = "validate"


def sc(i: int, **kv: Any) -> Callable[[Any], None]:
    return lambda d: d["scenarios"][i].update(kv)


def link(ep: str, **kv: Any) -> Callable[[Any], None]:
    return lambda d: d["links"].setdefault(ep, {}).update(kv)


def flow(**kv: Any) -> Callable[[Any], None]:
    return lambda d: d["traffic"]["flows"]["main"].update(kv)


def node(n: str, **kv: Any) -> Callable[[Any], None]:
    return lambda d: d["nodes"][n].update(kv)


def csys(k: str, v: Any) -> Callable[[Any], None]:
    return lambda d: d["nodes"]["client"]["sysctls"].update({k: v})


def both(*fns: Callable[[Any], None]) -> Callable[[Any], None]:
    def run(d: Any) -> None:
        for f in fns:
            f(d)
    return run


LAUGHS = "lol: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n" + "".join(
    f"l{i}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8))

CASES = [
    # ------------------------------------------------------------------ topology.clab.yml
    Case("topo-kind-bridge", T, "a node kind the engine cannot run", "topology.nodes.ra.kind", "must be",
         edit=lambda d: d["topology"]["nodes"]["ra"].update(kind="bridge")),
    Case("topo-link-undefined-node", T, "a link to a node that does not exist", "topology.links[0].endpoints", "not defined",
         edit=lambda d: d["topology"]["links"][0].update(endpoints=["client:eth1", "ghost:eth1"])),
    Case("topo-link-same-node", T, "a link from a node to itself", "topology.links[1].endpoints", "two different",
         edit=lambda d: d["topology"]["links"][1].update(endpoints=["client:eth2", "client:eth3"])),
    Case("topo-endpoint-reused", T, "one interface on two links", "topology.links[2].endpoints", "already used",
         edit=lambda d: d["topology"]["links"][2].update(endpoints=["rb:eth1", "ra:eth3"])),
    Case("topo-mtu-too-large", T, "an MTU above 65535", "topology.links[0].mtu", "less than",
         edit=lambda d: d["topology"]["links"][0].update(mtu=70000)),
    Case("topo-mtu-too-small", T, "an MTU below IPv4's 68", "topology.links[3].mtu", "greater than",
         edit=lambda d: d["topology"]["links"][3].update(mtu=40)),
    Case("topo-endpoint-syntax", T, "an endpoint without node:interface", "topology.links[0].endpoints", "node:interface",
         edit=lambda d: d["topology"]["links"][0].update(endpoints=["client-eth1", "ra:eth1"])),
    Case("topo-image-shell", T, "shell metacharacters in an image name", "topology.nodes.client.image", "pattern",
         edit=lambda d: d["topology"]["nodes"]["client"].update(image="mptcplab/host; rm -rf /")),
    Case("topo-name-shell", T, "a command substitution in the lab name", "name", "pattern",
         edit=lambda d: d.update(name="base$(reboot)")),
    Case("topo-duplicate-node", T, "the same node twice (YAML keeps the last one silently)", "line", "duplicate key",
         text=lambda s: s.replace("    rb: {kind: linux", "    ra: {kind: linux, image: x}\n    rb: {kind: linux")),
    Case("topo-anchor-alias", T, "an anchor and an alias", "line", "anchors",
         text=lambda s: s.replace("client: {kind: linux, image: mptcplab/host:latest}",
                                  "client: &h {kind: linux, image: mptcplab/host:latest}").replace(
                                      "server: {kind: linux, image: mptcplab/host:latest}", "server: *h")),
    Case("topo-billion-laughs", T, "the billion laughs: nine levels of nine aliases", "line", "anchors",
         text=lambda s: LAUGHS + s),
    Case("topo-not-a-mapping", T, "a list at the top level", "<top>", "mapping",
         text=lambda s: "- name: base\n- topology: {}\n"),
    Case("topo-not-utf8", T, "bytes that are not UTF-8", "<top>", "UTF-8",
         text=lambda s: s.replace("name: base", "name: base\xff")),
    Case("topo-deep-nesting", T, "a hundred nested lists", "line", "nested deeper",
         text=lambda s: s + "extra: " + "[" * 100 + "]" * 100 + "\n"),
    Case("topo-yaml-syntax", T, "an unclosed flow mapping", "line", "invalid YAML",
         text=lambda s: s.replace("ra: {kind: linux, image: mptcplab/router:latest}", "ra: {kind: linux, image: [")),
    # ------------------------------------------------------------------ experiment.yml: schema
    Case("exp-unknown-top-field", E, "a misspelt top-level key", "repetitons", "unknown field",
         edit=lambda d: d.update(repetitons=3)),
    Case("exp-node-without-entry", E, "a topology node with no role", "nodes.rb", "no entry",
         edit=lambda d: d["nodes"].__delitem__("rb")),
    Case("exp-node-not-in-topology", E, "a node the topology does not have", "nodes.ghost", "no such node",
         edit=lambda d: d["nodes"].update(ghost={"role": "host"})),
    Case("exp-role-switch", E, "a role that does not exist", "nodes.ra.role", "must be", edit=node("ra", role="switch")),
    Case("exp-sysctl-key-shell", E, "a sysctl name with a shell command after it", "nodes.client.sysctls", "not a sysctl name",
         edit=csys("net.ipv4.tcp_mtu_probing; touch x", 1)),
    Case("exp-sysctl-key-space", E, "a sysctl name with a space", "nodes.client.sysctls", "not a sysctl name",
         edit=csys("net.ipv4.tcp mtu_probing", 1)),
    Case("exp-sysctl-key-global", E, "a host-wide sysctl (not net.*)", "sysctls.kernel.panic", "not a sysctl name",
         edit=lambda d: d["sysctls"].update({"kernel.panic": 1})),
    Case("exp-sysctl-value-shell", E, "a sysctl value with a shell command", "nodes.client.sysctls.net.ipv4.tcp_mtu_probing",
         "not a sysctl value", edit=csys("net.ipv4.tcp_mtu_probing", "1; touch x")),
    Case("exp-sysctl-value-subst", E, "a command substitution as a sysctl value", "sysctls.net.ipv4.tcp_no_metrics_save",
         "not a sysctl value", edit=lambda d: d["sysctls"].update({"net.ipv4.tcp_no_metrics_save": "$(id)"})),
    Case("exp-sysctl-value-bool", E, "true where the kernel wants 1", "nodes.client.sysctls.net.ipv4.tcp_mtu_probing",
         "true is not 1", edit=csys("net.ipv4.tcp_mtu_probing", True)),
    Case("exp-rate-unit", E, "a rate in an unknown unit", "links.client:eth1.rate", "rate unit",
         edit=link("client:eth1", rate="100 furlongs")),
    Case("exp-loss-over-100", E, "a loss above 100%", "links.client:eth1.loss", "between 0 and 1",
         edit=link("client:eth1", loss="150%")),
    Case("exp-delay-too-long", E, "a delay longer than a delay stage holds", "links.rb:eth2.delay", "longer than",
         edit=link("rb:eth2", delay="7200s")),
    Case("exp-direction-bad-rate", E, "a per-direction rate that is no rate", "links.client:eth1.egress.rate",
         "expected a rate", edit=link("client:eth1", egress={"rate": "fast"})),
    Case("exp-direction-unknown-field", E, "a direction giving the link-wide mtu", "links.client:eth1.ingress.mtu",
         "unknown field", edit=link("client:eth1", ingress={"mtu": 1400})),
    Case("exp-direction-too-slow", E, "a direction's rate tbf cannot shape", "links.client:eth1.ingress.rate",
         "too slow for tbf", edit=link("client:eth1", ingress={"rate": "500bit"})),
    Case("exp-scale-zero", E, "a scale factor of zero", "scale", "greater than 0",
         edit=lambda d: d.update(scale=0)),
    Case("exp-scale-no-reason", E, "a scale factor below 1 without its reason", "scale_reason",
         "required with a scale below 1", edit=lambda d: d.update(scale=0.5)),
    Case("exp-scale-in-scenario", E, "a scale factor in a scenario's override", "scenarios[0] (tcp-a): scale",
         "unknown field", edit=lambda d: d["scenarios"][0]["override"].update(scale=0.5)),
    Case("exp-link-mtu-range", E, "a link MTU below 68", "links.client:eth1.mtu", "greater than",
         edit=link("client:eth1", mtu=20)),
    Case("exp-balance-rr-router", E, "bonding's striping on a router", "nodes.ra", "role: host",
         edit=node("ra", balance_rr={"to": "server:eth1", "via": ["eth1", "eth2"]})),
    Case("exp-balance-rr-not-iface", E, "a balance-rr leg on an interface the host lacks", "nodes.client.balance_rr.via",
         "not an interface", edit=node("client", balance_rr={"to": "server:eth1", "via": ["eth1", "eth9"]})),
    Case("exp-endpoint-port-subflow", E, "an endpoint port without signal", "nodes.client.mptcp.endpoints[0]",
         "only a signal", edit=lambda d: d["nodes"]["client"]["mptcp"]["endpoints"][0].update(port=10001)),
    Case("exp-link-unknown-endpoint", E, "impairments of a link that does not exist", "links.ghost:eth9", "no link",
         edit=link("ghost:eth9", rate="1mbit")),
    Case("exp-link-both-ends", E, "both ends of one link given impairments", "links.ra:eth1", "same link",
         edit=link("ra:eth1", rate="10mbit")),
    Case("exp-flow-same-node", E, "a flow from the client to itself", "traffic.flows.main.server", "also the client",
         edit=flow(server="client", server_address="client:eth1")),
    Case("exp-flow-router", E, "a router as the client", "traffic.flows.main.client", "router", edit=flow(client="ra")),
    Case("exp-flow-address-garbage", E, "a server address that is neither node:iface nor IPv4",
         "traffic.flows.main.server_address", "neither", edit=flow(server_address="serverr")),
    Case("exp-flow-address-other-node", E, "the server address on another node", "traffic.flows.main.server_address",
         "not an interface of server", edit=flow(server_address="ra:eth2")),
    Case("exp-flow-bind-other-node", E, "the client bound to the server's interface", "traffic.flows.main.bind",
         "not an interface of client", edit=flow(bind="server:eth1")),
    Case("exp-flow-duration-too-long", E, "a transfer longer than iperf3 allows", "traffic.flows.main.duration", "iperf3",
         edit=flow(duration="100000s")),
    Case("exp-flow-window-too-big", E, "a socket buffer larger than iperf3 allows", "traffic.flows.main.window", "iperf3",
         edit=flow(window="1GiB")),
    Case("exp-flow-length-zero", E, "a write size of zero", "traffic.flows.main.length", "iperf3", edit=flow(length=0)),
    Case("exp-hold-negative", E, "a hold flow asked to hold a negative number of connections",
         "traffic.flows.hold.connections", "greater than or equal to 0",
         edit=lambda d: d["traffic"]["flows"].update(hold={"kind": "hold", "client": "client", "server": "server",
                                                          "server_address": "server:eth1", "connections": -1})),
    Case("exp-hold-measured", E, "a hold flow marked measured (it is the background, never the measurement)",
         "traffic.flows.hold.role", "competing",
         edit=lambda d: d["traffic"]["flows"].update(hold={"kind": "hold", "client": "client", "server": "server",
                                                          "server_address": "server:eth1", "connections": 10,
                                                          "role": "measured"})),
    Case("exp-capture-timestamps-unknown", E, "a capture timestamp precision tcpdump does not have",
         "capture[0].timestamps", "micro", edit=lambda d: d["capture"][0].update(timestamps="pico")),
    Case("exp-flow-cc-shell", E, "a command in the congestion control's name", "traffic.flows.main.cc", "pattern",
         edit=flow(cc="cubic;reboot")),
    Case("exp-flow-port-low", E, "a privileged port", "traffic.flows.main.port", "greater than", edit=flow(port=80)),
    Case("exp-no-measured", E, "no measured flow (every flow competing)", "traffic.flows", "at least one",
         edit=lambda d: d["traffic"]["flows"].update(
             main=dict(d["traffic"]["flows"]["main"], role="competing"),
             second=dict(d["traffic"]["flows"]["main"], port=5202, role="competing"))),
    Case("exp-flow-kind-unknown", E, "a flow of an unknown kind", "traffic.flows.main", "kind must be one of",
         edit=flow(kind="ftp")),
    Case("exp-udp-no-rate", E, "a UDP flow without its rate", "traffic.flows.main.rate", "required",
         edit=lambda d: d["traffic"]["flows"].update(main=dict(d["traffic"]["flows"]["main"], kind="udp",
                                                               mptcp=False, cc=None))),
    Case("exp-transfer-no-bytes", E, "a verified transfer without its byte count", "traffic.flows.main.bytes",
         "required", edit=lambda d: d["traffic"]["flows"].update(main={
             k: v for k, v in d["traffic"]["flows"]["main"].items()
             if k in ("client", "server", "server_address", "bind")} | {"kind": "transfer"})),
    Case("exp-transfer-fastclose-upload", E, "the client closes fast on an upload (MP_FASTCLOSE needs data "
         "unread: the server must send to it)", "traffic.flows.main.fastclose", "direction download or both",
         edit=lambda d: d["traffic"]["flows"].update(main={
             k: v for k, v in d["traffic"]["flows"]["main"].items()
             if k in ("client", "server", "server_address", "bind")} | {"kind": "transfer", "bytes": "1MB",
                                                                       "direction": "upload",
                                                                       "fastclose": "client"})),
    Case("exp-middlebox-mid-too-early", E, "options stripped mid-connection before the handshake is over",
         "nodes.ra.middlebox[0].strip-mptcp-mid.after_packets", "greater than or equal to 3",
         edit=node("ra", middlebox=[{"kind": "strip-mptcp-mid", "after_packets": 1}])),
    Case("exp-same-port", E, "two flows on one server port", "traffic.flows", "same server and port",
         edit=lambda d: d["traffic"]["flows"].update(second=dict(d["traffic"]["flows"]["main"], role="competing"))),
    Case("exp-event-link-nothing", E, "an event on a link that does not exist", "traffic.events[0].link", "not an endpoint",
         edit=lambda d: d["traffic"].update(events=[{"at": "1s", "action": "link_down", "link": "ghost:eth1"}])),
    Case("exp-event-unknown-action", E, "an action that does not exist (the old flood action)", "traffic.events[0]", "does not match any of the expected tags",
         edit=lambda d: d["traffic"].update(events=[{"at": "1s", "action": "udp_flood_start", "src": "client"}])),
    Case("exp-event-field-of-other-action", E, "link_down given a rate (a field of link_change)", "traffic.events[0].link_down.rate", "unknown field",
         edit=lambda d: d["traffic"].update(events=[{"at": "1s", "action": "link_down", "link": "client:eth1", "rate": "1mbit"}])),
    Case("exp-event-change-nothing", E, "link_change that changes nothing", "traffic.events[0].link_change", "at least one of",
         edit=lambda d: d["traffic"].update(events=[{"at": "1s", "action": "link_change", "link": "client:eth1"}])),
    Case("exp-event-rate-inexpressible", E, "an event rate no tbf can take", "traffic.events[0].rate", "tbf",
         edit=lambda d: d["traffic"].update(events=[{"at": "1s", "action": "link_change", "link": "client:eth1",
                                                      "rate": "100tbit"}])),
    Case("exp-event-one-needs-drop", E, "one direction down with ip link (which takes both)", "traffic.events[0].link_down", "how: drop",
         edit=lambda d: d["traffic"].update(events=[{"at": "1s", "action": "link_down", "link": "client:eth2", "direction": "one"}])),
    Case("exp-event-time-negative", E, "an event before the measured flow starts", "traffic.events[0].link_up.at", "between 0",
         edit=lambda d: d["traffic"].update(events=[{"at": -1, "action": "link_up", "link": "client:eth2"}])),
    Case("exp-event-node-nothing", E, "a sysctl write on a node that does not exist", "traffic.events[0].node", "no such node",
         edit=lambda d: d["traffic"].update(events=[{"at": "1s", "action": "sysctl", "node": "ghost", "key": "net.ipv4.tcp_mtu_probing", "value": 1}])),
    Case("exp-event-sysctl-global", E, "a timeline sysctl outside net.*", "traffic.events[0].sysctl.key", "net.",
         edit=lambda d: d["traffic"].update(events=[{"at": "1s", "action": "sysctl", "node": "client", "key": "kernel.panic", "value": 1}])),
    Case("exp-event-endpoint-other-node", E, "an endpoint change naming another node's interface", "traffic.events[0].address", "not an interface of client",
         edit=lambda d: d["traffic"].update(events=[{"at": "1s", "action": "endpoint_flags", "node": "client", "address": "server:eth1", "flags": "backup"}])),
    Case("exp-event-endpoint-foreign-ip", E, "an endpoint change on an address the node does not have", "traffic.events[0].address", "not an address of client",
         edit=lambda d: d["traffic"].update(events=[{"at": "1s", "action": "endpoint_flags", "node": "client", "address": "192.0.2.1", "flags": "backup"}])),
    Case("exp-event-flags-unknown", E, "endpoint_flags with a flag it cannot set", "traffic.events[0].endpoint_flags.flags", "backup",
         edit=lambda d: d["traffic"].update(events=[{"at": "1s", "action": "endpoint_flags", "node": "client", "address": "client:eth2", "flags": "signal"}])),
    Case("exp-event-flow-nothing", E, "flow_start of a flow that does not exist", "traffic.events[0].flow", "no flow",
         edit=lambda d: d["traffic"].update(events=[{"at": "1s", "action": "flow_start", "flow": "ghost"}])),
    Case("exp-event-start-measured", E, "flow_start of the measured flow (the timeline's zero)", "traffic.events[0].flow", "measured flow",
         edit=lambda d: d["traffic"].update(events=[{"at": "1s", "action": "flow_start", "flow": "main"}])),
    Case("exp-controller-unknown", E, "a controller module that does not exist", "controllers[0].name", "no controller",
         edit=lambda d: d.update(controllers=[{"name": "ghost", "node": "client"}])),
    Case("exp-controller-bad-param", E, "a controller parameter its own model refuses", "controllers[0].params.max_ratio", "less than or equal",
         edit=lambda d: d.update(controllers=[{"name": "backup_slowest", "node": "client", "params": {"max_ratio": 3}}])),
    Case("exp-controller-node-nothing", E, "a controller on a node that does not exist", "controllers[0].node", "no such node",
         edit=lambda d: d.update(controllers=[{"name": "backup_slowest", "node": "ghost"}])),
    Case("exp-controller-dt-reprobe", E, "a dynamic-threshold re-probe period no controller step can keep", "controllers[0].params.reprobe_every", "between 10 ms",
         edit=lambda d: d.update(controllers=[{"name": "dynamic_threshold_ext", "node": "client", "params": {"reprobe_every": "1ms"}}])),
    Case("exp-probes-unknown", E, "a probe that does not exist", "probes.cwnd", "unknown field",
         edit=lambda d: d.update(probes={"cwnd": True})),
    Case("exp-probes-zero-interval", E, "an ss interval of zero", "probes.ss_interval", "positive",
         edit=lambda d: d.update(probes={"ss_interval": "0s"})),
    Case("exp-capture-nothing", E, "a capture on an interface that does not exist", "capture[1].point", "not an endpoint",
         edit=lambda d: d["capture"][1].update(point="ghost:eth1")),
    Case("exp-capture-duplicate", E, "the same capture point twice", "capture[1].point", "already captured",
         edit=lambda d: d["capture"][1].update(point="client:eth1")),
    Case("exp-capture-none", E, "no capture point (the schema's default): MPTCP could not be proven", "capture",
         "no capture point", edit=lambda d: d.pop("capture") and None),
    Case("exp-capture-none-in-scenario", E, "a scenario whose override empties the capture", "scenarios[0] (tcp-a): capture",
         "no capture point", edit=sc(0, override={"capture": []})),
    Case("exp-path-label-shell", E, "a path label with shell metacharacters", "paths", "pattern",
         edit=lambda d: d["paths"].update({"A;B": "client:eth1"})),
    Case("exp-path-duplicate", E, "two labels for one path", "paths.B", "already path A",
         edit=lambda d: d["paths"].update(B="client:eth1")),
    Case("exp-mptcp-endpoint-other-node", E, "a client endpoint on the server", "nodes.client.mptcp.endpoints[0].address",
         "not an interface of client", edit=lambda d: d["nodes"]["client"]["mptcp"]["endpoints"][0].update(address="server:eth1")),
    Case("exp-mptcp-endpoint-dup-id", E, "two endpoints with one id", "nodes.client.mptcp.endpoints[1].id", "already used",
         edit=lambda d: d["nodes"]["client"]["mptcp"].update(endpoints=[{"address": "client:eth1", "flags": ["subflow"], "id": 2},
                                                                        {"address": "client:eth2", "flags": ["subflow"], "id": 2}])),
    Case("exp-mptcp-flag-unknown", E, "an endpoint flag ip mptcp does not have", "nodes.client.mptcp.endpoints[0].flags[0]",
         "must be", edit=lambda d: d["nodes"]["client"]["mptcp"]["endpoints"][0].update(flags=["subflows"])),
    Case("exp-mptcp-endpoint-foreign-ip", E, "an endpoint address the node does not have",
         "nodes.client.mptcp.endpoints[0].address", "not an address of client",
         edit=lambda d: d["nodes"]["client"]["mptcp"]["endpoints"][0].update(address="192.0.2.7")),
    Case("exp-scheduler-shell", E, "a command in the scheduler's name", "nodes.client.mptcp.scheduler", "pattern",
         edit=lambda d: d["nodes"]["client"]["mptcp"].update(scheduler="default && reboot")),
    # ------------------------------------------------------------------ experiment.yml: what tc would refuse
    Case("exp-rate-100tbit", E, "the issue's 100tbit: tc says 'illegal value for burst'", "links.client:eth1.rate",
         "tbf bucket", edit=link("client:eth1", rate="100tbit")),
    Case("exp-rate-too-slow", E, "a rate at which tc cannot pass the bucket of two 9000-byte frames",
         "links.client:eth1.rate", "too slow for tbf", edit=link("client:eth1", rate="500bit")),
    Case("exp-queue-too-big", E, "a queue larger than tbf's 32-bit limit", "links.client:eth1.queue", "tbf accepts",
         edit=link("client:eth1", queue="10GB")),
    Case("exp-queue-time-no-rate", E, "a queue in time on a link without a rate", "links.rb:eth2.queue", "needs the link's rate",
         edit=link("rb:eth2", queue="80ms")),
    # ------------------------------------------------------------------ experiment.yml: addressing
    Case("exp-addr-overlap", E, "an explicit subnet that overlaps one taken from the pool", "addressing.addresses.client:eth1",
         "overlaps", edit=lambda d: d.update(addressing={"addresses": {"client:eth1": "10.0.2.1/24", "ra:eth1": "10.0.2.2/24"}})),
    Case("exp-addr-same-ip", E, "both ends of a link with one address", "addressing.addresses.ra:eth1", "also",
         edit=lambda d: d.update(addressing={"addresses": {"client:eth1": "10.9.0.2/24", "ra:eth1": "10.9.0.2/24"}})),
    Case("exp-addr-broadcast", E, "the subnet's broadcast address on an interface", "addressing.addresses.ra:eth1", "broadcast",
         edit=lambda d: d.update(addressing={"addresses": {"client:eth1": "10.9.0.2/24", "ra:eth1": "10.9.0.255/24"}})),
    Case("exp-addr-one-end", E, "an address on one end of a link only", "addressing.addresses.ra:eth1", "both ends",
         edit=lambda d: d.update(addressing={"addresses": {"client:eth1": "10.9.0.2/24"}})),
    Case("exp-addr-pool-small", E, "a pool too small for the links", "addressing.pool", "too few",
         edit=lambda d: d.update(addressing={"pool": "10.0.0.0/28", "prefixlen": 30})),
    # ------------------------------------------------------------------ experiment.yml: scenarios
    Case("exp-override-typo", E, "a misspelt key in a scenario's override", "scenarios[0] (tcp-a): trafic", "unknown field",
         edit=sc(0, override={"trafic": {"flows": {"main": {"mptcp": False}}}})),
    Case("exp-override-nested-typo", E, "a misspelt link field in an override", "scenarios[0] (tcp-a): links.client:eth1.rte",
         "unknown field", edit=sc(0, override={"links": {"client:eth1": {"rte": "10mbit"}}})),
    Case("exp-override-bad-rate", E, "an override rate tbf cannot take", "links.client:eth1.rate", "scenario tcp-a",
         edit=sc(0, override={"links": {"client:eth1": {"rate": "100tbit"}}})),
    Case("exp-sweep-unknown-field", E, "a sweep that sets a field links do not have",
         "scenarios[1] (mptcp-10mbit): links.client:eth1.rtae", "unknown field",
         edit=sc(1, sweep=[{"path": ["links", "client:eth1", "rtae"], "values": ["10mbit"]}])),
    Case("exp-sweep-bad-path", E, "a sweep through a node that does not exist", "scenarios[1].sweep.path", "does not lead",
         edit=sc(1, sweep=[{"path": ["nodes", "ghost", "sysctls", "x"], "values": [1]}])),
    Case("exp-sweep-bad-value", E, "a sweep value that is not a rate", "scenarios[1] (mptcp-fast): links.client:eth1.rate",
         "rate", edit=sc(1, sweep=[{"path": ["links", "client:eth1", "rate"], "values": ["fast"]}])),
    Case("exp-sweep-explosion", E, "four sweeps of 40 values: 2.5 million scenarios", "scenarios[1].sweep", "at most",
         edit=sc(1, sweep=[{"path": ["repetitions"], "values": list(range(1, 41))} for _ in range(4)])),
    Case("exp-sweep-labels-count", E, "fewer labels than values", "scenarios[1].sweep[0]", "labels",
         edit=sc(1, sweep=[{"path": ["repetitions"], "values": [1, 2], "labels": ["one"]}])),
    Case("exp-scenario-dup-name", E, "two scenarios with one name", "scenarios", "duplicate scenario",
         edit=sc(1, name="tcp-a", sweep=[])),
    Case("exp-scenario-name-shell", E, "a scenario name with shell metacharacters", "scenarios[0].name", "pattern",
         edit=sc(0, name="tcp;reboot")),
    Case("exp-duplicate-key", E, "two 'client' entries under nodes", "line", "duplicate key",
         text=lambda s: s.replace("  ra: {role: router}", "  client: {role: router}\n  ra: {role: router}")),
    Case("exp-anchors", E, "anchors to share link settings", "line", "anchors",
         text=lambda s: s.replace("client:eth1: {rate: 100mbit}", "client:eth1: &fast {rate: 100mbit}").replace(
             "client:eth2: {rate: 100mbit, queue: 80ms}", "client:eth2: *fast")),
    # ------------------------------------------------------------------ published.yml
    Case("pub-unknown-scenario", P, "a value of a scenario the lab does not have", "values[0].scenario", "no scenario",
         edit=lambda d: d["values"][0].update(scenario="tcp-b")),
    Case("pub-duplicate-id", P, "two values with one id", "values[1].id", "duplicate id",
         edit=lambda d: d["values"].append(dict(d["values"][0]))),
    Case("pub-bad-metric", P, "a metric the report does not compute", "values[0].metric", "unknown metric 'latency'",
         edit=lambda d: d["values"][0].update(metric="latency")),
    Case("pub-unknown-field", P, "a misspelt field", "findings[0].statment", "unknown field",
         edit=lambda d: d["findings"][0].update(statment="x")),
    Case("pub-missing-source", P, "no source", "source", "required",
         edit=lambda d: d.__delitem__("source")),
    Case("pub-bad-op", P, "a comparison that does not exist", "findings[0].expect.op", "must be",
         edit=lambda d: d["findings"][0]["expect"].update(op="=>")),
    Case("pub-alias", P, "an alias", "line", "anchors",
         text=lambda s: s.replace("findings:\n  - id: two-subflows", "findings:\n  - &f\n    id: two-subflows") + "  - *f\n"),
    # ------------------------------------------------------------------ what only the host can answer
    Case("exp-middlebox-isn-offset-zero", E, "an ISN rewriter adding nothing", "nodes.ra.middlebox[0]", "greater than",
         edit=node("ra", middlebox=[{"kind": "rewrite-isn", "offset": 0}])),
    Case("exp-middlebox-two-rewriters", E, "two rewriting boxes on one router (the second would never see a packet)",
         "nodes.ra", "at most one rewriting box",
         edit=node("ra", middlebox=[{"kind": "rewrite-isn"}, {"kind": "modify-payload", "every": 10}])),
    Case("host-cc-missing", E, "a congestion control this kernel does not have", "traffic.flows.main.cc",
         "not in this kernel", edit=flow(cc="nosuchcc"), stage="preflight"),
    Case("host-sysctl-missing", E, "a sysctl that does not exist", "nodes.client.sysctls.net.ipv4.tcp_no_such_knob",
         "no sysctl", edit=csys("net.ipv4.tcp_no_such_knob", 1), stage="preflight"),
    Case("host-sysctl-not-in-netns", E, "a sysctl of the host's namespace only", "sysctls.net.core.default_qdisc",
         "no sysctl", edit=lambda d: d["sysctls"].update({"net.core.default_qdisc": "pfifo_fast"}), stage="preflight"),
    Case("host-scheduler-missing", E, "an MPTCP scheduler this kernel does not have", "nodes.client.mptcp.scheduler",
         "not in this kernel", edit=lambda d: d["nodes"]["client"]["mptcp"].update(scheduler="nosuchsched"), stage="preflight"),
    Case("host-sysctl-in-sweep", E, "a sweep that sets a sysctl that does not exist",
         "nodes.client.sysctls.net.ipv4.tcp_no_such_knob", "scenario mptcp-0", stage="preflight",
         edit=sc(1, sweep=[{"path": ["nodes", "client", "sysctls", "net.ipv4.tcp_no_such_knob"], "values": [0]}])),
]


def write_case(c: Case, root: Path = HERE) -> Path:
    d = root / c.name
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    for f in (T, E, P):
        src = (BASE / f).read_text()
        if f != c.file:
            (d / f).write_text(src)
            continue
        head = f"# bad lab {c.name}: {c.why}\n"
        if c.text is not None:
            body = c.text(src)
        else:
            data = yaml.safe_load(src)
            new = c.edit(data) if c.edit else None
            body = yaml.safe_dump(new if new is not None else data, sort_keys=False, allow_unicode=True, width=120)
        (d / f).write_bytes((head + body).encode("utf-8", "surrogateescape").replace("\xff".encode(), b"\xff"))
    (d / "expect").write_text(f"stage: {c.stage}\nfile: {c.file}\nfield: {c.field}\nproblem: {c.problem}\n")
    return d


if __name__ == "__main__":
    names = [c.name for c in CASES]
    assert len(names) == len(set(names)), "duplicate case names"
    for old in HERE.iterdir():
        if old.is_dir() and not old.name.startswith("_") and old.name not in names and (old / "expect").exists():
            shutil.rmtree(old)
    for c in CASES:
        write_case(c)
    print(f"{len(CASES)} bad labs in {HERE}")
