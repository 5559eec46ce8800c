"""What the lab files alone say a network cannot be: overlapping addresses, addresses
no interface owns, and link shapes no qdisc can express.

The tbf bounds are tc's and the kernel's, measured with iproute2 6.1 on kernel 6.18:
- tc parses `burst` and `limit` as 32-bit byte counts ("tbf: illegal value for
  "burst": "12500000000"" for 100tbit, whose 1 ms bucket is 12.5 GB);
- tc hands the kernel the bucket as a time, burst / rate, in 32-bit scheduler ticks
  (15.625 per microsecond: /proc/net/psched 000003e8 00000040): a bucket longer than
  about 274.9 s wraps silently, and tc installs a different bucket than asked
  (measured: 18028 bytes at 528bit is kept, at 520bit tc installs "burst 160b").
The parameters checked are the ones the emulation installs (emulation/linkmodel.py
`burst_bytes`, `queue_bytes`, as used by emulation/tc.py `tbf_params`).
"""

from __future__ import annotations

from ipaddress import ip_address

from ..emulation.linkmodel import ETH_HEADER, Endpoint, LinkShape, QueueLimit
from ..errors import LabInputError
from ..units import fmt_rate, parse_rate
from ..values.fields import is_endpoint_ref
from ..values.flowbase import FlowBase
from .events import (
    EndpointAdd,
    EndpointDelete,
    EndpointFlags,
    LinkChange,
    UpmAnnounce,
    UpmSubflowCreate,
    UpmSubflowDestroy,
)
from .network import Link, Network, Numbering, wire_address
from .schema import ExperimentBody
from .stripe import stripe_of

TC_U32_MAX = 2**32 - 1
#: the longest bucket time tc can pass: 2^32-1 ticks of 1/15.625 us
TBF_MAX_BUCKET_SECONDS = (2**32 - 1) / 15.625 / 1e6


def _rate(bps: int) -> str:
    return f"{bps / 1e12:g}tbit" if bps >= 10**12 and bps % 10**9 == 0 else fmt_rate(bps)


def _direction_field(body: ExperimentBody, link: Link, src: Endpoint, name: str) -> str:
    """The lab field a direction's ``name`` came from: links.<ep>.egress.rate when the
    direction set it, else links.<ep>.rate (egress/ingress relative to <ep>)."""
    for ep in (link.a, link.b):
        spec = body.links.get(str(ep))
        if spec is not None:
            return f"links.{ep}.{spec.field_of('egress' if src == ep else 'ingress', name)}"
    return f"links.{link.a}.{name}"


def tbf_problem(shape: LinkShape, mtu: int) -> tuple[str, str] | None:
    """(sub-field, problem) when tbf cannot shape ``shape`` at ``mtu``, else None."""
    if shape.trace is not None:
        return None  # no tbf: the delay line replays the trace (a queue as time is at its peak rate)
    if not shape.rate_bps:
        if shape.queue is not None and shape.queue.seconds is not None:
            return "queue", "a queue given as time needs the link's rate"
        return None
    rate = shape.rate_bps
    burst = shape.burst_bytes(mtu)
    limit = shape.queue_bytes(mtu)
    if burst > TC_U32_MAX:
        top = int(TC_U32_MAX * 8 / 1e-3)
        return "rate", (f"{_rate(rate)} needs a tbf bucket of {burst} bytes (1 ms at the rate), more than the "
                        f"{TC_U32_MAX} tc accepts: at most {fmt_rate(top - top % 1_000_000_000)} (34.3tbit)")
    if burst * 8 / rate > TBF_MAX_BUCKET_SECONDS:
        frames = 2 * (mtu + ETH_HEADER)
        low = int(frames * 8 / TBF_MAX_BUCKET_SECONDS) + 1
        return "rate", (f"{fmt_rate(rate)} is too slow for tbf at MTU {mtu}: a bucket of two full frames ({frames} "
                        f"bytes) lasts {burst * 8 / rate:.0f} s, longer than the {TBF_MAX_BUCKET_SECONDS:.0f} s tc can "
                        f"pass (its tick count wraps and it installs another bucket); the lowest rate is {low}bit")
    if limit > TC_U32_MAX:
        return "queue", f"a queue of {limit} bytes is more than the {TC_U32_MAX} tbf accepts"
    return None


