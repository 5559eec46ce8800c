"""The packet table: one row per captured packet, the input of the whole analysis.

Both readers produce exactly these columns with these dtypes: the native reader
(pcapread.py, the production path) and tshark (tshark.py, kept as the reference oracle that
the tests compare the native reader against field by field). Hand-written on purpose: one
place says what a column means, what "absent" looks like, and which tshark field it matches.

The table is a table.Table. Addresses, the capture point and the REMOVE_ADDR ids are
categorical (kind "c": table.Cat, codes into a list of strings): a table holds few distinct
values, and a code costs an integer per row instead of a Python string per row. The address
columns share one list of names, so their codes compare across columns.

Absent values: strings are ""; TCP/IP/ICMP numbers are float64 NaN (they fit a float64
exactly, and numpy code can test ``np.isnan``); MPTCP option values are nullable integers
(table.Nullable: values and a presence mask), since 64-bit keys and sequence numbers do not
fit a float64.

On a row of an ICMP error the TCP columns (ports, seq, ack, flags, the MPTCP option columns)
describe the TCP header quoted inside the error, as tshark reports them, and q_* the quoted IP
header.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .table import Cat, Kind, Nullable, Table

if TYPE_CHECKING:
    import pandas as pd

# MPTCP option subtypes (RFC 8684 section 3): bit n of the ``mp`` column
MP_CAPABLE, MP_JOIN, DSS, ADD_ADDR, REMOVE_ADDR, MP_PRIO, MP_FAIL, MP_FASTCLOSE, MP_TCPRST = range(9)
MP_NAMES = ("MP_CAPABLE", "MP_JOIN", "DSS", "ADD_ADDR", "REMOVE_ADDR", "MP_PRIO", "MP_FAIL",
            "MP_FASTCLOSE", "MP_TCPRST")

# TCP flag bits
FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10

#: column -> (kind, meaning [tshark field]). kind: "f" float64 with NaN, "c" categorical of
#: str ("" absent), "i" int64 (never absent), "u" nullable uint64, "n" nullable int64, "b" bool.
COLUMNS: dict[str, tuple[str, str]] = {
    "t": ("f", "capture time, epoch seconds [frame.time_epoch]"),
    "point": ("c", "capture point of the file, e.g. client:eth1"),
    "frame": ("i", "1-based packet number in its file [frame.number]"),
    "ip_src": ("c", "outer IP source [ip.src / ipv6.src]"),
    "ip_dst": ("c", "outer IP destination [ip.dst / ipv6.dst]"),
    "ip_len": ("f", "IPv4 total length / IPv6 payload length + 40 [ip.len]"),
    "ip_ttl": ("f", "IPv4 TTL / IPv6 hop limit [ip.ttl / ipv6.hlim]"),
    "q_src": ("c", "source of the IP header quoted by an ICMP error"),
    "q_dst": ("c", "destination of the quoted IP header"),
    "q_len": ("f", "length field of the quoted IP header"),
    "q_ttl": ("f", "TTL of the quoted IP header"),
    "sport": ("f", "TCP source port [tcp.srcport]"),
    "dport": ("f", "TCP destination port [tcp.dstport]"),
    "tlen": ("f", "TCP payload length from the IP length [tcp.len]"),
    "seq": ("f", "raw TCP sequence number [tcp.seq_raw]"),
    "ack": ("f", "raw TCP acknowledgment number [tcp.ack_raw]"),
    "flags": ("i", "TCP flags, 12 bits; 0 without TCP [tcp.flags]"),
    "win": ("f", "raw TCP window [tcp.window_size_value]"),
    "tsval": ("f", "TCP timestamps option TSval [tcp.options.timestamp.tsval]"),
    "tsecr": ("f", "TCP timestamps option TSecr [tcp.options.timestamp.tsecr]"),
    "mss": ("f", "TCP MSS option's value, SYN and SYN/ACK [tcp.options.mss_val]"),
    "mp": ("i", "bit n set: an MPTCP option of subtype n is present [tcp.options.mptcp.subtype]"),
    "sendkey": ("u", "MP_CAPABLE sender's key [tcp.options.mptcp.sendkey]"),
    "recvkey": ("u", "MP_CAPABLE receiver's key, MP_FASTCLOSE key [tcp.options.mptcp.recvkey]"),
    "recvtok": ("n", "MP_JOIN SYN receiver's token [tcp.options.mptcp.recvtok]"),
    "mpc_ver": ("n", "MP_CAPABLE version [tcp.options.mptcp.version]"),
    "mpc_flags": ("n", "MP_CAPABLE flags octet, 0x80 = checksum required [tcp.options.mptcp.flags]"),
    "data_ack": ("u", "DSS data ACK as sent, 4 or 8 octets [tcp.options.mptcp.rawdataack]"),
    "dack64": ("b", "the data ACK was 8 octets [tcp.options.mptcp.dataack8.flag]"),
    "dsn": ("u", "DSS data sequence number as sent [tcp.options.mptcp.rawdataseqno]"),
    "dsn64": ("b", "the DSN was 8 octets [tcp.options.mptcp.dseqn8.flag]"),
    "ssn": ("n", "DSS subflow sequence number, relative to the ISN [tcp.options.mptcp.subflowseqno]"),
    "dll": ("n", "data-level length: DSS mapping or MP_CAPABLE with data [tcp.options.mptcp.datalvllen]"),
    "csum": ("b", "the DSS (or MP_CAPABLE with data) carried a checksum [tcp.options.mptcp.checksum]"),
    "datafin": ("b", "DSS DATA_FIN flag [tcp.options.mptcp.datafin.flag]"),
    "addr_id": ("n", "address id of MP_JOIN SYN(/ACK), ADD_ADDR or MP_PRIO v0 [tcp.options.mptcp.addrid]"),
    "backup": ("n", "B flag of MP_JOIN SYN(/ACK) or MP_PRIO [tcp.options.mptcp.backup.flag]"),
    "addaddr": ("c", "ADD_ADDR address [tcp.options.mptcp.ipv4 / ipv6]"),
    "add_port": ("n", "ADD_ADDR port [tcp.options.mptcp.port]"),
    "add_echo": ("b", "ADD_ADDR echo flag [tcp.options.mptcp.echo]"),
    "rm_ids": ("c", "REMOVE_ADDR address ids, comma-separated [tcp.options.mptcp.addrid]"),
    "fail_dsn": ("u", "MP_FAIL data sequence number"),
    "rst_reason": ("n", "MP_TCPRST reason [tcp.options.mptcp.rst_reason]"),
    "rst_flags": ("n", "MP_TCPRST flags U V W T"),
    "icmp_type": ("f", "ICMP / ICMPv6 type [icmp.type / icmpv6.type]"),
    "icmp_code": ("f", "ICMP / ICMPv6 code [icmp.code / icmpv6.code]"),
    "icmp_mtu": ("f", "next-hop MTU of frag needed / packet too big [icmp.mtu / icmpv6.mtu]"),
    "icmp6": ("b", "the ICMP columns are ICMPv6"),
    "malformed": ("b", "a header or option was inconsistent or cut short by the snaplen"),
}

_KINDS: dict[str, Kind] = {"f": "float", "c": "cat", "i": "int", "u": "unullable", "n": "nullable", "b": "bool"}
ADDRESS_COLUMNS = ("ip_src", "ip_dst", "q_src", "q_dst", "addaddr")
CATEGORICAL = tuple(c for c, (k, _) in COLUMNS.items() if k == "c")


class PacketTable(Table):
    """The packet table as a reader returns it, with ``warnings``: problems with the files
    that did not stop the reading (a capture cut short mid-packet)."""

    __slots__ = ("warnings",)

    def __init__(self, table: Table, warnings: list[str] | None = None) -> None:
        super().__init__({c: table.column(c) for c in table.columns})
        self.warnings: list[str] = list(warnings or [])

    def to_pandas(self) -> pd.DataFrame:
        """The DataFrame, its ``attrs["warnings"]`` the reader's warnings."""
        df = super().to_pandas()
        df.attrs["warnings"] = list(self.warnings)
        return df


