"""``mptcplab analyze PCAP...``: the capture analysis on files made elsewhere (a student's own
Wireshark or tcpdump capture), without a lab to say what the run was meant to be.

What a lab states, this guesses from the packets, and says so in the output: the server port
is the destination port of the SYNs of the connection that carried most payload (without a
captured SYN: the lower port of that connection); the direction is the side that sent most
payload; every client address becomes a path (A, B, ... in order of first appearance),
except an address that is only another's seen beyond a NAT (nat_addresses);
MPTCP counts as requested when any SYN carried MP_CAPABLE; the MP_JOIN SYNs to other ports
(joins to an address:port the server announced) name the join ports the analysis follows too.
``--server-port``, ``--path`` and ``--direction`` override the guesses.
"""

from __future__ import annotations

import json
import string
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from mptcplab.errors import LabInputError

from . import pcapread, sides
from .analyze import analyze_packets, file_remarks, write_tables
from .connlist import list_connections
from .model import CaptureFile, FlowAnalysis, FlowSpec
from .packets import MP_CAPABLE, MP_JOIN, SYN
from .table import Table


@dataclass
class Guess:
    server_port: int
    direction: Literal["upload", "download"]
    paths: dict[str, str]
    mptcp: bool
    how: list[str]
    #: other ports MP_JOIN SYNs went to (FlowSpec.join_ports)
    join_ports: tuple[int, ...] = ()
    #: every connection in the capture (connlist.py): how many, how many of them MPTCP
    connections: int = 0
    mptcp_connections: int = 0


def nat_addresses(syns: Table) -> set[str]:
    """Client addresses that are only another address seen beyond a NAT: every SYN from them
    has the ISN of a SYN from another address that came with a higher IP TTL (nearer the
    client). ``syns``: the client SYNs (packets.py columns)."""
    isn = syns.arr("seq")
    src = syns.strings("ip_src")
    ttl = np.nan_to_num(syns.arr("ip_ttl").astype(float), nan=-1.0)
    nearest: dict[int, tuple[float, str]] = {}
    for i, a, h in zip(isn, src, ttl, strict=True):
        if not np.isnan(i) and (int(i) not in nearest or h > nearest[int(i)][0]):
            nearest[int(i)] = (float(h), str(a))
    mine: dict[str, list[bool]] = {}
    for i, a in zip(isn, src, strict=True):
        mine.setdefault(str(a), []).append(not np.isnan(i) and nearest[int(i)][1] != a)
    return {a for a, translated in mine.items() if all(translated)}