def check_network(net: Network, body: ExperimentBody, file: str) -> None:
    """Raise LabInputError for the first problem the built network shows."""
    _check_addresses(net, body, file)
    for link in net.links:
        for dl in link.directions():
            bad = tbf_problem(dl.shape, link.mtu)
            if bad:
                raise LabInputError(file, _direction_field(body, link, dl.src, bad[0]), bad[1])
    for k, ev in enumerate(body.traffic.events):
        if isinstance(ev, LinkChange) and ev.switches_trace:
            link, end = net.link_of(ev.link), Endpoint.parse(ev.link)
            for dl in link.directions():
                if (ev.direction == "both" or dl.src == end) and dl.shape.trace is None:
                    raise LabInputError(file, f"traffic.events[{k}].{'trace' if ev.trace else 'trace_offset'}",
                                        f"{dl.src}->{dl.dst} replays no trace from the start: only a trace "
                                        "direction can switch traces (give it a trace, or direction: one)")
        if isinstance(ev, LinkChange) and (ev.rate is not None or ev.queue is not None):
            link = net.link_of(ev.link)
            shape = link.shape_from(Endpoint.parse(ev.link))
            if shape.trace is not None:
                raise LabInputError(file, f"traffic.events[{k}].{'rate' if ev.rate is not None else 'queue'}",
                                    f"{ev.link}'s link replays trace {shape.trace.name}: its capacity and queue "
                                    "cannot change at run time")
            rate = parse_rate(ev.rate) if ev.rate is not None else shape.rate_bps
            if rate is None:
                raise LabInputError(file, f"traffic.events[{k}].queue", "a queue limit needs a rate on the link")
            queue = QueueLimit.parse(ev.queue) if ev.queue is not None else shape.queue
            bad = tbf_problem(LinkShape(rate, queue=queue), link.mtu)
            if bad:
                raise LabInputError(file, f"traffic.events[{k}].{bad[0]}", bad[1])
    for fname, flow in body.traffic.flows.items():
        if not is_endpoint_ref(flow.server_address) and not net.owns(flow.server, flow.server_address):
            raise LabInputError(file, f"traffic.flows.{fname}.server_address",
                                _not_of(flow.server_address, flow.server))
        _check_server_addresses(net, flow, f"traffic.flows.{fname}", file)
    for name, spec in body.nodes.items():
        for j, e in enumerate(spec.mptcp.endpoints if spec.mptcp else []):
            if not is_endpoint_ref(e.address) and not net.owns(name, e.address):
                raise LabInputError(file, f"nodes.{name}.mptcp.endpoints[{j}].address", _not_of(e.address, name))
    for name in body.nodes:
        stripe_of(net, body, name, file)  # a leg that cannot reach the peer address
    for k, ev in enumerate(body.traffic.events):
        if isinstance(ev, EndpointAdd | EndpointFlags | EndpointDelete) and ev.address is not None \
                and not is_endpoint_ref(ev.address) and not net.owns(ev.node, ev.address):
            raise LabInputError(file, f"traffic.events[{k}].address", _not_of(ev.address, ev.node))
        for field, ref, owner in upm_addresses(body, ev):
            if not is_endpoint_ref(ref) and not net.owns(owner, ref):
                raise LabInputError(file, f"traffic.events[{k}].{field}", _not_of(ref, owner))


def _not_of(literal: str, node: str) -> str:
    """The problem of an address literal ``node`` does not own (an IPv4-mapped one: its IPv4
    address is not ``node``'s)."""
    mapped = wire_address(ip_address(literal))
    if str(mapped) != literal and mapped.version == 4:
        return f"{literal} is not an address of {node}: it maps {mapped}, which {node} does not have"
    return f"{literal} is not an address of {node}"


