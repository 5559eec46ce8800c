"""The packet table (packets.py) out of capture files with tshark: the reference oracle.

The production path is the native reader (pcapread.py); this module stays so the tests can
compare it field by field against tshark's own dissectors (TCP, its MPTCP option dissector,
ICMP with the quoted header) on captures they make; ``analyze_packets(tshark.extract(...))``
also works where the native library is not built.

Speed (measured with tshark 4.0 on the 2-core dev machine, 115k packets, before the native
reader existed; see bench/analysis_bench.py):
* ``-T fields`` makes tshark build the *visible* protocol tree (it formats a label for every
  field of every packet): ~5 CPU-s. The same fields as custom columns printed with
  ``-T tabs`` need only a hidden tree: ~2-3 CPU-s. So the fields are columns here.
* Payload on the server port is decoded as plain ``data``: otherwise every data segment is
  offered to every TCP heuristic dissector.
* Every field read is per-packet (TCP/MPTCP *analysis* is switched off, so no state crosses
  packets), so a large file is cut into chunks with editcap and the chunks are dissected in
  parallel on all cores.

ICMP errors carry the quoted IP and TCP header of the offending packet, so on those rows
``ip.src``/``ip.dst``/``ip.len`` have two occurrences (outer, inner). We ask for all
occurrences (tshark joins them with ",") and split them here; the TCP fields on an ICMP row
are the quoted packet's. MPTCP fields that several subtypes share (addrid, backup flag) are
read as their first occurrence, like the native reader, except REMOVE_ADDR's ids.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise
from pathlib import Path

import numpy as np
import pandas as pd

from mptcplab.errors import HostNotReady, RunFailed

from . import packets
from .model import CaptureFile
from .packets import PacketTable
from .table import Column, Nullable, Table

#: (tshark field, raw column name)
FIELDS: tuple[tuple[str, str], ...] = (
    ("frame.number", "frame"),
    ("frame.time_epoch", "t"),
    ("ip.src", "ip_src"),
    ("ip.dst", "ip_dst"),
    ("ip.len", "ip_len"),
    ("ip.ttl", "ip_ttl"),                       # tells the capture point nearest the sender
    ("ipv6.src", "ip6_src"),
    ("ipv6.dst", "ip6_dst"),
    ("ipv6.plen", "ip6_plen"),
    ("ipv6.hlim", "ip6_hlim"),
    ("tcp.srcport", "sport"),
    ("tcp.dstport", "dport"),
    ("tcp.len", "tlen"),
    ("tcp.seq_raw", "seq"),
    ("tcp.ack_raw", "ack"),
    ("tcp.flags", "flags"),
    ("tcp.window_size_value", "win"),
    ("tcp.options.timestamp.tsval", "tsval"),
    ("tcp.options.timestamp.tsecr", "tsecr"),
    ("tcp.options.mss_val", "mss"),
    ("tcp.options.mptcp.subtype", "mp"),        # "0" MP_CAPABLE, "1" MP_JOIN, "2" DSS, ...
    ("tcp.options.mptcp.sendkey", "sendkey"),
    ("tcp.options.mptcp.recvkey", "recvkey"),
    ("tcp.options.mptcp.recvtok", "recvtok"),
    ("tcp.options.mptcp.version", "mpc_ver"),
    ("tcp.options.mptcp.checksumreq.flags", "mpc_a"),
    ("tcp.options.mptcp.extensibility.flag", "mpc_b"),
    ("tcp.options.mptcp.nomoresubflows.flag", "mpc_c"),
    ("tcp.options.mptcp.sha256.flag", "mpc_h"),
    ("tcp.options.mptcp.rawdataack", "data_ack"),
    ("tcp.options.mptcp.dataack8.flag", "dack64"),
    ("tcp.options.mptcp.rawdataseqno", "dsn"),
    ("tcp.options.mptcp.dseqn8.flag", "dsn64"),
    ("tcp.options.mptcp.subflowseqno", "ssn"),
    ("tcp.options.mptcp.datalvllen", "dll"),
    ("tcp.options.mptcp.checksum", "csum"),
    ("tcp.options.mptcp.datafin.flag", "datafin"),
    ("tcp.options.mptcp.addrid", "addr_id"),
    ("tcp.options.mptcp.backup.flag", "backup"),
    ("tcp.options.mptcp.ipv4", "addaddr"),
    ("tcp.options.mptcp.ipv6", "addaddr6"),
    ("tcp.options.mptcp.port", "add_port"),
    ("tcp.options.mptcp.echo", "add_echo"),
    ("tcp.options.mptcp.rst_reason", "rst_reason"),
    ("icmp.type", "icmp_type"),
    ("icmp.code", "icmp_code"),
    ("icmp.mtu", "icmp_mtu"),
    ("icmpv6.type", "icmp6_type"),
    ("icmpv6.code", "icmp6_code"),
    ("icmpv6.mtu", "icmp6_mtu"),
)

#: tshark preferences that cost time and that nothing here reads
PREFS: tuple[str, ...] = (
    "tcp.analyze_sequence_numbers:FALSE",
    "tcp.relative_sequence_numbers:FALSE",
    "tcp.calculate_timestamps:FALSE",
    "tcp.desegment_tcp_streams:FALSE",
    "tcp.track_bytes_in_flight:FALSE",
    "mptcp.analyze_mptcp:FALSE",
    "mptcp.relative_sequence_numbers:FALSE",
    "ip.defragment:FALSE",
    "ipv6.defragment:FALSE",
)

#: no chunk smaller than this (~20k packets at -s 128): a tshark start costs ~0.25 s
CHUNK_MIN_BYTES = 2_000_000

def tshark_command(path: Path, server_port: int | None = None) -> list[str]:
    """The tshark command for one file: one tab-separated line per packet, one column per
    field of FIELDS in order, all occurrences of a field joined with ","."""
    cols = ",".join(f'"{name}","%Cus:{fld}:0:U"' for fld, name in FIELDS)
    cmd = ["tshark", "-n", "-r", str(path), "-T", "tabs", "-o", f"gui.column.format:{cols}"]
    for p in PREFS:
        cmd += ["-o", p]
    if server_port is not None:
        cmd += ["-d", f"tcp.port=={int(server_port)},data"]
    return cmd


def _run_tshark(path: Path, server_port: int | None = None) -> tuple[bytes, str | None]:
    """tshark's output for one file, and a warning when the file ended mid-packet."""
    r = subprocess.run(tshark_command(path, server_port), capture_output=True)
    if r.returncode != 0:
        err = r.stderr.decode(errors="replace")
        # tcpdump stopped by a signal can leave the last record cut short: tshark says so
        # and exits 2 after printing every complete packet, which is what we want
        if "cut short" not in err:
            lines = [ln for ln in err.splitlines() if "Running as user" not in ln]
            raise RunFailed(f"tshark failed on {path}: {' '.join(lines).strip()}")
        return r.stdout, "the last packet was cut short (capture stopped mid-write)"
    return r.stdout, None