def guess_spec(pk: Table, server_port: int | None = None, paths: dict[str, str] | None = None,
               direction: str | None = None) -> Guess:
    """The FlowSpec facts a lab would give, read off the packets (see the module docstring)."""
    how: list[str] = []
    tcp = pk.take(~np.isnan(pk.arr("sport")) & np.isnan(pk.arr("icmp_type")))
    if tcp.is_empty:
        raise LabInputError("capture", "packets", "no TCP packets in the capture")
    sp, dp = tcp.arr("sport").astype(np.int64), tcp.arr("dport").astype(np.int64)
    syn = (tcp.arr("flags") & 0x12) == SYN
    if server_port is None:
        lo, hi = np.minimum(sp, dp), np.maximum(sp, dp)
        tlen = np.nan_to_num(tcp.arr("tlen"))
        # payload per port pair; of the most, the lowest pair (the first in sorted order)
        pairs, inv = np.unique(np.stack([lo, hi]), axis=1, return_inverse=True)
        best = int(np.argmax(np.bincount(inv.ravel(), weights=tlen)))
        lo_p, hi_p = int(pairs[0, best]), int(pairs[1, best])
        syn_to = dp[syn & (((sp == lo_p) & (dp == hi_p)) | ((sp == hi_p) & (dp == lo_p)))]
        server_port = int(syn_to[0]) if len(syn_to) else int(lo_p)
        how.append(f"server port {server_port}: " + ("the SYNs of the connection with most payload go to it"
                                                     if len(syn_to) else "the lower port of the connection "
                                                     "with most payload (its SYN was not captured)"))
    mpj = syn & ((tcp.arr("mp") & (1 << MP_JOIN)) != 0)
    joins = tuple(sorted({int(p) for p in dp[mpj]} - {server_port}))
    if joins:
        how.append(f"join ports {', '.join(map(str, joins))}: MP_JOIN SYNs go to them (the server announced "
                   "an address:port)")
    ports = [server_port, *joins]
    to_srv = sides.to_server(tcp, ports)
    from_srv = ~to_srv & np.isin(sp, ports)
    if direction is None:
        tl = np.nan_to_num(tcp.arr("tlen"))
        up, down = tl[to_srv].sum(), tl[from_srv].sum()
        direction = "upload" if up >= down else "download"
        how.append(f"direction {direction}: {int(up)} payload bytes to the server, {int(down)} from it")
    if paths is None:
        clients = list(dict.fromkeys(np.where(to_srv, tcp.strings("ip_src"), tcp.strings("ip_dst"))
                                     [to_srv | from_srv].tolist()))
        behind = nat_addresses(tcp.take(syn & to_srv))
        if behind:
            clients = [c for c in clients if str(c) not in behind]
            how.append(f"not paths: {', '.join(sorted(behind))}: their SYNs are the SYNs of other addresses "
                       "(the same ISNs) seen beyond a NAT")
        labels = list(string.ascii_uppercase) + [f"P{i}" for i in range(27, 1000)]
        paths = {str(c): labels[i] for i, c in enumerate(clients)}
        how.append("paths: " + ", ".join(f"{v}={k}" for k, v in paths.items()))
    mp = tcp.arr("mp")
    mptcp = bool((syn & to_srv & ((mp & (1 << MP_CAPABLE)) != 0)).any())
    # no SYN to the server port at all: the capture starts mid-connection; MPTCP options on
    # its packets show MPTCP in use
    in_use = not mptcp and not (syn & to_srv).any() and bool((mp[to_srv | from_srv] != 0).any())
    # only joins: the initial subflow left by an interface this capture did not see
    joined = not mptcp and not in_use and bool((mpj & to_srv).any())
    if mptcp:
        how.append("MPTCP requested (a SYN carried MP_CAPABLE)")
    elif in_use:
        how.append("MPTCP in use, handshake not captured (MPTCP options on the packets, no SYN)")
    elif joined:
        how.append("MPTCP in use, its MP_CAPABLE handshake not captured (MP_JOIN SYNs only: the initial "
                   "subflow used an interface this capture did not see)")
        in_use = True
    else:
        how.append("MPTCP not requested (no SYN carried MP_CAPABLE)")
    mptcp = mptcp or in_use
    return Guess(server_port, "upload" if direction == "upload" else "download", paths, mptcp, how, joins)


def analyze_files(files: Sequence[Path], out: Path, server_port: int | None = None,
                  paths: dict[str, str] | None = None, direction: str | None = None,
                  same_clock: bool = False, packets: bool = False) -> tuple[FlowAnalysis, Guess]:
    """Analyze ``files`` (one capture point each, named by the file) into ``out``: summary.json,
    subflows.csv, the tables of write_tables (tcp_seq.csv included), capture_connections.csv
    (every connection in the files, connlist.py). The figures are drawn above the analysis
    (results/figures.capture_figures, called by ``mptcplab analyze --figures``).
    ``same_clock``: the user says the files share one clock (one machine), so one-way delays
    between them mean something; files from elsewhere cannot show it, so it is never guessed.
    ``packets``: also packets.csv, the packet table itself (packets.py: one row per packet and
    capture point, one column per decoded field), for one's own analysis."""
    caps = [CaptureFile(Path(f), Path(f).stem) for f in files]
    pk = pcapread.extract(caps)
    try:
        g = guess_spec(pk, server_port, paths, direction)
    except LabInputError as e:          # say what the reader found wrong with the files too
        notes = pk.warnings
        if not notes:
            raise
        raise LabInputError("capture", "packets", f"{e.problem} ({'; '.join(notes)})") from e
    servers = pk.strings("ip_dst")[sides.to_server(pk, [g.server_port]) & (pk.arr("dport") == g.server_port)]
    spec = FlowSpec(server_ip=str(servers[0]) if len(servers) else "", server_port=g.server_port,
                    paths=g.paths, expected_paths=tuple(g.paths.values()) if g.mptcp else tuple(g.paths.values())[:1],
                    mptcp=g.mptcp, direction=g.direction, same_clock=same_clock, join_ports=g.join_ports,
                    foreign=True)
    fa = analyze_packets(pk, [c.point for c in caps], spec, tcp_seq=True)
    fa.warnings = file_remarks(pk) + fa.warnings
    out.mkdir(parents=True, exist_ok=True)
    write_tables(fa, out)
    listing = list_connections(pk, [c.point for c in caps])
    listing.to_csv(out / "capture_connections.csv")
    if packets:
        pk.to_csv(out / "packets.csv")
    conns = listing.arr("connection")
    g.connections = len(set(conns.tolist()))
    g.mptcp_connections = len(set(conns[listing.arr("mptcp").astype(bool)].tolist()))
    (out / "summary.json").write_text(json.dumps({"files": [str(f) for f in files], "guessed": g.how,
                                                  "capture_connections": {"connections": g.connections,
                                                                          "mptcp": g.mptcp_connections},
                                                  **fa.to_dict()}, indent=2, default=str))
    return fa, g


