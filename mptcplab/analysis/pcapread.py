"""The packet table (packets.py) out of capture files, with the native reader.

native/pcapread (C on libpcap, built into native/build/libmptcplab-pcapread.so) decodes every
packet of a file in one pass into one array per field; this module loads it with ctypes,
copies those arrays into numpy (their names and types come from the library itself,
pcr_layout, so they cannot drift from the C code) and turns them into the table's columns.

Why a shared library and not a program writing column files: the rows go from C memory into
numpy with one copy and no file system round trip, no process start, and no format to keep in
step on both sides. ctypes drops the GIL during the call, so files are read in parallel
threads. The cost: a crash in C would take the Python process with it, so every read in the C
code is bounds-checked against the captured length, and a fuzz test feeds it garbage.
"""

from __future__ import annotations

import ctypes
import ipaddress
import os
import tempfile
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mptcplab.errors import HostNotReady, RunFailed

from . import capfile, packets
from .model import CaptureFile
from .packets import PacketTable
from .table import Cat, Column, Table

LIB_NAME = "libmptcplab-pcapread.so"

# pcr_row.has bits, native/pcapread/pcapread.h
H_IP, H_TCP, H_ICMP, H_QUOTED, H_ICMP_MTU = 1 << 0, 1 << 1, 1 << 2, 1 << 3, 1 << 4
H_SENDKEY, H_RECVKEY, H_RECVTOK, H_DACK, H_DACK64 = 1 << 5, 1 << 6, 1 << 7, 1 << 8, 1 << 9
H_DSN, H_DSN64, H_CSUM, H_DATAFIN, H_DLL, H_FAILDSN = 1 << 10, 1 << 11, 1 << 12, 1 << 13, 1 << 14, 1 << 15
H_ADDR_ID, H_BACKUP, H_ADDPORT, H_ADDHMAC, H_ADDECHO = 1 << 16, 1 << 17, 1 << 18, 1 << 19, 1 << 20
H_MALFORMED, H_TRUNC, H_JOINHMAC, H_MPC = 1 << 21, 1 << 22, 1 << 23, 1 << 24
H_SEQ, H_TCPHDR, H_TS, H_MSS = 1 << 25, 1 << 26, 1 << 27, 1 << 28


def library_path() -> Path:
    """$MPTCPLAB_PCAPREAD, else <repo>/native/build/libmptcplab-pcapread.so."""
    env = os.environ.get("MPTCPLAB_PCAPREAD")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "native" / "build" / LIB_NAME


#: the C reader's columns to_table reads (pcr_layout must name every one)
NEEDED_COLUMNS = frozenset((
    "ack add_port addr_id backup data_ack dll dport dsn fail_dsn flags frame has icmp_code icmp_mtu "
    "icmp_type ip_len ipv mp mpc_flags mpc_ver mss q_len q_ttl recvkey recvtok rm_ids rm_n rst_flags "
    "rst_reason sendkey seq sport ssn t_ns tlen tsecr tsval ttl win src dst q_src q_dst addaddr").split())


@dataclass(frozen=True)
class _Native:
    lib: ctypes.CDLL
    columns: tuple[tuple[str, np.dtype], ...]


_native: _Native | None = None
_lock = threading.Lock()