def _parse(raw: bytes) -> pd.DataFrame:
    """tshark's text, every field a string ("" where tshark printed nothing)."""
    names = [c for _, c in FIELDS]
    if not raw.strip():
        return pd.DataFrame({c: pd.Series(dtype=object) for c in names})
    return pd.read_csv(io.BytesIO(raw), sep="\t", header=None, names=names, quoting=3,
                       dtype=object, keep_default_na=False, engine="c")


def _int(v: str) -> int | None:
    v = v.split(",", 1)[0].strip()
    if not v:
        return None
    return int(v, 16) if v.startswith("0x") else int(v)


def _first(col: pd.Series) -> list[int | None]:
    """First occurrence of an integer field (decimal or 0x hex), None where absent; few
    distinct values per column in practice, so each is decoded once."""
    uniq = {v: _int(v) for v in col.unique()}
    return [uniq[v] for v in col]


def _num(col: pd.Series) -> np.ndarray:
    return np.array([np.nan if v is None else float(v) for v in _first(col)], dtype=np.float64)


def _nullable(col: pd.Series, unsigned: bool = False) -> Nullable:
    vals = _first(col)
    present = np.array([v is not None for v in vals], dtype=bool)
    arr = np.array([v or 0 for v in vals], dtype=np.uint64 if unsigned else np.int64)
    return packets.nullable(arr, present, unsigned)


