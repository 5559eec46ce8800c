"""Warnings `mptcplab validate` gives about subflows that cannot form: a client
endpoint whose own path has no route to the address its subflow would join, or whose
address is of the other family (IPv4/IPv6) than the one it would join.

Not an error: that is how such a network behaves, and a lab may show it on purpose.
The warning says what would work instead.
"""

from __future__ import annotations

from ipaddress import ip_address

from ..emulation.linkmodel import Endpoint
from ..values.fields import is_endpoint_ref
from .loader import EXPERIMENT
from .model import Lab
from .network import Network, build_network, path_reaches, wire_address


def _endpoint_of(net: Network, node: str, ref: str) -> Endpoint | None:
    if is_endpoint_ref(ref):
        return Endpoint.parse(ref)
    ip = wire_address(ip_address(ref))
    for ep, link in net.interfaces(node):
        if any(a.ip == ip for a in link.addrs(ep)):
            return ep
    return None


def join_warnings(lab: Lab) -> list[str]:
    """One line per distinct problem, naming the file, the field and the scenarios."""
    file = str(lab.path / EXPERIMENT)
    found: dict[tuple[str, str], list[str]] = {}
    for sc in lab.scenarios:
        body = sc.body
        net = build_network(lab.topology, body, file)
        for fname, flow in body.traffic.flows.items():
            if not flow.mptcp:
                continue
            # as on the wire: an IPv4-mapped address (::ffff:10.0.1.1) connects over IPv4
            dst = wire_address(net.address(flow.server_address))
            server = body.nodes[flow.server].mptcp
            signals = [wire_address(net.address(e.address))
                       for e in (server.endpoints if server else []) if "signal" in e.flags]
            client = body.nodes[flow.client].mptcp
            items: list[tuple[str, str]] = []
            if flow.bind:
                items.append((f"traffic.flows.{fname}.bind", flow.bind))
            for j, e in enumerate(client.endpoints if client else []):
                if "subflow" in e.flags or "fullmesh" in e.flags:
                    items.append((f"nodes.{flow.client}.mptcp.endpoints[{j}].address", e.address))
            for fld, ref in items:
                ep = _endpoint_of(net, flow.client, ref)
                src = wire_address(net.address(ref))
                if fld.endswith(".bind") and flow.bind_follows_family \
                        and dst.version in {a.version for a in net.addresses(ref)}:
                    src = net.address(ref, dst.version)
                if ep is not None and src.version != dst.version:
                    # the kernel pairs addresses of one family only (mptcp_pm_addr_families_match)
                    if fld.endswith(".address") and any(s.version == src.version and path_reaches(net, ep, s)
                                                        for s in signals):
                        continue  # it joins an announced address of its own family
                    what = "the flow cannot connect from it" if fld.endswith(".bind") else "no subflow joins from it"
                    problem = (f"{ref} is IPv{src.version} ({src}) and {flow.server_address} IPv{dst.version}: {what}"
                               f"; name the interface's IPv{dst.version} address, or announce an IPv{src.version} "
                               "server address (signal)")
                    found.setdefault((fld, problem), []).append(sc.name)
                    continue
                if ep is None or path_reaches(net, ep, dst):
                    continue
                if fld.endswith(".address") and any(path_reaches(net, ep, s) for s in signals):
                    continue  # the server announces an address this path reaches
                nb = net.link_of(ep).other(ep).node
                problem = (f"{ep}'s path (next hop {nb}) has no route to {dst} ({flow.server_address}), the address "
                           f"its subflow would {'connect to' if fld.endswith('.bind') else 'join'}: announce the "
                           "server's addresses with signal endpoints, or connect the paths")
                found.setdefault((fld, problem), []).append(sc.name)
    out = []
    for (fld, problem), names in found.items():
        where = "every scenario" if len(names) == len(lab.scenarios) else "scenario " + ", ".join(names)
        out.append(f"{file}: {fld}: warning ({where}): {problem}")
    return out
