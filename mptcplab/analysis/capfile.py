"""Capture files the native reader cannot take as they are, made readable for it.

native/pcapread opens a file with libpcap and decodes Ethernet (VLAN and QinQ tags too),
Linux SLL and SLL2, raw IP and BSD loopback (NULL, LOOP). This module handles the rest
before or after that pass (pcapread.read_raw):

* gzip-compressed files (magic 1f 8b; tshark reads them, libpcap does not): decompressed
  into a temporary file;
* a file shorter than its pcap/pcapng header: "truncated", naming the file, instead of
  libpcap's generic message or an empty packet table;
* link types the C code does not decode (PPP and its framings, raw IP under OpenBSD's
  number 14) and pcapng files whose interfaces differ in link type or snap length (libpcap
  stops at the second interface): rewritten in Python into a nanosecond pcap of Ethernet
  frames, one per packet (so frame numbers stay), the IP packet behind a dummy header,
  anything else as an empty frame the reader skips.

The rewrite walks the file packet by packet in Python: slower than the C pass, so it runs
only for the files that need it.
"""

from __future__ import annotations

import gzip
import mmap
import shutil
import struct
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mptcplab.errors import RunFailed

GZIP_MAGIC = b"\x1f\x8b"
PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"
#: pcap magic -> (byte order, timestamp fraction units per second)
PCAP_MAGICS = {b"\xd4\xc3\xb2\xa1": ("<", 10**6), b"\xa1\xb2\xc3\xd4": (">", 10**6),
               b"\x4d\x3c\xb2\xa1": ("<", 10**9), b"\xa1\xb2\x3c\x4d": (">", 10**9)}
PCAP_HEADER, PCAPNG_HEADER = 24, 28          # file header; section header block, shortest
#: pcap_datalink() values (Linux numbering) that native/pcapread's frame() decodes
NATIVE_DLTS = frozenset({0, 1, 12, 108, 113, 228, 229, 276})
#: libpcap's pcapng reader stops here: "an interface has a type/snapshot length ... different
#: from ... the first interface"
MIXED_INTERFACES = "different from the"

#: the LINKTYPEs network_layer decodes
KNOWN_LINKTYPES = frozenset({0, 1, 9, 12, 14, 50, 51, 101, 108, 113, 204, 228, 229, 276})
ETH_IPV4, ETH_IPV6, ETH_OTHER = 0x0800, 0x86DD, 0x88B5     # 0x88B5: local experimental, skipped


def check_header(path: Path, head: bytes, shown: Path | None = None) -> None:
    """RunFailed "truncated" when ``head`` (the file's first bytes) is a pcap or pcapng
    header cut short. ``shown``: the name to give (the compressed file for a .gz)."""
    name = shown or path
    for magic, need, kind in ((PCAPNG_MAGIC, PCAPNG_HEADER, "pcapng"),) + tuple(
            (m, PCAP_HEADER, "pcap") for m in PCAP_MAGICS):
        if len(head) < need and (head.startswith(magic) or (len(head) < len(magic) and magic.startswith(head))):
            raise RunFailed(f"{name}: truncated: {len(head)} bytes, shorter than a {kind} file header ({need} bytes)")


@contextmanager
def readable(path: Path, tmp: Path) -> Iterator[tuple[Path, str]]:
    """The file to give libpcap for ``path`` and a warning ("" or why the data stops early):
    ``path`` itself, or its decompressed copy in ``tmp``. Checks the header (check_header)."""
    with open(path, "rb") as f:
        head = f.read(PCAPNG_HEADER)
    if not head.startswith(GZIP_MAGIC):
        check_header(path, head)
        yield path, ""
        return
    out = tmp / (path.name.removesuffix(".gz") or "capture")
    warning = ""
    with gzip.open(path, "rb") as src, open(out, "wb") as dst:
        try:
            shutil.copyfileobj(src, dst, 1 << 20)
        except (EOFError, zlib.error, gzip.BadGzipFile) as e:   # a .gz cut short keeps what it had
            warning = f"truncated compressed file ({e})"
    with open(out, "rb") as f:
        check_header(out, f.read(PCAPNG_HEADER), shown=path)
    yield out, warning


def needs_rewrite(linktype: int, warning: str) -> bool:
    """Whether the native pass could not decode the file: a link type it does not know, or
    a pcapng with interfaces of different link types or snap lengths."""
    return linktype not in NATIVE_DLTS or MIXED_INTERFACES in warning


