"""``analyze_flow``: captures of one iperf3 run in, tables and a verdict out.

Hand-written orchestration of the modules beside it: the packet table from the native
reader (pcapread.py; tshark.py gives the same table and is the tests' oracle),
subflow/connection identification (flows.py), numbers and time series (stats.py) and the
one-line reasons (diagnose.py). See flows.py for how the data connection is picked.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import contribution, coverage, delivery, departures, depth, diagnose, tcpseq, usefulness
from .flows import (
    Subflow,
    dss_missing,
    dss_removed,
    find_subflows,
    group_connections,
    only_joins_off_port,
    orient_tcp,
    pick_data_connection,
)
from .model import (
    CAPTURE_DAMAGED,
    TOO_SMALL,
    UNKNOWN_PATH,
    CaptureFile,
    Finding,
    FlowAnalysis,
    FlowSpec,
    Remark,
    SubflowResult,
)
from .packets import PacketTable
from .pcapread import extract
from .stats import ICMP_KINDS, TIMESERIES_KINDS, icmp_for_subflows, subflow_numbers, timeseries, too_big
from .table import Table


def file_remarks(pk: Table) -> list[Remark]:
    """The reader's problems with the files (PacketTable.warnings), as coded warnings."""
    return [Remark(w, CAPTURE_DAMAGED) for w in (pk.warnings if isinstance(pk, PacketTable) else [])]


def analyze_flow(captures: Sequence[CaptureFile], spec: FlowSpec, bin_s: float = 0.1,
                 workers: int | None = None) -> FlowAnalysis:
    """Analyze the capture files taken at one or more points during one iperf3 run.

    The time origin of every time in the result is the data connection's first SYN (or its
    first captured packet when the SYN was not captured). ``workers``: files read in
    parallel, default one per CPU. ICMPv6 "packet too big" counts as ICMPv4 "fragmentation
    needed" does (stats.too_big), ICMPv6 "destination unreachable" as ICMPv4's.
    """
    t_start = time.perf_counter()
    pk = extract(captures, workers=workers)
    result = analyze_packets(pk, [c.point for c in captures], spec, bin_s)
    result.warnings = file_remarks(pk) + result.warnings
    result.analysis_seconds = time.perf_counter() - t_start
    return result