def kind_of(col: str) -> Kind:
    """The table.Table column kind of a packet table column."""
    return _KINDS[COLUMNS[col][0]]


def empty() -> Table:
    """A packet table without rows."""
    return Table.empty({c: kind_of(c) for c in COLUMNS})


def categorize(strings: dict[str, list[object]]) -> dict[str, Cat]:
    """The "c" columns from their values (str; None or NaN read as ""), the address columns
    over one shared list of names ("" first, then sorted). For tables built from strings
    (tshark, tests); the native reader builds its codes directly."""
    def text(v: object) -> str:
        return "" if v is None or (isinstance(v, float) and v != v) else str(v)

    addrs = ["", *sorted({text(v) for c in ADDRESS_COLUMNS for v in strings[c] if text(v)})]
    out: dict[str, Cat] = {}
    for c in CATEGORICAL:
        vals = [text(v) for v in strings[c]]
        names = addrs if c in ADDRESS_COLUMNS else ["", *sorted({v for v in vals if v})]
        out[c] = Cat.of(vals, names)
    return out


def address_codes(pk: Table, *cols: str) -> tuple[list[np.ndarray], np.ndarray]:
    """Integer codes of address columns over one shared list of addresses, and that list."""
    cats = [pk.cat(c) for c in cols]
    first = cats[0].names
    if all(c.names is first or np.array_equal(c.names, first) for c in cats):
        return [c.codes.astype(np.int64) for c in cats], first
    names = list(dict.fromkeys(n for c in cats for n in c.names.tolist()))
    index = {n: i for i, n in enumerate(names)}
    return ([np.asarray([index[n] for n in c.names.tolist()], dtype=np.int64)[c.codes] for c in cats],
            np.asarray(names, dtype=object))