def version_text(v: int | None) -> str:
    """The MPTCP version as the summary says it."""
    if v is None:
        return "version not seen"
    return {0: "v0 (RFC 6824)", 1: "v1 (RFC 8684)"}.get(v, f"version {v}")


def rtt_text(median_ms: float | None, kind: str | None) -> str:
    """A subflow's RTT as the summary gives it, named for what it measures (depth.RTT_KINDS):
    at the data receiver it is that end's ACK delay and never called RTT."""
    if median_ms is None:
        return "no rtt"
    if kind == "ack_delay":
        return f"ACK delay median {median_ms} ms (capture at the data receiver: not the path RTT)"
    if kind == "partial":
        return f"rtt median {median_ms} ms (capture point to receiver only, not the whole path)"
    if kind == "path":
        return f"path rtt median {median_ms} ms"
    return f"rtt median {median_ms} ms (capture end unknown: path RTT only if taken at the sender)"


def describe(fa: FlowAnalysis, g: Guess) -> list[str]:
    """The terminal summary of ``mptcplab analyze``."""
    lines = [f"guessed: {h}" for h in g.how]
    lines.append(f"{fa.packets} packets, {fa.connections} connection(s) to port {g.server_port}; "
                 f"data connection {fa.data_connection}")
    if g.connections:
        lines.append(f"{g.connections} connection(s) in the capture, {g.mptcp_connections} of them MPTCP: "
                     "capture_connections.csv")
    lines.append(f"MPTCP {version_text(fa.mptcp_version)} negotiated={fa.mptcp_negotiated} "
                 f"fallback={fa.fallback} verified={fa.verified}; "
                 f"MPTCP-level retransmissions {fa.mptcp_retransmissions} ({fa.mptcp_retrans_bytes} bytes); "
                 f"DSS checksum {fa.dss_checksum}")
    for s in fa.subflows:
        rtt = rtt_text(s.rtt_median_ms, s.rtt_kind)
        lines.append(f"  path {s.path} {s.name} -> {s.dst}:{s.dport} {s.kind}: {s.bytes} bytes, share "
                     f"{s.share:.2f}, tcp retrans {s.retransmissions}, mptcp retrans {s.mptcp_retransmissions}, {rtt}")
    h = fa.hol_connection
    if h.get("hol_segments"):
        lines.append(f"receiver ({', '.join(sorted({str(s.hol_point) for s in fa.subflows if s.hol_point}))}): "
                     f"{h['hol_segments']} data segments, {100 * (h['ooo_share'] or 0):.1f}% of bytes out of order, "
                     f"head-of-line delay p50 {h['hol_p50_ms']} p95 {h['hol_p95_ms']} max {h['hol_max_ms']} ms"
                     + (f", {h['hol_never']} never readable" if h["hol_never"] else "")
                     # measured at a point the handshake could not place (delivery.receiver_figures)
                     + (" (capture end unknown: assumes a receiver-side capture)" if fa.hol_assumed else ""))
    elif fa.hol_unavailable:        # withheld (delivery.receiver_figures): the reason, never numbers
        lines.append(f"receiver-side figures: {fa.hol_unavailable}")
    for s in fa.subflows:
        if s.owd_samples:
            lines.append(f"  one-way delay {s.name} {s.owd_points}: median {s.owd_median_ms} ms, "
                         f"p95 {s.owd_p95_ms} ms ({s.owd_samples} segments)")
    if fa.owd_unavailable and fa.mptcp_negotiated:
        lines.append(f"one-way delay not available: {fa.owd_unavailable}")
    for e in fa.mptcp_events.rows():
        lines.append(f"  t={float(e['t']):.3f} {e['event']} on {e['subflow']} {e['detail']}")  # type: ignore[arg-type]
    lines += [f"  {d}" for d in fa.diagnostics]
    lines += [f"warning: {w}" for w in fa.warnings]
    return lines