def _load() -> _Native:
    global _native
    with _lock:
        if _native is not None:
            return _native
        path = library_path()
        if not path.is_file():
            raise HostNotReady(f"the native capture reader is not built: {path} missing (run make -C native; "
                               "Debian needs libpcap-dev)")
        lib = ctypes.CDLL(str(path))
        lib.pcr_read.restype = ctypes.c_void_p
        lib.pcr_read.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
        for fn in ("pcr_count", "pcr_addr_count"):
            getattr(lib, fn).restype = ctypes.c_size_t
            getattr(lib, fn).argtypes = [ctypes.c_void_p]
        lib.pcr_column.restype = ctypes.c_void_p
        lib.pcr_column.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        lib.pcr_addr.restype = ctypes.c_int
        lib.pcr_addr.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
        lib.pcr_linktype.restype = ctypes.c_int
        lib.pcr_linktype.argtypes = [ctypes.c_void_p]
        lib.pcr_warning.restype = ctypes.c_char_p
        lib.pcr_warning.argtypes = [ctypes.c_void_p]
        lib.pcr_free.restype = None
        lib.pcr_free.argtypes = [ctypes.c_void_p]
        lib.pcr_layout.restype = ctypes.c_char_p
        cols = []
        for item in lib.pcr_layout().decode().strip(";").split(";"):
            name, fmt = item.split(":")
            cols.append((name, np.dtype(fmt)))
        missing = sorted(NEEDED_COLUMNS - {n for n, _ in cols})
        if missing:
            # a build older than the Python side (sources pulled, library not rebuilt)
            raise HostNotReady(f"the native capture reader {path} is older than this checkout: it has no "
                               f"{', '.join(missing)} (run make -C native)")
        _native = _Native(lib, tuple(cols))
        return _native


@dataclass
class RawFile:
    """One file as the C reader returned it: rows, address table, link type, warning."""

    rows: dict[str, np.ndarray]  # column name (pcr_layout) -> values
    addresses: list[str]        # index -> text; index 0 is ""
    linktype: int
    warning: str


def read_raw(path: Path) -> RawFile:
    """Decode one capture file (pcap or pcapng, either gzip-compressed) into rows; files the
    C code cannot decode as they are go through capfile.py first."""
    with tempfile.TemporaryDirectory(prefix="mptcplab-cap-") as tmp, \
            capfile.readable(path, Path(tmp)) as (readable_path, gz_warning):
        raw = _read_native(readable_path, path)
        if capfile.needs_rewrite(raw.linktype, raw.warning):
            why = (raw.warning if capfile.MIXED_INTERFACES in raw.warning
                   else f"link type {raw.linktype} is not decoded by the native reader")
            try:
                _, cut = capfile.rewrite(readable_path, Path(tmp) / "rewritten.pcap")
            except (RunFailed, OSError, ValueError) as e:
                raise RunFailed(f"cannot read capture {path}: {e} (libpcap: {why})") from e
            raw = _read_native(Path(tmp) / "rewritten.pcap", path)
            raw.warning = cut
        raw.warning = raw.warning or gz_warning
    if raw.warning and "truncated" in raw.warning and not len(raw.rows["has"]):
        raise RunFailed(f"{path}: truncated: no complete packet ({raw.warning})")
    return raw


def _read_native(path: Path, shown: Path) -> RawFile:
    """One file through the C reader; ``shown``: the name errors give."""
    nat = _load()
    err = ctypes.create_string_buffer(512)
    h = nat.lib.pcr_read(os.fsencode(path), err, len(err))
    if not h:
        raise RunFailed(f"cannot read capture {shown}: {err.value.decode(errors='replace')}")
    try:
        n = int(nat.lib.pcr_count(h))
        rows: dict[str, np.ndarray] = {}
        for i, (name, dt) in enumerate(nat.columns):
            if n:
                buf = (ctypes.c_char * (n * dt.itemsize)).from_address(nat.lib.pcr_column(h, i))
                rows[name] = np.frombuffer(buf, dtype=dt, count=n).copy()  # type: ignore[call-overload]
            else:
                rows[name] = np.zeros(0, dtype=dt)
        addrs = [""]
        out = ctypes.create_string_buffer(16)
        for i in range(1, int(nat.lib.pcr_addr_count(h))):
            fam = nat.lib.pcr_addr(h, i, out)
            raw = out.raw
            addrs.append(str(ipaddress.IPv4Address(raw[:4]) if fam == 4 else ipaddress.IPv6Address(raw)))
        warning = nat.lib.pcr_warning(h).decode(errors="replace")
        return RawFile(rows, addrs, int(nat.lib.pcr_linktype(h)), warning)
    finally:
        nat.lib.pcr_free(h)