def analyze_packets(pk: Table, points: list[str], spec: FlowSpec,
                    bin_s: float = 0.1, tcp_seq: bool = False) -> FlowAnalysis:
    """The analysis on an already extracted packet table (packets.py: pcapread.extract or
    tshark.extract). ``tcp_seq``: also FlowAnalysis.tcp_seq (tcpseq.py: about a row per
    packet, so only when asked: `mptcplab analyze`, notebooks)."""
    upload = spec.direction == "upload"
    t = orient_tcp(pk, spec.server_port, spec.join_ports)
    subs = only_joins_off_port(find_subflows(t, points, upload), spec.server_port)
    conns = group_connections(subs)
    cid = pick_data_connection(conns)
    seen_ips = set(pk.cat("ip_src").unique()) | set(pk.cat("ip_dst").unique())

    if cid is None:
        none = Finding("no-connection", f"no TCP connection to port {spec.server_port} in the captures "
                                        f"({', '.join(points) or 'no capture points'})")
        return FlowAnalysis(
            mptcp_negotiated=False, fallback=spec.mptcp, verified=False, subflows=[], add_addrs=[],
            diagnostics=[none.message], findings=[none],
            timeseries=Table.empty(TIMESERIES_KINDS), icmp_events=Table.empty(ICMP_KINDS),
            packets=len(pk), analysis_seconds=0.0, connections=0,
        )

    conn = conns[cid]
    if spec.foreign:    # no lab names the paths to expect: those the data connection tried
        spec = dataclasses.replace(spec, expected_paths=tuple(dict.fromkeys(
            p for s in conn if (p := spec.paths.get(s.cip)) is not None)))
    ini = next((s for s in conn if s.kind != "mp_join"), None)
    if ini is not None and ini.syn_first_t is not None:
        t0 = ini.syn_first_t
    else:
        t0 = float(min(t.arr("t")[s.rows[s.point]].min() for s in conn))

    negotiated = bool(ini is not None and ini.kind == "mp_capable" and ini.synack_mp
                      and ini.third_ack_mpc)
    # a capture that starts mid-connection shows no handshake, but data segments carrying DSS
    # show MPTCP in use all the same: analyzed as negotiated, never verified (not seen)
    mid = (ini is not None and not negotiated and ini.syn_attempts == 0 and not ini.synack_seen
           and _carries_dss(t, ini, upload))
    # only joins (the initial subflow not in the files, e.g. one interface's capture): their
    # MP_JOIN handshake or DSS options show MPTCP in use all the same, never verified
    mid = mid or (ini is None and any(s.synack_mp or _carries_dss(t, s, upload) for s in conn))
    in_use = negotiated or mid
    mp_fail = [s.mp_fail_t for s in conn if s.mp_fail_t is not None]
    mp_fail_t = min(mp_fail) if mp_fail else None
    dss = dss_missing(t, ini, upload) if (in_use and ini is not None) else (0, 0, False)
    stripped = dss_removed(t, ini, upload, dss) if (in_use and ini is not None) else ([], {})

    paths = dict(spec.paths)
    icmp = icmp_for_subflows(pk, conn, {spec.server_port, *spec.join_ports}, paths, t0)
    numbers = {s.key: subflow_numbers(t, s, upload, t0) for s in conn}
    reset_only = mp_fail_t is not None and mp_fail_reset_subflow(conn, numbers, mp_fail_t - t0)
    fallback = (spec.mptcp and not in_use) or (
        in_use and ((mp_fail_t is not None and not reset_only) or dss[2] or bool(stripped[0])))
    total = sum(n["bytes"] for n in numbers.values())

    results: list[SubflowResult] = []
    for s in conn:
        n = numbers[s.key]
        name = f"{s.cip}:{s.cport}"
        mine = icmp.take(icmp.arr("subflow") == name) if not icmp.is_empty else icmp
        frag = mine.take(too_big(mine)) if not mine.is_empty else mine
        mtus: list[int] = []
        if not frag.is_empty:
            mtu = frag.nullable("mtu")
            for m in mtu.values[mtu.present].tolist():
                if int(m) not in mtus:
                    mtus.append(int(m))
        results.append(SubflowResult(
            path=paths.get(s.cip), src=s.cip, sport=s.cport, dst=s.sip, dport=s.sport,
            initial=s.kind != "mp_join", established=s.established,
            bytes=n["bytes"], retrans_bytes=n["retrans_bytes"], retransmissions=n["retransmissions"],
            share=(n["bytes"] / total) if total else 0.0,
            segments=n["segments"], median_seg=n["median_seg"], max_seg=n["max_seg"],
            max_frame=n["max_frame"], syn_mss=n["syn_mss"], icmp_frag_needed=len(frag),
            icmp_first_t=float(frag.arr("t").min()) if len(frag) else None, icmp_mtus=mtus,
            first_data_t=n["first_data_t"], last_data_t=n["last_data_t"],
            syn_attempts=s.syn_attempts, rst=s.rst_t is not None,
            kind=s.kind, point=s.point, acked_bytes=n["acked_bytes"], syn_answered=s.synack_seen,
            last_ack_advance_t=n["last_ack_advance_t"],
            syn_fallback_s=(None if s.syn_plain_t is None or s.syn_first_t is None
                            else round(s.syn_plain_t - s.syn_first_t, 6)),
            rst_reason=s.rst_reason, translated=dict(s.translated),
        ))
    for r in results:  # the lab's retirements, on this analysis' time axis
        if r.path in spec.retired_paths:
            r.retired_t = round(spec.retired_paths[r.path] - t0, 6)
            r.retired_by = spec.retired_why.get(r.path)
    contribution.assess(results, spec)

    deep = depth.depth(pk, t, conn, paths, upload, t0) if in_use else None
    if deep is not None:
        for r in results:
            r.__dict__.update(deep.per_subflow.get(r.name, {}))
    dl = (delivery.delivery(pk, t, conn, paths, upload, t0, deep.idsn, spec.same_clock, bin_s, spec.receiver_node,
                            coverage.uncaptured_reason(deep.dsn, conn, {r.name: r.segments for r in results}))
          if deep else None)
    if dl is not None:
        for r in results:
            r.__dict__.update(dl.per_subflow.get(r.name, {}))
    rtt_kinds = _rtt_kinds(deep.rtt_kind, conn, spec.receiver_node) if deep else {}
    for r in results:   # on the subflow too, so a lab's summary.json carries it (record Subflow)
        r.rtt_kind = rtt_kinds.get(r.name)
    reinj = (usefulness.qualify(deep.reinjections, dl.received if dl else {}, deep.origin, t0) if deep
             else Table.empty({**depth.REINJECTION_KINDS, **usefulness.KINDS}))
    if dl is not None and dl.received:
        by = reinj.arr("subflow").astype(str)[np.asarray([u is True for u in reinj.arr("useful").tolist()],
                                                          dtype=bool)]
        for r in results:
            r.mptcp_retrans_useful = int((by == r.name).sum())

    add_addrs: list[str] = []
    for s in conn:
        add_addrs += [a for a in s.add_addrs if a not in add_addrs]
    others = [s for c, ss in conns.items() if c != cid for s in ss]

    findings = diagnose.connection_lines(spec, ini, in_use, mp_fail_t, dss, t0, reset_only, mid=mid)
    findings += diagnose.removal_lines(spec, conn)
    if ini is not None and stripped[0]:
        findings += diagnose.dss_removed_lines(spec, ini, *stripped)
    plines, ok = diagnose.path_lines(spec, conn, results, others, add_addrs, icmp, seen_ips,
                                     negotiated=in_use, fallback=fallback)
    findings += plines
    if spec.mptcp:
        verified = negotiated and not fallback and ok >= set(spec.expected_paths)
    else:
        main = next((r for r in results if r.initial), None)
        verified = main is not None and main.carried_data and ok >= set(spec.expected_paths)

    warnings = [Remark(f"subflow {r.name} is from an address on no known path", UNKNOWN_PATH) for r in results
                if r.path is None]
    if dl is not None:      # receiver-side figures withheld at the sender (delivery.py)
        warnings += dl.remarks
    if spec.foreign and spec.mptcp and contribution.too_small(results):
        floor = contribution.MIN_SEGMENTS * contribution.FULL_SEGMENT
        warnings.append(Remark(
            f"too small to judge whether each subflow contributed: {sum(map(contribution.delivered, results))} "
            f"bytes delivered in all, under the floor of {contribution.MIN_SEGMENTS} full segments ({floor} bytes); "
            "every subflow that carried data counts", TOO_SMALL))
    how = (f"{cid}: most payload of {len(conns)} connection(s) to port {spec.server_port}"
           + (f", {len(conn) - 1} join(s) matched by token" if len(conn) > 1 else "")
           + (f" (joins also followed to port(s) {', '.join(map(str, spec.join_ports))})" if spec.join_ports else ""))
    return FlowAnalysis(
        mptcp_negotiated=negotiated, fallback=fallback, verified=verified,
        subflows=results, add_addrs=add_addrs, diagnostics=[f.message for f in findings],
        findings=findings,
        timeseries=timeseries(t, conn, paths, upload, t0, bin_s),
        icmp_events=icmp, packets=len(pk), analysis_seconds=0.0,
        t0_epoch=t0, connections=len(conns), data_connection=how, warnings=warnings,
        dsn=deep.dsn if deep else Table.empty(depth.DSN_KINDS),
        reinjections=reinj,
        mptcp_events=deep.events if deep else Table.empty(depth.EVENT_KINDS),
        dss_checksum=deep.dss_checksum if deep else None,
        checksum_required=deep.checksum_required if deep else None,
        mptcp_version=ini.version if ini is not None else None,
        owd=dl.owd if dl else Table.empty(delivery.OWD_KINDS),
        hol=dl.hol if dl else Table.empty(delivery.HOL_KINDS),
        hol_connection=dl.connection if dl else {},
        owd_unavailable=dl.owd_unavailable if dl else None,
        hol_unavailable=dl.hol_unavailable if dl else None,
        hol_assumed=dl.hol_assumed if dl else None,
        departures=departures.departures(t, conn, paths, upload),
        tcp_seq=tcpseq.tcp_seq(pk, t, conn, paths, upload, t0) if tcp_seq else None,
        rtt_kind=rtt_kinds,
    )


