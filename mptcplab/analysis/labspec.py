"""What the lab says the analysis should expect of a flow: expected and backup paths, path
rates, join ports, what the configuration alone says about subflows that cannot form, and
the paths the run took out of use (from events.csv's records).

Pure functions over the derived Network (lab/network.py), and lab_facts(), which builds
them once per repetition into one frozen LabFacts (a FlowFacts per flow) that the
repetition's analysis (run/record.analyze, traffic/flowresult.py) reads: the rule that uses
them is in contribution.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from ipaddress import IPv4Network, IPv6Network, ip_address

from ..emulation.linkmodel import Endpoint
from ..lab.eventcheck import uses_userspace_pm
from ..lab.network import IPAddress, Link, MappedAddress, Network, wire_address
from ..lab.schema import ExperimentBody, Flow
from ..record.model import Event

_MAX_HOPS = 64


def _route_dev(net: Network, node: str, dst: IPAddress) -> str | None:
    """The interface a node's main table sends ``dst`` out of (longest prefix wins, among
    the routes of ``dst``'s family)."""
    best: tuple[int, str] | None = None
    for r in net.nodes[node].routes:
        if r.table is not None or r.version != dst.version:
            continue
        prefix = r.dst or (IPv4Network("0.0.0.0/0") if dst.version == 4 else IPv6Network("::/0"))
        if dst in prefix and (best is None or prefix.prefixlen > best[0]):
            best = (prefix.prefixlen, r.dev)
    return best[1] if best else None


def path_hops(net: Network, start: Endpoint, dst: IPAddress) -> list[tuple[Link, Endpoint]] | None:
    """The links a packet from ``start`` (a client interface) crosses to ``dst``, each with
    the endpoint it enters the link by: the start's own link, then each router's connected
    subnet or main-table route, in ``dst``'s family (IPv4 or IPv6). None when the walk leaves
    the network or loops (the path cannot reach ``dst``)."""
    link = net.link_of(start)
    out = [(link, start)]
    ep = link.other(start)
    for _ in range(_MAX_HOPS):
        if dst in net.node_addresses(ep.node):
            return out
        if net.nodes[ep.node].role != "router":
            return None
        ifaces = net.interfaces(ep.node)
        nxt = next(((e, lk) for e, lk in ifaces if lk.contains(dst)), None)
        if nxt is None:
            dev = _route_dev(net, ep.node, dst)
            nxt = next(((e, lk) for e, lk in ifaces if e.iface == dev), None)
        if nxt is None or any(nxt[1] is lk for lk, _ in out):
            return None
        e, link = nxt
        out.append((link, e))
        ep = link.other(e)
    return None


def path_links(net: Network, start: Endpoint, dst: IPAddress) -> list[Link] | None:
    """The links of ``path_hops``."""
    hops = path_hops(net, start, dst)
    return None if hops is None else [lk for lk, _ in hops]


def _targets(net: Network, server: str) -> list[IPAddress]:
    """The server's addresses, interface by interface, IPv4 first on each."""
    return [a.ip for e, lk in net.interfaces(server) for a in lk.addrs(e)]


def path_of_address(body: ExperimentBody, net: Network) -> dict[str, str]:
    """Every address of each path's client interface (both families on a dual-stack link) ->
    the path's label: a subflow from any of them is on that path."""
    # an IPv4 address's IPv4-mapped form too (an endpoint written ::ffff:10.0.3.2, as
    # mptcp_join.sh does): on the wire its packets are IPv4, from that address
    return {form: label for label, ep in body.paths.items() for ip in net.addresses(ep)
            for form in ((str(ip), str(MappedAddress(f"::ffff:{ip}"))) if ip.version == 4 else (str(ip),))}


def _wire(net: Network, ref: str) -> IPAddress:
    """The address a reference stands for as the capture shows it (an IPv4-mapped one: IPv4)."""
    return wire_address(net.address(ref))


