"""One line per problem, saying the reason the capture shows.

Hand-written rules. A subflow that silently never forms is the most common failure of MPTCP
testbeds, so for every expected path without a working subflow this names the furthest the
evidence goes: no join attempted at all, a join SYN that was never answered, answered with
an ICMP error or a RST, a SYN/ACK without MP_JOIN, or a subflow that was established but
whose data never got through (with the ICMP frag-needed count that tells PMTUD from a black
hole). Only observed facts go into a line; where a line suggests a cause it says what to check.

Each line is a ``Finding`` with a stable code (the codes are listed in docs/architecture.md,
"Verification of MPTCP"); the code names the class of problem, the message the instance.
"""

from __future__ import annotations

from . import contribution
from .flows import Subflow, option_removed
from .model import Finding, FlowSpec, SubflowResult
from .stats import is_v6, unreachable
from .table import Table

ICMP_UNREACH_CODES = {
    0: "net unreachable", 1: "host unreachable", 2: "protocol unreachable", 3: "port unreachable",
    4: "fragmentation needed", 5: "source route failed", 9: "net prohibited",
    10: "host prohibited", 13: "communication administratively prohibited",
}
#: ICMPv6 destination unreachable codes, RFC 4443 section 3.1
ICMP6_UNREACH_CODES = {
    0: "no route to destination", 1: "communication administratively prohibited",
    2: "beyond scope of source address", 3: "address unreachable", 4: "port unreachable",
    5: "source address failed ingress/egress policy", 6: "reject route to destination",
}


#: MP_TCPRST reason codes, RFC 8684 section 3.6
TCPRST_REASONS = {
    0: "unspecified error", 1: "MPTCP-specific error", 2: "lack of resources",
    3: "administratively prohibited", 4: "too much outstanding data",
    5: "unacceptable performance", 6: "middlebox interference",
}


def _reason(sf: Subflow) -> str:
    if sf.rst_reason is None:
        return ""
    text = TCPRST_REASONS.get(sf.rst_reason, "unknown")
    by = ", sent by the client" if sf.rst_reason_from == "client" else ""
    return f" (MP_TCPRST reason {sf.rst_reason}: {text}{by})"


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"