def _f(values: np.ndarray, present: np.ndarray) -> np.ndarray:
    """float64 column, NaN where absent."""
    return np.where(present, values, np.nan)


def _rm_text(ids: np.ndarray, counts: np.ndarray) -> Cat:
    text = [""]
    codes = np.zeros(len(ids), dtype=np.int64)
    for i in np.flatnonzero(counts):       # REMOVE_ADDR is rare: a loop is fine
        v = int(ids[i])
        s = ",".join(str((v >> (8 * k)) & 0xFF) for k in range(min(int(counts[i]), 8)))
        if s not in text:
            text.append(s)
        codes[i] = text.index(s)
    return Cat(codes, np.asarray(text, dtype=object))


def merge(raws: Sequence[RawFile], points: Sequence[str]) -> tuple[dict[str, np.ndarray], list[str], list[str]]:
    """The rows of several files as one set of columns, with their address indices mapped
    into one address list and a ``point`` column of indices into the list of points.
    Concatenating the raw columns once is much cheaper than concatenating finished tables
    (46 columns, nullable and categorical ones among them)."""
    names: list[str] = [""]
    index: dict[str, int] = {"": 0}
    point_names = list(dict.fromkeys(points))
    parts: dict[str, list[np.ndarray]] = {}
    for raw, point in zip(raws, points, strict=True):
        amap = np.zeros(len(raw.addresses), dtype=np.uint32)
        for i, a in enumerate(raw.addresses):
            if a not in index:
                index[a] = len(names)
                names.append(a)
            amap[i] = index[a]
        n = len(raw.rows["has"])
        for col, vals in raw.rows.items():
            parts.setdefault(col, []).append(amap[vals] if col in _ADDRESS_FIELDS else vals)
        parts.setdefault("point", []).append(np.full(n, point_names.index(point), dtype=np.int64))
    cols = {c: (np.concatenate(v) if len(v) > 1 else v[0]) for c, v in parts.items()}
    return cols, names, point_names


#: C fields holding an address index, and their packet table columns
_ADDRESS_FIELDS = {"src": "ip_src", "dst": "ip_dst", "q_src": "q_src", "q_dst": "q_dst", "addaddr": "addaddr"}