def _check_server_addresses(net: Network, flow: FlowBase, where: str, file: str) -> None:
    """A kind's other addresses of the server (FlowBase.server_addresses: the transfer's
    server_bind): each one of the server's, of the family the client connects with (a socket
    bound to an address of one family takes no connection of the other)."""
    version = net.address(flow.server_address).version
    for field in flow.server_addresses:
        ref = getattr(flow, field)
        if ref is None:
            continue
        if is_endpoint_ref(ref):
            if version not in {a.version for a in net.addresses(ref)}:
                raise LabInputError(file, f"{where}.{field}",
                                    f"{ref} has no IPv{version} address (server_address is IPv{version})")
        elif not net.owns(flow.server, ref):
            raise LabInputError(file, f"{where}.{field}", _not_of(ref, flow.server))
        elif ip_address(ref).version != version:
            raise LabInputError(file, f"{where}.{field}",
                                f"{ref} is IPv{ip_address(ref).version}, server_address is IPv{version}")


def upm_addresses(body: ExperimentBody, ev: object) -> list[tuple[str, str, str]]:
    """(field, reference, node it must belong to) of a userspace path-manager event: its own
    addresses are ``node``'s, ``remote`` is the flow's other host's."""
    if isinstance(ev, UpmAnnounce):
        return [("address", ev.address, ev.node)]
    if isinstance(ev, UpmSubflowCreate | UpmSubflowDestroy):
        flow = body.traffic.flows.get(ev.flow)
        if flow is None:
            return []
        peer = flow.server if ev.node == flow.client else flow.client
        return [("local", ev.local, ev.node), ("remote", ev.remote, peer)]
    return []


def _check_addresses(net: Network, body: ExperimentBody, file: str) -> None:
    """Each family on its own: IPv4's fields are addressing.pool/addresses, IPv6's pool6/addresses6."""
    for version in (4, 6):
        _check_family(net, body, file, version)


def _check_family(net: Network, body: ExperimentBody, file: str, version: int) -> None:
    v6 = version == 6
    explicit = body.addressing.addresses6 if v6 else body.addressing.addresses
    addresses = "addressing.addresses6" if v6 else "addressing.addresses"
    pool = "addressing.pool6" if v6 else "addressing.pool"

    def field(link: Link) -> str:
        for ep in (link.a, link.b):
            if str(ep) in explicit:
                return f"{addresses}.{ep}"
        return pool

    numbered: list[tuple[Link, Numbering]] = [(lk, n) for lk in net.links if (n := lk.numbering(version))]
    for link, num in numbered:
        for ep, ip in ((link.a, num.addr_a), (link.b, num.addr_b)):
            # IPv6 has no broadcast address; its subnet's first (the subnet-router anycast) is refused too
            special = (ip.network.network_address,) if v6 else (ip.network.network_address,
                                                                  ip.network.broadcast_address)
            if ip.network.prefixlen < ip.max_prefixlen - 1 and ip.ip in special:
                what = "network (subnet-router anycast)" if v6 else "network or broadcast"
                raise LabInputError(file, f"{addresses}.{ep}", f"{ip} is the subnet's {what} address")
        if num.addr_a.ip == num.addr_b.ip:
            raise LabInputError(file, f"{addresses}.{link.b}", f"{num.addr_b.ip} is also {link.a}'s address")
    for i, (a, na) in enumerate(numbered):
        for b, nb in numbered[i + 1:]:
            if na.subnet.overlaps(nb.subnet):
                later, other = ((b, nb), (a, na)) if field(b) != pool or field(a) == pool else ((a, na), (b, nb))
                raise LabInputError(file, field(later[0]), f"subnet {later[1].subnet} of link {later[0].name} "
                                    f"overlaps {other[1].subnet} of link {other[0].name}")