def connection_lines(spec: FlowSpec, ini: Subflow | None, negotiated: bool,
                     mp_fail_t: float | None, dss: tuple[int, int, bool], t0: float,
                     mp_fail_reset_only: bool = False, mid: bool = False) -> list[Finding]:
    """Problems of the data connection itself (its initial subflow). ``mp_fail_reset_only``:
    the MP_FAIL closed its own subflow and the others went on (analyze.mp_fail_reset_subflow).
    ``mid``: the capture starts mid-connection and its data segments carry MPTCP options
    (``negotiated`` is then True: MPTCP is in use)."""
    out: list[Finding] = []
    if ini is None:
        out.append(Finding("handshake-not-captured", "the data connection's initial handshake was not captured"))
        return out
    srv = f"{ini.sip}:{ini.sport}"
    # an unanswered initial SYN on an expected path gets its "path X:" line from path_lines
    on_expected = spec.paths.get(ini.cip) in spec.expected_paths
    if ini.syn_attempts and not ini.synack_seen and on_expected:
        return out
    if ini.syn_attempts and not ini.synack_seen:
        if ini.rst_before_synack:
            out.append(Finding("connect-failed", f"SYN from {ini.cip} to {srv} answered with RST"))
        else:
            out.append(Finding("connect-failed",
                               f"SYN from {ini.cip} to {srv} sent {_times(ini.syn_attempts)}, never answered",
                               evidence={"syn_attempts": ini.syn_attempts}))
        return out
    if not spec.mptcp:
        return out
    if ini.kind == "tcp":
        if mid:
            out.append(Finding("handshake-not-captured",
                               "MPTCP in use, handshake not captured: the capture starts mid-connection and "
                               "the data segments carry MPTCP options (not verified: the MP_CAPABLE "
                               "handshake is not in the file)"))
        elif ini.syn_attempts:
            out.append(Finding("mptcp-not-used",
                               "MPTCP requested but the SYN carried no MP_CAPABLE: the client did not use "
                               "MPTCP (check mptcpize / iperf3 -m and net.mptcp.enabled)"))
        else:
            out.append(Finding("handshake-not-captured",
                               "MPTCP requested but no MP_CAPABLE seen (the handshake was not captured)"))
    elif ini.synack_seen and not ini.synack_mp:
        out.append(Finding("mptcp-fallback", "MPTCP requested but SYN/ACK carried no MP_CAPABLE: fallback to TCP"))
    elif ini.synack_seen and ini.client_acked and not ini.third_ack_mpc:
        out.append(Finding("mptcp-fallback",
                           "MPTCP requested but the third ACK carried no MP_CAPABLE: fallback to TCP"))
    elif not ini.synack_seen:
        out.append(Finding("handshake-not-captured", "MPTCP requested but the MP_CAPABLE SYN/ACK was not captured"))
    if negotiated:
        if mp_fail_t is not None and mp_fail_reset_only:
            out.append(Finding("mp-fail-subflow-reset",
                               f"MP_FAIL seen at t={mp_fail_t - t0:.3f} s: the subflow that carried the bad data "
                               "was reset and the connection went on over the others (a DSS checksum failure "
                               "with other subflows open, RFC 8684 section 3.7)",
                               evidence={"mp_fail_t": mp_fail_t - t0}))
        elif mp_fail_t is not None:
            out.append(Finding("mptcp-fallback", f"MP_FAIL seen at t={mp_fail_t - t0:.3f} s: fallback to TCP",
                               evidence={"mp_fail_t": mp_fail_t - t0}))
        n, bare, tail = dss
        if tail:
            out.append(Finding("mptcp-fallback",
                               f"MPTCP negotiated but the data segments stopped carrying DSS "
                               f"({bare} of {n} without an MPTCP option): fallback to TCP after the handshake",
                               evidence={"data_segments": n, "without_dss": bare}))
    return out


def removal_lines(spec: FlowSpec, conn: list[Subflow]) -> list[Finding]:
    """An MPTCP option present on a handshake segment at one capture point and gone at another."""
    out: list[Finding] = []
    for sf in conn:
        p = spec.paths.get(sf.cip)
        opt = "MP_JOIN" if sf.kind == "mp_join" else "MP_CAPABLE"
        for what, with_, without in option_removed(sf):
            where = f"path {p}: " if p else ""
            out.append(Finding(
                "mptcp-option-removed",
                f"{where}the {what} of {sf.cip}:{sf.cport} carried {opt} at {', '.join(with_)} but not at "
                f"{', '.join(without)}: the MPTCP option was removed on the way (a middlebox)",
                p, {"subflow": f"{sf.cip}:{sf.cport}", "segment": what, "with": with_, "without": without}))
    return out


def dss_removed_lines(spec: FlowSpec, sf: Subflow, points: list[str],
                      counts: dict[str, tuple[int, int]]) -> list[Finding]:
    """Data segments that carry DSS where they were sent and none where they arrive
    (flows.dss_removed): a middlebox removed the option mid-connection, the receiver fell
    back to TCP and the sender did not."""
    p = spec.paths.get(sf.cip)
    where = f"path {p}: " if p else ""
    seen = ", ".join(f"{b} of {n} data segments without an MPTCP option at {pt}" for pt, (n, b) in counts.items())
    ev = {"subflow": f"{sf.cip}:{sf.cport}", "with": [sf.point], "without": points,
          "without_dss": {pt: b for pt, (_, b) in counts.items()}}
    return [
        Finding("mptcp-option-removed",
                f"{where}the data segments of {sf.cip}:{sf.cport} carry DSS at {sf.point} but not on arrival "
                f"({seen}): the MPTCP option was removed on the way, mid-connection (a middlebox)", p, ev),
        Finding("mptcp-fallback",
                "the receiver saw the data stop carrying DSS, so it took the connection for a fallback to TCP, "
                f"while the sender went on with MPTCP ({where}{sf.cip}:{sf.cport}): not MPTCP end to end", p, ev),
    ]