# ---------------------------------------------------------------- link layers


def _ppp(d: bytes, off: int) -> tuple[int, int]:
    """(ethertype, offset of the IP header) of a PPP frame from ``off``: the HDLC address and
    control octets (ff 03) when present, a 1- or 2-octet protocol (RFC 1661 2, 6.5)."""
    if d[off:off + 2] == b"\xff\x03":
        off += 2
    if off >= len(d):
        return ETH_OTHER, off
    if d[off] & 1:                                     # protocol field compressed to one octet
        proto, off = d[off], off + 1
    else:
        proto, off = int.from_bytes(d[off:off + 2], "big"), off + 2
    return {0x21: ETH_IPV4, 0x57: ETH_IPV6}.get(proto, ETH_OTHER), off


def _raw_ip(d: bytes, off: int) -> tuple[int, int]:
    v = d[off] >> 4 if off < len(d) else 0
    return {4: ETH_IPV4, 6: ETH_IPV6}.get(v, ETH_OTHER), off


def _family(fam: int, off: int) -> tuple[int, int]:
    # AF_INET 2; AF_INET6 10 (Linux), 24 (NetBSD, OpenBSD), 28 (FreeBSD), 30 (macOS)
    return (ETH_IPV4 if fam == 2 else ETH_IPV6 if fam in (10, 24, 28, 30) else ETH_OTHER), off


def network_layer(linktype: int, d: bytes) -> tuple[int, int]:
    """(ethertype, offset) of the network-layer packet in a frame of LINKTYPE ``linktype``
    (tcpdump.org/linktypes.html); ETH_OTHER when it is not IP or the type is unknown."""
    n = len(d)
    if linktype == 1 and n >= 14:                      # Ethernet, 802.1Q / QinQ tags
        et, off = int.from_bytes(d[12:14], "big"), 14
        while et in (0x8100, 0x88A8, 0x9100) and off + 4 <= n:
            et, off = int.from_bytes(d[off + 2:off + 4], "big"), off + 4
        return (et if et in (ETH_IPV4, ETH_IPV6) else ETH_OTHER), off
    if linktype == 113 and n >= 16:                    # Linux cooked SLL
        et = int.from_bytes(d[14:16], "big")
        return (et if et in (ETH_IPV4, ETH_IPV6) else ETH_OTHER), 16
    if linktype == 276 and n >= 20:                    # Linux cooked SLL2
        et = int.from_bytes(d[0:2], "big")
        return (et if et in (ETH_IPV4, ETH_IPV6) else ETH_OTHER), 20
    if linktype in (12, 14, 101, 228, 229):            # raw IP: 12/14 are DLT_RAW on BSDs
        return _raw_ip(d, 0)
    if linktype == 0 and n >= 4:                       # BSD NULL: family in the writer's order
        fam = int.from_bytes(d[:4], "little")
        return _family(fam if fam <= 0xFFFF else int.from_bytes(d[:4], "big"), 4)
    if linktype == 108 and n >= 4:                     # OpenBSD LOOP: family big-endian
        return _family(int.from_bytes(d[:4], "big"), 4)
    if linktype in (9, 50):                            # PPP, PPP in HDLC-like framing
        return _ppp(d, 0)
    if linktype == 204 and n >= 1:                     # PPP with a direction octet first
        return _ppp(d, 1)
    if linktype == 51 and n >= 6:                      # PPPoE session header, then PPP
        return _ppp(d, 6)
    return ETH_OTHER, n


# ---------------------------------------------------------------- records


class _Cut(Exception):
    """The file ends inside a record or block."""


