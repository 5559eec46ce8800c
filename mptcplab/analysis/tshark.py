"""Packet fields out of pcap files with tshark, into one pandas table.

Hand-written glue around tshark's field extraction (the fields are read as custom
columns, see Speed): tshark's dissectors (TCP, its MPTCP option dissector, ICMP with the
quoted header) do the parsing; this module picks the few fields the analysis needs,
switches off the tshark features it does not need, and parallelises.

Speed (measured with tshark 4.0 on the 2-core dev machine, 115k packets):
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
are the quoted packet's.
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
from typing import Any

import numpy as np
import pandas as pd

from mptcplab.errors import HostNotReady, RunFailed

from .model import CaptureFile

#: (tshark field, column name). Keep this short: every field costs time.
FIELDS: tuple[tuple[str, str], ...] = (
    ("frame.time_epoch", "t"),
    ("ip.src", "ip_src"),
    ("ip.dst", "ip_dst"),
    ("ip.len", "ip_len"),
    ("ip.ttl", "ip_ttl"),                       # tells the capture point nearest the sender
    ("tcp.srcport", "sport"),
    ("tcp.dstport", "dport"),
    ("tcp.len", "tlen"),
    ("tcp.seq_raw", "seq"),
    ("tcp.ack_raw", "ack"),
    ("tcp.flags", "flags"),
    ("tcp.options.mptcp.subtype", "mp"),        # "0" MP_CAPABLE, "1" MP_JOIN, "2" DSS, ...
    ("tcp.options.mptcp.sendkey", "sendkey"),   # MP_CAPABLE sender's key (uint64)
    ("tcp.options.mptcp.recvkey", "recvkey"),   # MP_CAPABLE receiver's key (third ACK)
    ("tcp.options.mptcp.recvtok", "recvtok"),   # MP_JOIN SYN: token of the receiver
    ("tcp.options.mptcp.ipv4", "addaddr"),      # ADD_ADDR address
    ("tcp.options.mptcp.rst_reason", "rst_reason"),  # MP_TCPRST reason code
    ("icmp.type", "icmp_type"),
    ("icmp.code", "icmp_code"),
    ("icmp.mtu", "icmp_mtu"),
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
)

# MPTCP option subtypes (RFC 8684 section 3)
MP_CAPABLE, MP_JOIN, DSS, ADD_ADDR, REMOVE_ADDR, MP_PRIO, MP_FAIL, MP_FASTCLOSE, MP_TCPRST = range(9)

# TCP flag bits
FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10

#: no chunk smaller than this (~20k packets at -s 128): a tshark start costs ~0.25 s
CHUNK_MIN_BYTES = 2_000_000

_STR_COLS = ("ip_src", "ip_dst", "ip_len", "ip_ttl", "mp", "sendkey", "recvkey", "recvtok", "addaddr",
             "rst_reason", "flags")
_NUM_COLS = ("sport", "dport", "tlen", "seq", "ack", "icmp_type", "icmp_code", "icmp_mtu")


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
    names = [c for _, c in FIELDS]
    if not raw.strip():
        return pd.DataFrame({c: pd.Series(dtype=float if c in _NUM_COLS or c == "t" else object)
                             for c in names})
    dtypes: dict[str, Any] = {**{c: object for c in _STR_COLS}, **{c: "float64" for c in ("t", *_NUM_COLS)}}
    # strings stay "" where tshark printed nothing; numbers become NaN
    return pd.read_csv(io.BytesIO(raw), sep="\t", header=None, names=names, quoting=3,
                       dtype=dtypes, keep_default_na=False,
                       na_values={c: [""] for c in ("t", *_NUM_COLS)}, engine="c")


def _parse_safe(raw: bytes) -> pd.DataFrame:
    try:
        return _parse(raw)
    except ValueError:
        # a numeric field with several occurrences (e.g. a tunnel): keep the first each
        names = [c for _, c in FIELDS]
        df = pd.read_csv(io.BytesIO(raw), sep="\t", header=None, names=names, quoting=3,
                         dtype=object, keep_default_na=False)
        for c in ("t", *_NUM_COLS):
            df[c] = pd.to_numeric(df[c].str.split(",", n=1).str[0], errors="coerce")
        return df


def _finish(df: pd.DataFrame, point: str) -> pd.DataFrame:
    """Split the outer/inner IP occurrences, decode flags, add the point."""
    n = len(df)
    icmp_rows = np.flatnonzero(df["icmp_type"].notna().to_numpy())
    for c in ("ip_src", "ip_dst", "ip_len", "ip_ttl"):
        outer = df[c].to_numpy(dtype=object, copy=True)
        inner = np.full(n, "", dtype=object)
        # only ICMP errors carry a second (quoted) IP header; they are few, so a loop is fine
        for i in icmp_rows:
            head, _, tail = str(outer[i]).partition(",")
            outer[i], inner[i] = head, tail
        q = "q_" + c[3:]
        if c in ("ip_len", "ip_ttl"):
            df[c] = pd.to_numeric(outer, errors="coerce")
            df[q] = pd.to_numeric(inner, errors="coerce")
        else:
            df[c] = outer
            df[q] = inner
    # few distinct flag values: decode each once
    uniq = {v: (int(v, 16) if v else 0) for v in df["flags"].unique()}
    df["flags"] = df["flags"].map(uniq).astype("int64")
    df["point"] = point
    return df


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
            server_port: int | None = None) -> pd.DataFrame:
    """All packets of all captures as one table, in capture order then time.

    Columns: t (epoch s), point, ip_src, ip_dst, ip_len, ip_ttl (outer), q_src, q_dst, q_len,
    q_ttl (the IP header quoted by an ICMP error, else ""/NaN), sport, dport, tlen, seq, ack (raw TCP
    numbers; on ICMP rows the quoted packet's), flags (int), mp (MPTCP subtypes, "2,3"),
    sendkey, recvkey, recvtok, addaddr, rst_reason (strings), icmp_type, icmp_code, icmp_mtu.
    ``attrs["warnings"]``: problems with the files that did not stop the extraction.
    """
    if shutil.which("tshark") is None:
        raise HostNotReady("tshark is not installed (Debian: apt-get install tshark)")
    for c in captures:
        if not Path(c.path).is_file():
            raise RunFailed(f"capture file missing: {c.path} ({c.point})")
    workers = workers or os.cpu_count() or 1
    def work(item: tuple[int, int, Path, int]) -> tuple[pd.DataFrame, str | None]:
        raw, warn = _run_tshark(item[2], server_port)
        return _parse_safe(raw), warn

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
    out = [_finish(pd.concat(fs, ignore_index=True), captures[i].point)
           for i, fs in sorted(chunks.items())]
    pk = pd.concat(out, ignore_index=True) if out else _finish(_parse(b""), "")
    pk.attrs["warnings"] = warnings
    return pk