#: the per-flow files write_tables makes besides subflows.csv (docs/results-format.md)
TABLE_FILES = {"timeseries": "timeseries.csv", "icmp_events": "icmp.csv", "dsn": "dsn.csv",
               "reinjections": "mptcp_retransmissions.csv", "mptcp_events": "mptcp_events.csv",
               "owd": "owd.csv", "hol": "hol.csv", "departures": "departures.csv"}
#: FlowAnalysis.tcp_seq's file, written only when the analysis made the table
TCP_SEQ_FILE = "tcp_seq.csv"


def write_tables(fa: FlowAnalysis, out: Path) -> None:
    """One flow's tables as CSV files in ``out``: TABLE_FILES, TCP_SEQ_FILE when the analysis
    made it, and subflows.csv (one row per subflow: SubflowResult.to_dict, ``rtt_kind``
    included). The one writer of
    them: a lab run's top-level flow (the repetition's directory), its other bulk flows
    (flows/<name>/), `mptcplab analyze`."""
    for attr, name in TABLE_FILES.items():
        getattr(fa, attr).to_csv(out / name)
    if fa.tcp_seq is not None:
        fa.tcp_seq.to_csv(out / TCP_SEQ_FILE)
    rows = [s.to_dict() for s in fa.subflows]
    Table.from_records(rows, list(dict.fromkeys(k for r in rows for k in r))).to_csv(out / "subflows.csv")