def nullable(values: np.ndarray, present: np.ndarray, unsigned: bool = False) -> Nullable:
    """A nullable integer column from values and a presence mask, without a copy where the
    types already fit (the native reader leaves 0 under an absent field)."""
    dt = np.uint64 if unsigned else np.int64
    return Nullable(values.astype(dt, copy=False), present.astype(bool, copy=False))


def frag_needed(pk: Table) -> np.ndarray:
    """Rows that are ICMP "fragmentation needed" (v4 type 3 code 4) or ICMPv6 "packet too
    big" (type 2)."""
    ty = pk.arr("icmp_type")
    code = pk.arr("icmp_code")
    v6 = pk.arr("icmp6")
    return np.where(v6, ty == 2, (ty == 3) & (code == 4))


def _absent(kind: str) -> object:
    return {"f": np.nan, "c": "", "i": 0, "u": None, "n": None, "b": False}[kind]


def table(rows: list[dict[str, object]]) -> Table:
    """A packet table from hand-written rows (tests, notebooks): each row gives any subset
    of COLUMNS, the rest is absent; ``mp`` is the bit mask."""
    unknown = {k for r in rows for k in r} - set(COLUMNS)
    if unknown:
        raise KeyError(f"not packet table columns: {sorted(unknown)}")
    strings: dict[str, list[object]] = {}
    data: dict[str, np.ndarray | Cat | Nullable] = {}
    for c, (kind, _) in COLUMNS.items():
        vals = [r.get(c, _absent(kind)) for r in rows]
        if kind == "c":
            strings[c] = vals
        elif kind in ("u", "n"):
            data[c] = Nullable.of([None if v is None or v == "" else int(v) for v in vals],  # type: ignore[call-overload]
                                  unsigned=kind == "u")
        else:
            dt = {"f": np.float64, "i": np.int64, "b": bool}[kind]
            data[c] = np.asarray(vals, dtype=dt) if vals else np.zeros(0, dtype=dt)
    data.update(categorize(strings))
    return Table({c: data[c] for c in COLUMNS})
