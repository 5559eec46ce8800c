"""The native reader checked against tshark, field by field.

tshark's dissectors are the reference: the tests (unit: tests/data and hand-made packets;
integration: a real two-path MPTCP run) read the same files with both readers and require
``differences`` to be empty. Hand-written; the few places where the two legitimately differ
are listed here, each with the reason, so nothing else can differ silently.
"""

from __future__ import annotations

import subprocess
from collections.abc import Collection, Sequence
from pathlib import Path

import numpy as np

from mptcplab.errors import RunFailed

from . import pcapread, tshark
from .model import CaptureFile
from .packets import COLUMNS
from .table import Cat, Nullable, Table

#: (column, only on ICMP rows): tshark does not report ``tcp.seq_raw`` / ``tcp.len`` for the
#: TCP header quoted inside an ICMP error; the native reader does (the quoted segment's
#: sequence number tells which segment provoked the error)
ICMP_ONLY_NATIVE = ("seq", "tlen")

#: tshark 4.0 does not show the 2-byte checksum at the end of a DSS mapping (observed on a
#: 20-byte DSS built per RFC 8684: 4-byte data ACK and DSN, SSN, length, checksum); the
#: checksum flag is compared on MP_CAPABLE rows only, and the DSS case is checked against the
#: RFC layout in tests/unit/test_pcapread.py
DSS_CSUM_NOT_SHOWN = "csum"


def _values(table: Table, col: str) -> tuple[np.ndarray, np.ndarray]:
    """(values as an object array, absent mask) of a column of either reader's table."""
    c = table.column(col)
    if isinstance(c, Cat):
        return c.strings(), np.zeros(len(c), dtype=bool)
    if isinstance(c, Nullable):
        vals = np.empty(len(c), dtype=object)
        vals[:] = c.values.tolist()
        return vals, ~c.present
    absent = np.isnan(c) if c.dtype.kind == "f" else np.zeros(len(c), dtype=bool)
    vals = np.empty(len(c), dtype=object)
    vals[:] = c.tolist()
    return vals, absent


def differences(native: Table, oracle: Table, limit: int = 5) -> list[str]:
    """One line per column whose values differ (with up to ``limit`` examples), empty when the
    tables agree. Times must agree within 1 us (both are float64 epoch seconds, rounded from
    nanoseconds along different routes)."""
    out: list[str] = []
    if len(native) != len(oracle):
        return [f"packet count: native {len(native)}, tshark {len(oracle)}"]
    icmp = ~np.isnan(oracle.arr("icmp_type"))
    points, frames = native.strings("point"), native.arr("frame")
    for col in COLUMNS:
        if col in tshark.NOT_FROM_TSHARK:
            continue
        xa, na = _values(native, col)
        xb, nb = _values(oracle, col)
        if col == "t":
            bad = ~np.isclose(native.arr("t"), oracle.arr("t"), atol=1e-6, rtol=0)
        else:
            xa[na] = None
            xb[nb] = None
            bad = (na != nb) | (xa != xb)
            if col in ICMP_ONLY_NATIVE:
                bad &= ~icmp
            if col == DSS_CSUM_NOT_SHOWN:
                bad &= ~native.nullable("dsn").present
        if bad.any():
            rows = np.flatnonzero(bad)[:limit]
            ex = ", ".join(f"{points[i]}#{frames[i]}: {xa[i]!r} vs {xb[i]!r}" for i in rows)
            out.append(f"{col}: {int(bad.sum())} packets differ (native vs tshark: {ex})")
    return out


def compare_files(captures: Sequence[CaptureFile]) -> list[str]:
    """Read ``captures`` with both readers; the differences (see ``differences``)."""
    return differences(pcapread.extract(captures), tshark.extract(captures, workers=1))


#: tshark's own MPTCP analysis: mappings tracked per connection, data re-sent on any subflow
TSHARK_MPTCP_PREFS = ("mptcp.analyze_mptcp:TRUE", "mptcp.analyze_mappings:TRUE",
                      "mptcp.intersubflows_retransmission:TRUE", "mptcp.relative_sequence_numbers:TRUE")


def tshark_reinjections(paths: Sequence[Path], tmp: Path,
                        endpoints: Collection[str] | None = None) -> list[tuple[float, float]]:
    """(time of the re-sending packet, time of the packet that first sent the data), epoch
    seconds, for every packet tshark marks ``mptcp.reinjection_of``. The files (one per
    capture point, e.g. one per subflow) are merged by time into one (in ``tmp``) first:
    tshark sees a re-send on another subflow only when both subflows are in one file.

    tshark marks re-sends in every MPTCP connection of the files; ``endpoints`` ("addr:port",
    e.g. the client ends of one connection's subflows, ``SubflowResult.name``) keeps the marks
    on packets to or from those only. The analysis looks at one connection: iperf3's control
    connection is MPTCP too, and its server re-sends a state byte on the other subflow when an
    ACK is late (a CI run had such a mark 0.2 s before the data connection's first)."""
    path = Path(paths[0])
    if len(paths) > 1:
        path = tmp / "merged.pcap"
        m = subprocess.run(["mergecap", "-F", "pcap", "-w", str(path), *map(str, paths)],
                           capture_output=True, text=True)
        if m.returncode != 0:
            raise RunFailed(f"mergecap failed: {m.stderr.strip()}")
    cmd = ["tshark", "-n", "-r", str(path), "-T", "fields", "-e", "frame.number", "-e", "frame.time_epoch",
           "-e", "mptcp.reinjection_of", "-e", "ip.src", "-e", "tcp.srcport", "-e", "ip.dst", "-e", "tcp.dstport"]
    for p in TSHARK_MPTCP_PREFS:
        cmd += ["-o", p]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode not in (0, 2):      # 2: the capture was cut short, the packets before count
        raise RunFailed(f"tshark failed on {path}: {r.stderr.strip()}")
    keep = None if endpoints is None else set(endpoints)
    times: dict[int, float] = {}
    pairs: list[tuple[int, int]] = []
    for line in r.stdout.splitlines():
        f = line.split("\t")
        if len(f) < 3 or not f[0]:
            continue
        times[int(f[0])] = float(f[1])
        # several frames when the range was sent in several segments: the earliest counts
        if f[2] and (keep is None or (len(f) >= 7 and {f"{f[3]}:{f[4]}", f"{f[5]}:{f[6]}"} & keep)):
            pairs.append((int(f[0]), min(int(x) for x in f[2].split(","))))
    return [(times[a], times[b]) for a, b in pairs]