def _rtt_kinds(found: dict[str, str], conn: list[Subflow], receiver_node: str | None) -> dict[str, str]:
    """depth.py's rtt_kind per subflow, except where the lab names the data receiver's node and
    the subflow's point is on it (``node:iface``): that is known, not read from the handshake
    (a lab path without delay leaves the handshake's gaps too short to tell)."""
    if receiver_node is None:
        return found
    return {k: ("ack_delay" if next((s.point for s in conn if f"{s.cip}:{s.cport}" == k), "")
                .split(":", 1)[0] == receiver_node else v) for k, v in found.items()}


def _carries_dss(t: Table, sf: Subflow, upload: bool) -> bool:
    """Some of the subflow's data segments (either direction) carry an MPTCP option."""
    return any(n > bare for n, bare, _ in (dss_missing(t, sf, upload), dss_missing(t, sf, not upload)))


def mp_fail_reset_subflow(conn: list[Subflow], numbers: dict[tuple[str, int, str, int], dict[str, Any]],
                          fail_rel_t: float) -> bool:
    """Whether an MP_FAIL closed only its own subflow (RFC 8684 section 3.7: with other
    subflows open, a checksum failure resets the subflow that carried the bad data, with
    MP_TCPRST, and the connection goes on), not the connection (fallback to TCP with an
    infinite mapping, when no other subflow is left). True when every subflow that saw
    MP_FAIL was reset and another subflow carried data after the MP_FAIL."""
    failed = [s for s in conn if s.mp_fail_t is not None]
    if not failed or any(s.rst_t is None for s in failed):
        return False
    return any((numbers[s.key]["last_data_t"] or 0.0) > fail_rel_t for s in conn if s.mp_fail_t is None)