def _icmp_text(ev: Table) -> str:
    code = int(ev.arr("code")[0])
    v6 = bool(is_v6(ev.take([0]))[0])
    what = (ICMP6_UNREACH_CODES if v6 else ICMP_UNREACH_CODES).get(code, f"code {code}")
    return f"ICMP{'v6' if v6 else ''} destination unreachable ({what}) from {ev.arr('src')[0]}"


def _weak_line(p: str, res: SubflowResult, results: list[SubflowResult]) -> Finding:
    got = contribution.delivered(res)
    total = sum(contribution.delivered(r) for r in results)
    share = got / total if total else 0.0
    when = (f"data from t={res.first_data_t:.3f} s to t={res.last_data_t:.3f} s"
            if res.first_data_t is not None and res.last_data_t is not None else "no data times")
    adv = (f", ACKs advancing until t={res.last_ack_advance_t:.3f} s"
           if res.last_ack_advance_t is not None else "")
    return Finding(
        "weak-subflow",
        f"path {p}: subflow {res.name} established but did not contribute to the transfer: "
        f"{got} bytes acknowledged of {total} (share {share:.4f}), {when}{adv}; "
        f"{contribution.shortfall(res, results)}",
        path=p,
        evidence={"subflow": res.name, "acked_bytes": got, "bytes": res.bytes, "total_acked_bytes": total,
                  "share": share, "expected_share": res.expected_share, "first_data_t": res.first_data_t,
                  "last_data_t": res.last_data_t, "last_ack_advance_t": res.last_ack_advance_t})


def _subflow_line(p: str, sf: Subflow, res: SubflowResult, icmp: Table,
                  results: list[SubflowResult], server_ip: str) -> Finding:
    join = sf.kind == "mp_join"
    syn_name = "MP_JOIN SYN" if join else "SYN"
    mine = icmp.take(icmp.arr("subflow") == res.name) if not icmp.is_empty else icmp
    unreach = mine.take(unreachable(mine)) if not mine.is_empty else mine
    ev = {"subflow": res.name, "syn_attempts": sf.syn_attempts}
    if sf.established:
        frag = res.icmp_frag_needed
        fr = (f"{frag} ICMP frag-needed, mtu {', '.join(map(str, res.icmp_mtus)) or '?'}"
              if frag else "no ICMP frag-needed seen")
        ev = {**ev, "bytes": res.bytes, "acked_bytes": res.acked_bytes, "icmp_frag_needed": frag}
        if res.bytes == 0:
            return Finding("no-data", f"path {p}: subflow established but carried no data ({fr})", p, ev)
        if res.carried_data:
            return _weak_line(p, res, results)
        return Finding("no-data",
                       f"path {p}: subflow established but carried no data: none of its {res.bytes} bytes "
                       f"acknowledged ({res.segments} segments, {res.retransmissions} retransmitted, "
                       f"largest segment {res.max_seg}, largest packet {res.max_frame}; {fr})", p, ev)
    if sf.synack_seen and join and not sf.synack_mp:
        return Finding("join-refused",
                       f"path {p}: SYN/ACK to the MP_JOIN carried no MP_JOIN (join refused; a server that "
                       f"saw the SYN without its MP_JOIN option answers so)", p, ev)
    if sf.rst_before_synack:
        return Finding("join-rst" if join else "connect-failed",
                       f"path {p}: {'MP_JOIN' if join else 'SYN'} answered with RST{_reason(sf)}", p, ev)
    if sf.synack_seen and sf.client_acked and sf.rst_server_t is not None:
        hint = " - check the server's subflow limit (ip mptcp limits)" if join else ""
        if option_removed(sf):
            hint = " - its MPTCP option was removed on the way (see the option-removed line)"
        return Finding("join-refused" if join else "connect-failed",
                       f"path {p}: {'MP_JOIN' if join else 'connection'} refused: the server answered "
                       f"the third ACK with RST{_reason(sf)}{hint}", p, ev)
    if not unreach.is_empty:
        code = int(unreach.arr("code")[0])
        hint = ""
        if join and code in (0, 1) and sf.sip == server_ip:
            # a disjoint path: its routers know no route to the address the join targets
            hint = (f" - path {p} cannot reach {sf.sip}: announce the server's addresses "
                    f"(signal endpoints, ADD_ADDR) so the join targets an address this path reaches, "
                    f"or connect the paths")
        return Finding("join-unreachable" if join else "connect-failed",
                       f"path {p}: {_icmp_text(unreach)} for the {syn_name} "
                       f"({sf.syn_attempts} SYNs, {len(unreach)} ICMP errors){hint}", p,
                       {**ev, "icmp_code": code, "icmp_errors": len(unreach),
                        "icmp_from": str(unreach.arr("src")[0])})
    if sf.synack_seen and not sf.client_acked:
        return Finding("handshake-not-captured",
                       f"path {p}: {syn_name} answered, but no third ACK from {sf.cip} was captured", p, ev)
    if sf.syn_attempts:
        return Finding("join-blocked" if join else "connect-failed",
                       f"path {p}: {syn_name} from {sf.cip} sent {_times(sf.syn_attempts)}, never answered",
                       p, ev)
    return Finding("handshake-not-captured", f"path {p}: subflow {res.name} seen without handshake or data", p, ev)