def _mpc_flags(df: pd.DataFrame) -> Nullable:
    """MP_CAPABLE's flags octet from the bits tshark shows (A, B, C, H; D-G are reserved)."""
    out = np.zeros(len(df), dtype=np.int64)
    for c, bit in (("mpc_a", 0x80), ("mpc_b", 0x40), ("mpc_c", 0x20), ("mpc_h", 0x01)):
        out |= np.array([bit if (_int(v) or 0) else 0 for v in df[c]], dtype=np.int64)
    return packets.nullable(out, (df["mpc_ver"] != "").to_numpy())


def _split(col: pd.Series, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Outer and quoted occurrence of an IP field: only ICMP errors carry a second header,
    and they are few, so a loop is fine."""
    outer = col.to_numpy(dtype=object, copy=True)
    inner = np.full(len(col), "", dtype=object)
    for i in rows:
        head, _, tail = str(outer[i]).partition(",")
        outer[i], inner[i] = head, tail
    return outer, inner


def _finish(df: pd.DataFrame, point: str) -> dict[str, np.ndarray | Nullable]:
    """tshark's strings -> the packet table's columns (packets.COLUMNS; the categorical ones as
    object arrays of str, made categorical over all files by ``extract``)."""
    n = len(df)
    v6 = (df["ip6_src"] != "").to_numpy() & (df["ip_src"] == "").to_numpy()
    icmp6 = (df["icmp6_type"] != "").to_numpy()
    icmp_rows = np.flatnonzero(((df["icmp_type"] != "") | icmp6).to_numpy())
    ip: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for c4, c6 in (("ip_src", "ip6_src"), ("ip_dst", "ip6_dst"), ("ip_len", "ip6_plen"),
                   ("ip_ttl", "ip6_hlim")):
        o4, i4 = _split(df[c4], icmp_rows)
        o6, i6 = _split(df[c6], icmp_rows)
        if c6 == "ip6_plen":   # the native reader reports IPv6 lengths with the fixed header
            o6 = np.array([str(int(x) + 40) if x else "" for x in o6], dtype=object)
            i6 = np.array([str(int(x) + 40) if x else "" for x in i6], dtype=object)
        ip[c4] = (np.where(v6, o6, o4), np.where(i4 != "", i4, i6))
    mp = df["mp"].map({v: sum(1 << int(p) for p in str(v).split(",") if p.strip().isdigit())
                       for v in df["mp"].unique()}).to_numpy(dtype=np.int64)
    has_rm = (mp & (1 << packets.REMOVE_ADDR)) != 0
    other_id = (mp & ((1 << packets.MP_JOIN) | (1 << packets.ADD_ADDR) | (1 << packets.MP_PRIO))) != 0
    rm_only = has_rm & ~other_id
    addr_id = df["addr_id"].where(~rm_only, "")
    rm_ids = np.where(rm_only, df["addr_id"].to_numpy(dtype=object), "")
    data_ack = _nullable(df["data_ack"], unsigned=True)
    # tshark shows MP_FAIL's sequence number in the DSN field; without a DSS it is MP_FAIL's
    fail_only = pd.Series(((mp & (1 << packets.MP_FAIL)) != 0) & ((mp & (1 << packets.DSS)) == 0), index=df.index)
    dsn = _nullable(df["dsn"].where(~fail_only, ""), unsigned=True)
    fail_dsn = _nullable(df["dsn"].where(fail_only, ""), unsigned=True)
    tcprst = (mp & (1 << packets.MP_TCPRST)) != 0
    rst_reason = _nullable(df["rst_reason"].where(pd.Series(tcprst, index=df.index), ""))
    flags = df["flags"].map({v: (_int(v) or 0) for v in df["flags"].unique()}).astype("int64")
    cols: dict[str, np.ndarray | Nullable] = {
        "t": df["t"].map(lambda v: float(v) if v else np.nan).to_numpy(dtype=np.float64),
        "point": np.full(n, point, dtype=object),
        "frame": df["frame"].astype("int64").to_numpy(),
        "ip_src": ip["ip_src"][0], "ip_dst": ip["ip_dst"][0],
        "ip_len": pd.to_numeric(pd.Series(ip["ip_len"][0]), errors="coerce").to_numpy(dtype=np.float64),
        "ip_ttl": pd.to_numeric(pd.Series(ip["ip_ttl"][0]), errors="coerce").to_numpy(dtype=np.float64),
        "q_src": ip["ip_src"][1], "q_dst": ip["ip_dst"][1],
        "q_len": pd.to_numeric(pd.Series(ip["ip_len"][1]), errors="coerce").to_numpy(dtype=np.float64),
        "q_ttl": pd.to_numeric(pd.Series(ip["ip_ttl"][1]), errors="coerce").to_numpy(dtype=np.float64),
        "sport": _num(df["sport"]), "dport": _num(df["dport"]), "tlen": _num(df["tlen"]),
        "seq": _num(df["seq"]), "ack": _num(df["ack"]), "flags": flags.to_numpy(),
        "win": _num(df["win"]),
        "tsval": _num(df["tsval"]), "tsecr": _num(df["tsecr"]), "mss": _num(df["mss"]),
        "mp": mp,
        "sendkey": _nullable(df["sendkey"], unsigned=True),
        "recvkey": _nullable(df["recvkey"], unsigned=True),
        "recvtok": _nullable(df["recvtok"]),
        "mpc_ver": _nullable(df["mpc_ver"]),
        "mpc_flags": _mpc_flags(df),
        "data_ack": data_ack,
        "dack64": (df["dack64"].str.split(",").str[0] == "1").to_numpy() & data_ack.present,
        "dsn": dsn,
        "dsn64": (df["dsn64"].str.split(",").str[0] == "1").to_numpy() & dsn.present,
        "ssn": _nullable(df["ssn"]),
        "dll": _nullable(df["dll"]),
        "csum": (df["csum"] != "").to_numpy(),
        "datafin": (df["datafin"].str.split(",").str[0] == "1").to_numpy(),
        "addr_id": _nullable(addr_id),
        "backup": _nullable(df["backup"]),
        "addaddr": np.where(df["addaddr"] != "", df["addaddr"].str.split(",").str[0],
                            df["addaddr6"].str.split(",").str[0]).astype(object),
        "add_port": _nullable(df["add_port"]),
        "add_echo": (df["add_echo"].str.split(",").str[0] == "1").to_numpy(),
        "rm_ids": rm_ids,
        "fail_dsn": fail_dsn,
        "rst_reason": rst_reason,
        "rst_flags": packets.nullable(np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)),
        "icmp_type": np.where(icmp6, _num(df["icmp6_type"]), _num(df["icmp_type"])),
        "icmp_code": np.where(icmp6, _num(df["icmp6_code"]), _num(df["icmp_code"])),
        "icmp_mtu": np.where(icmp6, _num(df["icmp6_mtu"]), _num(df["icmp_mtu"])),
        "icmp6": icmp6,
        "malformed": np.zeros(n, dtype=bool),
    }
    return cols


#: columns tshark does not give in a form the oracle can compare (see _finish)
NOT_FROM_TSHARK = ("rst_flags", "malformed")


def _packet_count(path: Path) -> int | None:
    r = subprocess.run(["capinfos", "-c", "-M", "-T", "-r", str(path)], capture_output=True, text=True)
    try:
        return int(r.stdout.split()[-1])
    except (ValueError, IndexError):
        return None


def _plan(captures: Sequence[CaptureFile], workers: int, tmp: Path) -> list[tuple[int, int, Path, int]]:
    """Work items (capture index, chunk number, file, size) for ``workers`` parallel tshark processes.

    All files are laid end to end and cut into ``workers`` equal byte ranges; a file that
    a cut falls into is split there (packet numbers estimated from the byte position) with
    editcap. Cuts closer than CHUNK_MIN_BYTES to a file's edge are dropped: a tshark start
    costs about 0.25 s. Items come largest first so the pool finishes evenly.
    """
    sizes = [c.path.stat().st_size for c in captures]
    total = sum(sizes)
    whole = [(i, 0, c.path, sizes[i]) for i, c in enumerate(captures)]
    if (workers <= 1 or total < 2 * CHUNK_MIN_BYTES or not shutil.which("editcap")
            or not shutil.which("capinfos")):
        return sorted(whole, key=lambda it: -it[3])
    target = total / workers
    items: list[tuple[int, int, Path, int]] = []
    offset = 0
    for i, cap in enumerate(captures):
        size = sizes[i]
        cuts = [k * target - offset for k in range(1, workers)]
        cuts = [c for c in cuts if CHUNK_MIN_BYTES <= c <= size - CHUNK_MIN_BYTES]
        offset += size
        n = _packet_count(cap.path) if cuts else None
        if not cuts or not n:
            items.append((i, 0, cap.path, size))
            continue
        bounds = [0] + [int(n * c / size) for c in cuts] + [n]
        for k, (a, b) in enumerate(pairwise(bounds)):
            out = tmp / f"c{i}_{k}.pcap"
            r = subprocess.run(["editcap", "-r", str(cap.path), str(out), f"{a + 1}-{b}"],
                               capture_output=True)
            if r.returncode != 0:
                raise RunFailed(f"editcap failed on {cap.path}: {r.stderr.decode(errors='replace').strip()}")
            items.append((i, k, out, int(size * (b - a) / n)))
    return sorted(items, key=lambda it: -it[3])


def extract(captures: Sequence[CaptureFile], workers: int | None = None,
            server_port: int | None = None) -> PacketTable:
    """All packets of all captures as one packet table (packets.COLUMNS), in capture order,
    each file in file order; ``frame`` is the packet number in its file even when the file was
    dissected in chunks, with ``warnings``: problems with the files that did not stop the
    extraction.
    """
    if shutil.which("tshark") is None:
        raise HostNotReady("tshark is not installed (Debian: apt-get install tshark)")
    for c in captures:
        if not Path(c.path).is_file():
            raise RunFailed(f"capture file missing: {c.path} ({c.point})")
    workers = workers or os.cpu_count() or 1
    def work(item: tuple[int, int, Path, int]) -> tuple[pd.DataFrame, str | None]:
        raw, warn = _run_tshark(item[2], server_port)
        return _parse(raw), warn

    with tempfile.TemporaryDirectory(prefix="mptcplab-tshark-") as tmpd:
        items = _plan(captures, workers, Path(tmpd))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            done = list(pool.map(work, items))
    frames = [f for f, _ in done]
    warnings = sorted({f"{captures[it[0]].point}: {w}" for it, (_, w) in zip(items, done, strict=True) if w})
    # back in capture order, and within a capture in chunk (= packet) order
    per_capture: dict[int, list[tuple[int, pd.DataFrame]]] = {}
    for (i, k, _, _), f in zip(items, frames, strict=True):
        per_capture.setdefault(i, []).append((k, f))
    chunks = {i: [f for _, f in sorted(fs, key=lambda x: x[0])] for i, fs in per_capture.items()}
    out = []
    for i, fs in sorted(chunks.items()):
        cols = _finish(pd.concat(fs, ignore_index=True), captures[i].point)
        # chunks restart tshark's numbering; tshark prints one line per packet
        cols["frame"] = np.arange(1, len(cols["t"]) + 1, dtype=np.int64)
        out.append(cols)
    if not out:
        return PacketTable(packets.empty(), warnings)
    merged: dict[str, Column] = {}
    for name in packets.COLUMNS:
        parts = [o[name] for o in out]
        if isinstance(parts[0], Nullable):
            nulls = [x for x in parts if isinstance(x, Nullable)]
            merged[name] = Nullable(np.concatenate([x.values for x in nulls]),
                                    np.concatenate([x.present for x in nulls]))
        else:
            merged[name] = np.concatenate([x for x in parts if isinstance(x, np.ndarray)])
    merged.update(packets.categorize({name: list(merged[name]) for name in packets.CATEGORICAL}))  # type: ignore[arg-type]
    return PacketTable(Table({name: merged[name] for name in packets.COLUMNS}), warnings)