def path_rates(body: ExperimentBody, net: Network, server: str,
               direction: str = "upload") -> dict[str, float]:
    """Path label -> the lowest configured rate on its links to the server (bit/s), in the
    direction the data flows (``upload``: client to server, ``download``: back), to the
    first of the server's addresses the path reaches (a multi-homed server may be
    reachable on each path by another address; IPv4 before IPv6 on a dual-stack interface);
    paths with no rate on any link, or that reach none of the server's addresses, are left out."""
    targets = _targets(net, server)
    out: dict[str, float] = {}
    for label, ep in body.paths.items():
        hops = next((hs for dst in targets if (hs := path_hops(net, Endpoint.parse(ep), dst))), None)
        shapes = [lk.shape_from(near if direction == "upload" else lk.other(near)) for lk, near in hops or []]
        rates = [sh.rate_bps for sh in shapes if sh.rate_bps]
        if rates:
            out[label] = float(min(rates))
    return out


def expected_paths(body: ExperimentBody, net: Network, flow: Flow,
                   addr_path: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Paths that should carry a subflow: the bound path, plus, for MPTCP, paths
    whose client address is a subflow/fullmesh endpoint and paths that reach an address
    the server announces (signal_paths). ``addr_path``: path_of_address, when the caller
    has it already."""
    # endpoints name a path by its interface or by one of its addresses (IPv6 on a dual-stack link)
    by_ep = {**{ep: label for label, ep in body.paths.items()},
             **(path_of_address(body, net) if addr_path is None else addr_path)}
    out = []
    if flow.bind and flow.bind in by_ep:
        out.append(by_ep[flow.bind])
    spec = body.nodes[flow.client].mptcp
    if uses_userspace_pm(body, flow.client):
        # the userspace path manager opens no subflow of its own, for an endpoint or an
        # announced address: what its daemon (the timeline's upm_* events) creates is not
        # a promise of the configuration
        return tuple(out)
    if flow.mptcp and spec:
        for e in spec.endpoints:
            if e.address in by_ep and ({"subflow", "fullmesh"} & set(e.flags)) and by_ep[e.address] not in out:
                out.append(by_ep[e.address])
    # addresses the server announces (ADD_ADDR) draw a subflow on the path that reaches them
    out += [p for p in signal_paths(body, net, flow) if p not in out]
    return tuple(out)


def config_diagnostics(body: ExperimentBody, flow: Flow) -> list[str]:
    """What the configuration alone says about subflows that cannot form."""
    out = []
    spec = body.nodes[flow.client].mptcp
    if flow.mptcp and spec:
        n = sum(1 for e in spec.endpoints if {"subflow", "fullmesh"} & set(e.flags))
        if n > spec.limits.subflows:
            out.append(f"client limits allow {spec.limits.subflows} extra subflow(s) but {n} subflow endpoints "
                       "are configured")
        srv = body.nodes[flow.server].mptcp
        if srv is None or srv.limits.subflows < n:
            have = srv.limits.subflows if srv else "default"
            out.append(f"server subflow limit ({have}) is lower than the client's {n} subflow endpoint(s)")
    return out


def backup_paths(body: ExperimentBody, flow: Flow) -> tuple[str, ...]:
    """Paths whose client endpoint carries the MPTCP backup flag."""
    spec = body.nodes[flow.client].mptcp
    if not flow.mptcp or spec is None:
        return ()
    by_ep = {ep: label for label, ep in body.paths.items()}
    return tuple(by_ep[e.address] for e in spec.endpoints if "backup" in e.flags and e.address in by_ep)


def signal_paths(body: ExperimentBody, net: Network, flow: Flow) -> tuple[str, ...]:
    """Paths that should carry a subflow to an address the server announces (its `signal`
    endpoints, ADD_ADDR), when the client accepts announcements: for each announced address,
    the first path (in the lab's order) whose client interface reaches it. Without client
    fullmesh endpoints the kernel opens that subflow from the address routing picks for it,
    which on a lab network is the interface of the path that reaches it."""
    cli, srv = body.nodes[flow.client].mptcp, body.nodes[flow.server].mptcp
    if not flow.mptcp or cli is None or srv is None or cli.limits.add_addr_accepted < 1:
        return ()
    if uses_userspace_pm(body, flow.server) or uses_userspace_pm(body, flow.client):
        # a userspace PM server announces only what its daemon asks (upm_announce), and a
        # userspace PM client joins no announced address by itself
        return ()
    out: list[str] = []
    for e in srv.endpoints:
        if "signal" not in e.flags:
            continue
        dst = _wire(net, e.address)
        label = next((lb for lb, ep in body.paths.items() if path_links(net, Endpoint.parse(ep), dst)), None)
        if label is not None and label not in out:
            out.append(label)
    return tuple(out)


def join_ports(body: ExperimentBody, flow: Flow) -> tuple[int, ...]:
    """The server's other ports the client's joins go to: the ports of the server's
    address:port endpoints (``port:``, announced by ADD_ADDR) other than the flow's own."""
    srv = body.nodes[flow.server].mptcp
    if not flow.mptcp or srv is None:
        return ()
    return tuple(sorted({e.port for e in srv.endpoints if e.port is not None and e.port != flow.port}))


def _path_links(body: ExperimentBody, net: Network, server: str) -> dict[str, list[Link]]:
    """Path label -> the links it crosses to the first of the server's addresses it reaches."""
    targets = _targets(net, server)
    return {label: next((lks for dst in targets if (lks := path_links(net, Endpoint.parse(ep), dst))), [])
            for label, ep in body.paths.items()}


def _paths_to(body: ExperimentBody, net: Network, flow: Flow, ip: str, initial: str,
              bound: str | None, addr_path: Mapping[str, str]) -> list[str]:
    """The paths whose subflows end at the server address ``ip``: for its first address
    (``initial``) the bound path and the paths of the client's subflow endpoints (they join
    it); for another, the path whose client interface is on that address's link, else the
    first path that reaches it (as signal_paths)."""
    paths = list(body.paths.items())
    if ip == initial:
        spec = body.nodes[flow.client].mptcp
        by_ep = {**{ep: label for label, ep in paths}, **addr_path}
        subs = [by_ep[e.address] for e in (spec.endpoints if spec else [])
                if e.address in by_ep and {"subflow", "fullmesh"} & set(e.flags)]
        return sorted({*([bound] if bound else []), *subs})
    dst = ip_address(ip)
    direct = next((lb for lb, ep in paths if net.link_of(ep).contains(dst)), None)
    if direct is not None:
        return [direct]
    first = next((lb for lb, ep in paths if path_links(net, Endpoint.parse(ep), dst)), None)
    return [first] if first else []


def retired_paths(body: ExperimentBody, net: Network, flow: Flow, events: Sequence[Event],
                  addr_path: Mapping[str, str] | None = None) -> tuple[dict[str, float], dict[str, str]]:
    """Paths the run took out of use and kept out to its end, from events.csv's records (the
    timeline's and the controllers' actions that ran, results/read.read_events): path -> the
    epoch time (``epoch_s``) it went out of use, and path -> what did it. A path is out of use
    while a link it crosses is down (link_down; link_up gives it back), its client endpoint
    is deleted (endpoint_delete by its address, or by the id the lab gave it; endpoint_flush
    deletes them all; endpoint_add of its address gives it back) or its endpoint is flagged
    backup (endpoint_flags, a controller's demotion; nobackup gives it back). Removals on
    purpose by either side retire a path too: the userspace path manager's
    upm_subflow_destroy of the path's subflow (either end; upm_subflow_create from its address
    gives it back), a REMOVE_ADDR of a server address (the server's upm_remove of an id,
    endpoint_delete of a signal endpoint or of id 0, endpoint_flush: the paths whose subflows
    end at that address, ``_paths_to``; announcing it again gives them back) or of a client
    address (the client's upm_remove). A path used again later (a re-probe that stayed) is
    not retired. ``addr_path``: path_of_address, when the caller has it already."""
    links = _path_links(body, net, flow.server)
    addr_path = path_of_address(body, net) if addr_path is None else addr_path
    spec = body.nodes[flow.client].mptcp
    ids = {e.id: str(_wire(net, e.address)) for e in (spec.endpoints if spec else []) if e.id is not None}
    srv = body.nodes[flow.server].mptcp
    srv_signal = [e for e in (srv.endpoints if srv else []) if "signal" in e.flags]
    srv_ids = {e.id: str(_wire(net, e.address)) for e in srv_signal if e.id is not None}
    initial = str(_wire(net, flow.server_address))
    bound = addr_path.get(str(net.address(flow.bind))) if flow.bind else None
    #: address ids each side's userspace path manager gave an address (upm_announce,
    #: upm_subflow_create), so that a later upm_remove of the id names the address
    upm_ids: dict[str, dict[int, str]] = {flow.client: {}, flow.server: {}}
    out_since: dict[str, float] = {}
    why: dict[str, dict[str, str]] = {p: {} for p in body.paths}  # path -> reason key -> words

    def ip_of(ref: str | None) -> str | None:
        try:
            return str(_wire(net, ref)) if ref else None
        except (KeyError, ValueError):
            return None

    for e in sorted((e for e in events if e.done), key=lambda e: e.epoch_s or 0.0):
        hit: list[str] = []
        key, text, on = "", "", True
        if e.action in ("link_down", "link_up") and e.link:
            try:
                link = net.link_of(e.link)
            except (KeyError, ValueError):
                continue
            hit = [p for p, lks in links.items() if any(lk is link for lk in lks)]
            key, text, on = f"link {link.name}", f"link {e.link} down ({e.source})", e.action == "link_down"
        elif e.node == flow.client and e.action == "endpoint_flush":
            # every endpoint the lab gave the client deleted at once
            hit = sorted({addr_path[ip] for ip in ids.values() if ip in addr_path})
            key, text, on = "endpoint", f"endpoints flushed by {e.source}", True
        elif e.node == flow.client and e.action in ("endpoint_delete", "endpoint_add", "endpoint_flags"):
            if e.action == "endpoint_delete":  # by the address given, else by the id the lab gave it
                ip = ip_of(e.address) if e.address else ids.get(e.endpoint_id or 0)
            else:
                ip = ip_of(e.address)
            p = addr_path.get(ip or "")
            hit = [p] if p else []
            if e.action == "endpoint_flags":
                if e.flags not in ("backup", "nobackup"):
                    continue
                key, text, on = "backup", f"demoted (endpoint flagged backup) by {e.source}", e.flags == "backup"
            else:
                key, text, on = "endpoint", f"endpoint deleted by {e.source}", e.action == "endpoint_delete"
        elif e.node == flow.server and e.action in ("endpoint_delete", "endpoint_add", "endpoint_flush"):
            # the server's REMOVE_ADDR (a signal endpoint deleted, or id 0: its first address)
            # closes the subflows to that address; announcing it again gives them back
            if e.action == "endpoint_flush":
                gone = [ip for x in srv_signal if (ip := ip_of(x.address))]
            elif e.action == "endpoint_delete":
                gone = [ip] if (ip := ip_of(e.address) if e.address else srv_ids.get(e.endpoint_id or 0)) else []
            elif "signal" in (e.flags or "").split():
                gone = [ip] if (ip := ip_of(e.address)) else []
            else:
                continue
            hit = sorted({p for ip in set(gone) for p in _paths_to(body, net, flow, ip, initial, bound, addr_path)})
            key, text, on = "rm-addr", f"server address removed by {e.source}", e.action != "endpoint_add"
        elif e.action in ("upm_announce", "upm_subflow_create", "upm_remove", "upm_subflow_destroy") \
                and e.node in upm_ids:
            side = "server" if e.node == flow.server else "client"
            if e.action in ("upm_announce", "upm_subflow_create") and e.endpoint_id is not None \
                    and (ip := ip_of(e.address)) is not None:
                upm_ids[e.node][e.endpoint_id] = ip
            if e.action == "upm_remove":
                # a REMOVE_ADDR of the id (0: the side's first address) closes its subflows
                known = upm_ids[e.node].get(e.endpoint_id or 0)
                if side == "server":
                    ip = initial if e.endpoint_id == 0 else known
                    hit = _paths_to(body, net, flow, ip, initial, bound, addr_path) if ip else []
                else:
                    p = bound if e.endpoint_id == 0 else addr_path.get(known or "")
                    hit = [p] if p else []
                key, text, on = f"upm-rm {side}", \
                    f"address id {e.endpoint_id} removed by the {side}'s userspace PM ({e.source})", True
            elif e.action == "upm_announce":
                if side == "client":
                    continue
                hit = _paths_to(body, net, flow, ip_of(e.address) or "", initial, bound, addr_path)
                key, text, on = "upm-rm server", "", False
            else:
                # the subflow's client end: the local address on the client, the remote on the server
                ref = e.address if side == "client" else (e.target.rpartition(" -> ")[2] or None)
                p = addr_path.get(ip_of(ref) or "")
                hit = [p] if p else []
                key, text, on = "upm-sf", f"subflow destroyed by the {side}'s userspace PM ({e.source})", \
                    e.action == "upm_subflow_destroy"
        t = e.epoch_s or 0.0
        for p in hit:
            was_out = bool(why[p])
            if on:
                why[p].setdefault(key, text)
            else:
                why[p].pop(key, None)
            if why[p] and not was_out:
                out_since[p] = t
    retired = {p: t for p, t in out_since.items() if why[p]}
    return retired, {p: "; ".join(why[p].values()) for p in retired}


@dataclass(frozen=True)
class FlowFacts:
    """What the lab says of one flow, for its analysis: where its server is, which paths
    should carry a subflow (and which of them are backups), their configured rates in the
    data's direction, the server's other ports its joins go to, and what the configuration
    alone says about subflows that cannot form."""

    name: str
    flow: Flow
    #: the flow's server address (the capture is followed to it)
    server_ip: str
    expected_paths: tuple[str, ...]
    backup_paths: tuple[str, ...]
    #: path label -> the lowest configured rate on its links in the data's direction (bit/s)
    path_rates_bps: Mapping[str, float]
    join_ports: tuple[int, ...]
    #: config_diagnostics: told when an MPTCP flow is not verified
    diagnostics: tuple[str, ...]


@dataclass(frozen=True)
class LabFacts:
    """What the lab says the analysis of one repetition should expect, built once from the
    scenario's body and network (lab_facts): every client address -> its path, and each
    flow's FlowFacts. The paths the run took out of use need the repetition's events.csv:
    retired() builds them from it."""

    body: ExperimentBody
    net: Network
    #: every address of each path's client interface -> the path's label (path_of_address)
    path_of_address: Mapping[str, str]
    flows: Mapping[str, FlowFacts]

    def retired(self, name: str, events: Sequence[Event]) -> tuple[dict[str, float], dict[str, str]]:
        """retired_paths of flow ``name`` from the repetition's events."""
        return retired_paths(self.body, self.net, self.flows[name].flow, events, self.path_of_address)


def flow_facts(body: ExperimentBody, net: Network, name: str, flow: Flow,
               addr_path: Mapping[str, str]) -> FlowFacts:
    return FlowFacts(name=name, flow=flow, server_ip=str(_wire(net, flow.server_address)),
                     expected_paths=expected_paths(body, net, flow, addr_path),
                     backup_paths=backup_paths(body, flow),
                     path_rates_bps=path_rates(body, net, flow.server, flow.data_direction()),
                     join_ports=join_ports(body, flow), diagnostics=tuple(config_diagnostics(body, flow)))


def lab_facts(body: ExperimentBody, net: Network) -> LabFacts:
    """The repetition's LabFacts: path_of_address once, then each flow's facts."""
    addr_path = path_of_address(body, net)
    return LabFacts(body=body, net=net, path_of_address=addr_path,
                    flows={name: flow_facts(body, net, name, flow, addr_path)
                           for name, flow in body.traffic.flows.items()})