def path_lines(spec: FlowSpec, conn: list[Subflow], results: list[SubflowResult],
               others: list[Subflow], add_addrs: list[str], icmp: Table,
               seen_ips: set[str], negotiated: bool = True,
               fallback: bool = False) -> tuple[list[Finding], set[str]]:
    """A finding for every expected path without an established subflow that contributed
    to the transfer (contribution.py; a backup path needs only an established subflow).
    Returns (findings, paths that are fine)."""
    lines: list[Finding] = []
    ok: set[str] = set()
    res_by_key = {(r.src, r.sport): r for r in results}
    for p in spec.expected_paths:
        mine = [(sf, res_by_key[(sf.cip, sf.cport)]) for sf in conn
                if spec.paths.get(sf.cip) == p and (sf.cip, sf.cport) in res_by_key]
        backup = p in spec.backup_paths
        if any(sf.established and (backup or r.contributed) for sf, r in mine):
            ok.add(p)
            continue
        if mine:
            # the most advanced attempt tells the most: established and delivering first
            sf, r = max(mine, key=lambda m: (m[0].established, contribution.delivered(m[1]),
                                             m[0].synack_seen, m[0].syn_attempts))
            lines.append(_subflow_line(p, sf, r, icmp, results, spec.server_ip))
            continue
        ips = sorted(ip for ip, lab in spec.paths.items() if lab == p)
        ip_txt = "/".join(ips) or f"an address of path {p}"
        elsewhere = [o for o in others if o.cip in ips and o.kind == "mp_join"]
        if not spec.mptcp:
            lines.append(Finding("connect-failed",
                                 f"path {p}: no TCP connection from {ip_txt} to {spec.server_ip}:{spec.server_port}",
                                 p))
        elif not negotiated:
            lines.append(Finding("no-join", f"path {p}: no subflow: MPTCP was not negotiated, so no join "
                                            f"was possible", p))
        elif fallback:
            lines.append(Finding("no-join", f"path {p}: no subflow: the connection fell back to TCP, so no "
                                            f"join was possible", p))
        elif elsewhere:
            lines.append(Finding("no-join", f"path {p}: no MP_JOIN from {ip_txt} on the data connection, though "
                                            f"another connection got one - check the subflow limits "
                                            f"(ip mptcp limits)", p))
        else:
            aa = f"ADD_ADDR seen for {', '.join(add_addrs)}" if add_addrs else "no ADD_ADDR seen"
            tail = "" if set(ips) & seen_ips else f"; no packet from {ip_txt} in any capture"
            lines.append(Finding("no-join", f"path {p}: no MP_JOIN attempted ({aa}, no join from {ip_txt}{tail}) "
                                            f"- check endpoints/limits", p))
    return lines, ok