def to_table(r: dict[str, np.ndarray], addresses: list[str], points: list[str]) -> Table:
    """The packet table (packets.COLUMNS) from merged columns (see merge)."""
    has = r["has"]

    def bit(b: int) -> np.ndarray:
        return (has & b) != 0

    cats = np.asarray(addresses, dtype=object)

    def addr(field: str) -> Cat:
        return Cat(r[field].astype(np.int64), cats)

    tcp, icmp = bit(H_TCP), bit(H_ICMP)
    ip, quoted = bit(H_IP), bit(H_QUOTED)
    hdr = bit(H_TCPHDR)
    ns = r["t_ns"]
    tcprst = (r["mp"] & (1 << packets.MP_TCPRST)) != 0
    cols: dict[str, Column] = {
        # seconds and the fraction apart: t_ns does not fit a float64 exactly
        "t": (ns // 1_000_000_000).astype(np.float64) + (ns % 1_000_000_000) / 1e9,
        "point": Cat(r["point"].astype(np.int64), np.asarray(points, dtype=object)),
        "frame": r["frame"].astype(np.int64),
        "ip_src": addr("src"),
        "ip_dst": addr("dst"),
        "ip_len": _f(r["ip_len"], ip),
        "ip_ttl": _f(r["ttl"], ip),
        "q_src": addr("q_src"),
        "q_dst": addr("q_dst"),
        "q_len": _f(r["q_len"], quoted),
        "q_ttl": _f(r["q_ttl"], quoted),
        "sport": _f(r["sport"], tcp),
        "dport": _f(r["dport"], tcp),
        "tlen": _f(r["tlen"], r["tlen"] >= 0),
        "seq": _f(r["seq"], bit(H_SEQ)),
        "ack": _f(r["ack"], hdr),
        "flags": r["flags"].astype(np.int64),
        "win": _f(r["win"], hdr),
        "tsval": _f(r["tsval"], bit(H_TS)),
        "tsecr": _f(r["tsecr"], bit(H_TS)),
        "mss": _f(r["mss"], bit(H_MSS)),
        "mp": r["mp"].astype(np.int64),
        "sendkey": packets.nullable(r["sendkey"], bit(H_SENDKEY), unsigned=True),
        "recvkey": packets.nullable(r["recvkey"], bit(H_RECVKEY), unsigned=True),
        "recvtok": packets.nullable(r["recvtok"], bit(H_RECVTOK)),
        "mpc_ver": packets.nullable(r["mpc_ver"], bit(H_MPC)),
        "mpc_flags": packets.nullable(r["mpc_flags"], bit(H_MPC)),
        "data_ack": packets.nullable(r["data_ack"], bit(H_DACK), unsigned=True),
        "dack64": bit(H_DACK64),
        "dsn": packets.nullable(r["dsn"], bit(H_DSN), unsigned=True),
        "dsn64": bit(H_DSN64),
        "ssn": packets.nullable(r["ssn"], bit(H_DSN)),
        "dll": packets.nullable(r["dll"], bit(H_DLL)),
        "csum": bit(H_CSUM),
        "datafin": bit(H_DATAFIN),
        "addr_id": packets.nullable(r["addr_id"], bit(H_ADDR_ID)),
        "backup": packets.nullable(r["backup"], bit(H_BACKUP)),
        "addaddr": addr("addaddr"),
        "add_port": packets.nullable(r["add_port"], bit(H_ADDPORT)),
        "add_echo": bit(H_ADDECHO),
        "rm_ids": _rm_text(r["rm_ids"], r["rm_n"]),
        "fail_dsn": packets.nullable(r["fail_dsn"], bit(H_FAILDSN), unsigned=True),
        "rst_reason": packets.nullable(r["rst_reason"], tcprst),
        "rst_flags": packets.nullable(r["rst_flags"], tcprst),
        "icmp_type": _f(r["icmp_type"], icmp),
        "icmp_code": _f(r["icmp_code"], icmp),
        "icmp_mtu": _f(r["icmp_mtu"], bit(H_ICMP_MTU)),
        "icmp6": icmp & (r["ipv"] == 6),
        "malformed": bit(H_MALFORMED | H_TRUNC),
    }
    return Table(cols)


def extract(captures: Sequence[CaptureFile], workers: int | None = None) -> PacketTable:
    """All packets of all captures as one packet table (packets.COLUMNS), in capture order,
    each file in file order, with ``warnings``: problems with the files that did not stop the
    reading (a capture cut short mid-packet)."""
    for c in captures:
        if not Path(c.path).is_file():
            raise RunFailed(f"capture file missing: {c.path} ({c.point})")
    if not captures:
        return PacketTable(packets.empty())
    _load()
    workers = max(1, min(workers or os.cpu_count() or 1, len(captures)))
    # the C reading runs without the GIL, so files are read in parallel
    if workers > 1:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            raws = list(pool.map(lambda c: read_raw(Path(c.path)), captures))
    else:
        raws = [read_raw(Path(c.path)) for c in captures]
    return PacketTable(to_table(*merge(raws, [c.point for c in captures])),
                       sorted({f"{c.point}: {_warning_text(raw.warning, Path(c.path))}"
                               for c, raw in zip(captures, raws, strict=True) if raw.warning}))


def _warning_text(w: str, path: Path) -> str:
    if "truncated" in w:
        # libpcap: "truncated dump file; tried to read N captured bytes, only got M"
        return f"{path.name} truncated: the last packet was cut short (capture stopped mid-write)"
    return f"{path.name}: {w}"
