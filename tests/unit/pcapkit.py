"""Hand-made capture files: pcap writers and packet builders for the reader tests.

Every MPTCP option is built from its RFC 8684 layout (section 3), independently of the
reader's C code, so a test that reads back what was built checks the decoder against the
specification, and tshark (the oracle) checks both.
"""

from __future__ import annotations

import ipaddress
import struct
from collections.abc import Sequence
from pathlib import Path

LINKTYPE_ETHERNET, LINKTYPE_RAW, LINKTYPE_SLL, LINKTYPE_SLL2 = 1, 101, 113, 276


def write_pcap(path: Path, frames: list[tuple[float, bytes]], linktype: int = LINKTYPE_ETHERNET,
               nano: bool = False, snaplen: int = 65535, cut_last: int = 0) -> Path:
    """A classic pcap file; each frame is cut to ``snaplen``; ``cut_last``: drop that many
    bytes from the end of the file (a capture stopped mid-write)."""
    magic = 0xA1B23C4D if nano else 0xA1B2C3D4
    out = bytearray(struct.pack("<IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype))
    for ts, data in frames:
        sec = int(ts)
        frac = round((ts - sec) * (1e9 if nano else 1e6))
        cap = data[:snaplen]
        out += struct.pack("<IIII", sec, frac, len(cap), len(data)) + cap
    if cut_last:
        del out[-cut_last:]
    path.write_bytes(bytes(out))
    return path


def ip_bytes(a: str) -> bytes:
    return ipaddress.ip_address(a).packed


def _csum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def tcp(sport: int, dport: int, seq: int, ack: int, flags: int, opts: bytes = b"",
        payload: bytes = b"", win: int = 502) -> bytes:
    """A TCP header (options padded with NOPs to a multiple of 4) and its payload; the
    checksum is left 0 (tshark does not verify it by default)."""
    opts = opts + b"\x01" * (-len(opts) % 4)
    doff = (20 + len(opts)) // 4
    return struct.pack("!HHIIBBHHH", sport, dport, seq % 2**32, ack % 2**32, doff << 4, flags,
                       win, 0, 0) + opts + payload


def ipv4(src: str, dst: str, proto: int, payload: bytes, ttl: int = 64, total: int | None = None,
         frag_offset: int = 0) -> bytes:
    total = total if total is not None else 20 + len(payload)
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, 1, 0x4000 | frag_offset, ttl, proto, 0,
                    ip_bytes(src), ip_bytes(dst))
    h = h[:10] + struct.pack("!H", _csum(h)) + h[12:]
    return h + payload


def ipv6(src: str, dst: str, nh: int, payload: bytes, hlim: int = 64,
         ext: list[tuple[int, bytes]] | None = None) -> bytes:
    """``ext``: extension headers (their own next-header value, body padded to 8 bytes)."""
    body = b""
    chain = [h for h, _ in ext or []] + [nh]
    for i, (_, data) in enumerate(ext or []):
        data = data + b"\0" * (-(len(data) + 2) % 8)
        body += bytes([chain[i + 1], (len(data) + 2) // 8 - 1]) + data
    first = chain[0]
    return struct.pack("!IHBB16s16s", 6 << 28, len(body) + len(payload), first, hlim,
                       ip_bytes(src), ip_bytes(dst)) + body + payload


def eth(payload: bytes, ethertype: int = 0x0800, vlan: int | None = None) -> bytes:
    tag = struct.pack("!HH", 0x8100, vlan) if vlan is not None else b""
    return b"\x02\0\0\0\0\x01" + b"\x02\0\0\0\0\x02" + tag + struct.pack("!H", ethertype) + payload


def sll(payload: bytes, ethertype: int = 0x0800) -> bytes:
    return struct.pack("!HHH8sH", 0, 1, 6, b"\x02\0\0\0\0\x01\0\0", ethertype) + payload


def sll2(payload: bytes, ethertype: int = 0x0800) -> bytes:
    return struct.pack("!HHIHBB8s", ethertype, 0, 3, 1, 0, 6, b"\x02\0\0\0\0\x01\0\0") + payload


def icmp_frag_needed(mtu: int, quoted: bytes) -> bytes:
    body = struct.pack("!BBHHH", 3, 4, 0, 0, mtu) + quoted
    return body[:2] + struct.pack("!H", _csum(body)) + body[4:]


def icmp6_too_big(mtu: int, quoted: bytes) -> bytes:
    return struct.pack("!BBHI", 2, 0, 0, mtu) + quoted


# --- MPTCP options (kind 30), RFC 8684 section 3 ------------------------------------------

def timestamps(tsval: int, tsecr: int) -> bytes:
    """The TCP timestamps option (RFC 7323 section 3), with the two NOPs Linux puts before it."""
    return b"\x01\x01" + struct.pack("!BBII", 8, 10, tsval % 2**32, tsecr % 2**32)


def _opt(sub: int, low: int, body: bytes) -> bytes:
    return bytes([30, 3 + len(body), (sub << 4) | low]) + body


def mp_capable(ver: int = 1, flags: int = 0x01, sendkey: int | None = None, recvkey: int | None = None,
               dll: int | None = None, csum: int | None = None) -> bytes:
    body = bytes([flags])
    if sendkey is not None:
        body += struct.pack("!Q", sendkey)
    if recvkey is not None:
        body += struct.pack("!Q", recvkey)
    if dll is not None:
        body += struct.pack("!H", dll)
    if csum is not None:
        body += struct.pack("!H", csum)
    return _opt(0, ver, body)


def mp_join_syn(token: int, nonce: int = 7, addr_id: int = 1, backup: bool = False) -> bytes:
    return _opt(1, int(backup), bytes([addr_id]) + struct.pack("!II", token, nonce))


def mp_join_synack(hmac64: int = 0x1122334455667788, nonce: int = 9, addr_id: int = 0, backup: bool = False) -> bytes:
    return _opt(1, int(backup), bytes([addr_id]) + struct.pack("!QI", hmac64, nonce))


def mp_join_ack() -> bytes:
    return _opt(1, 0, b"\0" + bytes(range(20)))


def dss(data_ack: int | None = None, ack64: bool = True, dsn: int | None = None, dsn64: bool = True,
        ssn: int = 0, dll: int = 0, csum: int | None = None, fin: bool = False) -> bytes:
    fl = (0x01 if data_ack is not None else 0) | (0x02 if data_ack is not None and ack64 else 0)
    fl |= (0x04 if dsn is not None else 0) | (0x08 if dsn is not None and dsn64 else 0) | (0x10 if fin else 0)
    body = bytes([fl])
    if data_ack is not None:
        body += struct.pack("!Q" if ack64 else "!I", data_ack)
    if dsn is not None:
        body += struct.pack("!Q" if dsn64 else "!I", dsn) + struct.pack("!IH", ssn, dll)
        if csum is not None:
            body += struct.pack("!H", csum)
    return _opt(2, 0, body)


def add_addr(addr: str, addr_id: int, port: int | None = None, hmac: int | None = None, echo: bool = False) -> bytes:
    body = bytes([addr_id]) + ip_bytes(addr)
    if port is not None:
        body += struct.pack("!H", port)
    if hmac is not None:
        body += struct.pack("!Q", hmac)
    return _opt(3, int(echo), body)


def remove_addr(ids: list[int]) -> bytes:
    return _opt(4, 0, bytes(ids))


def mp_prio(backup: bool) -> bytes:
    return _opt(5, int(backup), b"")


def mp_fail(dsn: int) -> bytes:
    return _opt(6, 0, b"\0" + struct.pack("!Q", dsn))


def mp_fastclose(key: int) -> bytes:
    return _opt(7, 0, b"\0" + struct.pack("!Q", key))


def mp_tcprst(flags: int, reason: int) -> bytes:
    return _opt(8, flags, bytes([reason]))


# --- more link layers and pcapng (tcpdump.org/linktypes.html, pcapng draft section 4) -----

LINKTYPE_NULL, LINKTYPE_PPP, LINKTYPE_LOOP = 0, 9, 108


def ppp(payload: bytes, proto: int = 0x21, hdlc: bool = True, compressed: bool = False) -> bytes:
    """A PPP frame: the ff 03 address/control octets (``hdlc``), a 1-octet (``compressed``)
    or 2-octet protocol (0x21 IPv4, 0x57 IPv6)."""
    return (b"\xff\x03" if hdlc else b"") + (bytes([proto]) if compressed else struct.pack("!H", proto)) + payload


def null(payload: bytes, family: int = 2, big: bool = False) -> bytes:
    """BSD loopback: the address family in the writer's byte order (LOOP: big-endian)."""
    return struct.pack(">I" if big else "<I", family) + payload


def _block(btype: int, body: bytes) -> bytes:
    body += b"\0" * (-len(body) % 4)
    n = 12 + len(body)
    return struct.pack("<II", btype, n) + body + struct.pack("<I", n)


def write_pcapng(path: Path, interfaces: Sequence[tuple[int, int, int | None]],
                 packets: list[tuple[int, float, bytes]], cut_last: int = 0) -> Path:
    """A pcapng file: one interface description per (linktype, snaplen, if_tsresol or None),
    one enhanced packet block per (interface, time, frame)."""
    out = bytearray(_block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1)))
    units = []
    for lt, snap, resol in interfaces:
        opts = b""
        if resol is not None:
            opts = struct.pack("<HH", 9, 1) + bytes([resol]) + b"\0\0\0" + struct.pack("<HH", 0, 0)
        out += _block(1, struct.pack("<HHI", lt, 0, snap) + opts)
        units.append(10 ** (resol if resol is not None else 6))
    for iface, ts, data in packets:
        cap = data[:interfaces[iface][1]]
        u = round(ts * units[iface])
        out += _block(6, struct.pack("<IIIII", iface, u >> 32, u & 0xFFFFFFFF, len(cap), len(data)) + cap)
    if cut_last:
        del out[-cut_last:]
    path.write_bytes(bytes(out))
    return path