def _pcap_records(m: mmap.mmap | bytes) -> Iterator[tuple[int, int, int, bytes]]:
    """(linktype, ns since the epoch, original length, frame) of each record of a pcap."""
    order, units = PCAP_MAGICS[bytes(m[:4])]
    linktype = struct.unpack_from(order + "I", m, 20)[0] & 0xFFFF     # upper bits: FCS length
    off, n = PCAP_HEADER, len(m)
    while off < n:
        if off + 16 > n:
            raise _Cut(f"a record header at byte {off}")
        sec, frac, cap, orig = struct.unpack_from(order + "IIII", m, off)
        if off + 16 + cap > n:
            raise _Cut(f"the record at byte {off}")
        yield linktype, sec * 10**9 + frac * (10**9 // units), orig, bytes(m[off + 16:off + 16 + cap])
        off += 16 + cap


def _tsresol(v: int) -> tuple[int, int]:
    """if_tsresol (pcapng 4.2) as a fraction (numerator, denominator) of a second per unit."""
    return (1, 1 << (v & 0x7F)) if v & 0x80 else (1, 10 ** v)


def _pcapng_records(m: mmap.mmap | bytes) -> Iterator[tuple[int, int, int, bytes]]:
    """(linktype, ns since the epoch, original length, frame) of each packet of a pcapng,
    each decoded with its own interface's link type and timestamp resolution and offset."""
    off, n = 0, len(m)
    order = "<"
    ifaces: list[tuple[int, tuple[int, int], int]] = []      # linktype, tsresol, tsoffset (s)
    while off < n:
        if off + 12 > n:
            raise _Cut(f"a block header at byte {off}")
        if bytes(m[off:off + 4]) == PCAPNG_MAGIC:            # a section: its own byte order
            order = "<" if bytes(m[off + 8:off + 12]) == b"\x4d\x3c\x2b\x1a" else ">"
            ifaces = []
        btype, blen = struct.unpack_from(order + "II", m, off)
        if blen < 12 or off + blen > n:
            raise _Cut(f"the block at byte {off}")
        body = off + 8
        if btype == 1:                                       # interface description
            lt = struct.unpack_from(order + "H", m, body)[0]
            resol, tsoff = (1, 10**6), 0
            o, end = body + 8, off + blen - 4
            while o + 4 <= end:
                code, olen = struct.unpack_from(order + "HH", m, o)
                if code == 0:
                    break
                if code == 9 and olen >= 1:
                    resol = _tsresol(m[o + 4])
                elif code == 14 and olen >= 8:
                    tsoff = struct.unpack_from(order + "q", m, o + 4)[0]
                o += 4 + olen + (-olen % 4)
            ifaces.append((lt, resol, tsoff))
        elif btype in (6, 2, 3):                             # enhanced, obsolete, simple packet
            if btype == 6:
                iface, hi, lo, cap, orig = struct.unpack_from(order + "IIIII", m, body)
                data = body + 20
            elif btype == 2:
                iface, _, hi, lo, cap, orig = struct.unpack_from(order + "HHIIII", m, body)
                data = body + 20
            else:
                iface, hi, lo, orig = 0, 0, 0, struct.unpack_from(order + "I", m, body)[0]
                cap, data = min(orig, blen - 16), body + 4
            if iface >= len(ifaces):
                raise RunFailed(f"a packet names interface {iface}, of {len(ifaces)} described")
            lt, (num, den), tsoff = ifaces[iface]
            ts = ((hi << 32) | lo) * num * 10**9 // den + tsoff * 10**9
            yield lt, ts, orig, bytes(m[data:data + cap])
        off += blen


def rewrite(src: Path, dst: Path) -> tuple[int, str]:
    """``src`` (pcap or pcapng) as a nanosecond pcap of Ethernet frames in ``dst`` (module
    docstring): (packets written, "" or why the file stops early)."""
    with open(src, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m, open(dst, "wb") as out:
        records = _pcapng_records(m) if bytes(m[:4]) == PCAPNG_MAGIC else _pcap_records(m)
        out.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 262144, 1))
        count, ip, warning, buf = 0, 0, "", bytearray()
        types: set[int] = set()
        try:
            for lt, ts, orig, frame in records:
                et, off = network_layer(lt, frame)
                types.add(lt)
                ip += et != ETH_OTHER
                payload = frame[off:] if et != ETH_OTHER else b""
                buf += struct.pack("<IIII", ts // 10**9, ts % 10**9, 14 + len(payload),
                                   14 + max(orig - off, len(payload)))
                buf += b"\0" * 12 + et.to_bytes(2, "big") + payload
                count += 1
                if len(buf) > 1 << 20:
                    out.write(buf)
                    buf.clear()
        except _Cut as e:
            warning = f"truncated: the file ends inside {e}"
        except struct.error as e:
            warning = f"truncated: {e}"
        out.write(buf)
    unknown = sorted(types - KNOWN_LINKTYPES)
    if count and not ip and unknown:
        warning = warning or f"link type {', '.join(map(str, unknown))} not decoded: no IP packet read"
    return count, warning
