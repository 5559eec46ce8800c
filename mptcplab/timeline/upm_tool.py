"""The userspace path manager's commands, as a program run in a node (``python -I
upm_tool.py ...``): announce an address, remove one, create a subflow, destroy one, for
the MPTCP connection with a given token (the kernel's ``mptcp_pm`` generic netlink
family, commands ANNOUNCE, REMOVE, SUBFLOW_CREATE, SUBFLOW_DESTROY of
include/uapi/linux/mptcp_pm.h); and ``endpoint-add`` (ADD_ADDR), an in-kernel path
manager endpoint with flags iproute2 6.1 cannot set (``laminar``, Linux 6.18).

Written by hand, stdlib only, because no packaged tool sends these commands: iproute2
(6.1 here) has ``ip mptcp endpoint|limits|monitor`` only, the kernel's own ``pm_nl_ctl``
is a selftest program that no distribution ships, mptcpd is a daemon with plug-ins and no
command line for them, and pyroute2's MPTCP class covers endpoints and limits. It runs
where the engine's Python runs (a network namespace sees the host's files; a
containerlab node gets the engine's directory bound in), so it imports nothing of the
project. The arguments mirror ``pm_nl_ctl``'s (``ann``, ``rem``, ``csf``, ``dsf``, ``add``)
with long names; a refused command exits 1 with the kernel's errno and extended-ack message
on stderr, so events.csv records why.
"""

from __future__ import annotations

import argparse
import errno
import ipaddress
import os
import re
import socket
import struct
import sys
from collections.abc import Sequence

NETLINK_GENERIC = 16
SOL_NETLINK = 270
NETLINK_CAP_ACK = 10
NETLINK_EXT_ACK = 11
NLM_F_REQUEST, NLM_F_ACK = 0x1, 0x4
NLMSG_ERROR = 2
NLM_F_ACK_TLVS = 0x200
NLMSGERR_ATTR_MSG = 1
NLA_F_NESTED = 0x8000
GENL_ID_CTRL, CTRL_CMD_GETFAMILY = 0x10, 3
CTRL_ATTR_FAMILY_ID, CTRL_ATTR_FAMILY_NAME = 1, 2

MPTCP_PM_NAME, MPTCP_PM_VER = "mptcp_pm", 1
CMD_ADD_ADDR = 1
CMD_ANNOUNCE, CMD_REMOVE, CMD_SUBFLOW_CREATE, CMD_SUBFLOW_DESTROY = 8, 9, 10, 11
ATTR_ADDR, ATTR_TOKEN, ATTR_LOC_ID, ATTR_ADDR_REMOTE = 1, 4, 5, 6
ADDR_FAMILY, ADDR_ID, ADDR_ADDR4, ADDR_ADDR6, ADDR_PORT, ADDR_FLAGS, ADDR_IF_IDX = 1, 2, 3, 4, 5, 6, 7
FLAG_SIGNAL, FLAG_BACKUP = 1 << 0, 1 << 2
#: MPTCP_PM_ADDR_FLAG_* of include/uapi/linux/mptcp.h, by the names ``ip mptcp`` and
#: ``pm_nl_ctl`` give them (``implicit``, bit 4, is the kernel's own: it refuses it)
ENDPOINT_FLAGS = {"signal": 1 << 0, "subflow": 1 << 1, "backup": 1 << 2, "fullmesh": 1 << 3, "laminar": 1 << 5}
#: the first release whose in-kernel path manager acts on a flag; an older kernel takes the
#: bit without a word and ignores it (net/mptcp/pm_kernel.c, fill_local_laminar_endp)
FLAG_SINCE = {"laminar": (6, 18)}


def attr(kind: int, payload: bytes) -> bytes:
    """One netlink attribute, padded to 4 bytes."""
    raw = struct.pack("=HH", 4 + len(payload), kind) + payload
    return raw + b"\0" * (-len(raw) % 4)


def address(kind: int, addr: str, *, addr_id: int | None = None, port: int | None = None,
            flags: int | None = None, ifindex: int | None = None) -> bytes:
    """A nested address (MPTCP_PM_ADDR_ATTR_*): the address in network order, the port in
    host order (the kernel applies htons to it)."""
    ip = ipaddress.ip_address(addr)
    body = attr(ADDR_FAMILY, struct.pack("=H", socket.AF_INET if ip.version == 4 else socket.AF_INET6))
    body += attr(ADDR_ADDR4 if ip.version == 4 else ADDR_ADDR6, ip.packed)
    if addr_id is not None:
        body += attr(ADDR_ID, struct.pack("=B", addr_id))
    if port is not None:
        body += attr(ADDR_PORT, struct.pack("=H", port))
    if flags is not None:
        body += attr(ADDR_FLAGS, struct.pack("=I", flags))
    if ifindex is not None:
        body += attr(ADDR_IF_IDX, struct.pack("=i", ifindex))
    return attr(kind | NLA_F_NESTED, body)


def message(family: int, cmd: int, attrs: bytes, version: int = MPTCP_PM_VER, seq: int = 1) -> bytes:
    payload = struct.pack("=BBH", cmd, version, 0) + attrs
    return struct.pack("=IHHII", 16 + len(payload), family, NLM_F_REQUEST | NLM_F_ACK, seq, 0) + payload


class NetlinkError(Exception):
    def __init__(self, code: int, text: str) -> None:
        super().__init__(f"{os.strerror(code)} (errno {code})" + (f": {text}" if text else ""))
        self.code = code


def _attrs(data: bytes) -> dict[int, bytes]:
    out: dict[int, bytes] = {}
    i = 0
    while i + 4 <= len(data):
        length, kind = struct.unpack_from("=HH", data, i)
        if length < 4:
            break
        out[kind & 0x3FFF] = data[i + 4:i + length]
        i += (length + 3) & ~3
    return out


def parse_reply(data: bytes, seq: int) -> tuple[list[tuple[int, bytes]], bool]:
    """The messages of one datagram that answer request ``seq``, as (type, payload), and
    whether its ack came (the end of the answer). An error raises NetlinkError, with the
    extended ack's text when the kernel gave one; messages of other requests (a late ack)
    are skipped."""
    out: list[tuple[int, bytes]] = []
    done = False
    i = 0
    while i + 16 <= len(data):
        length, kind, flags, got_seq, _pid = struct.unpack_from("=IHHII", data, i)
        if length < 16:
            break
        body = data[i + 16:i + length]
        i += (length + 3) & ~3
        if got_seq != seq:
            continue
        if kind != NLMSG_ERROR:
            out.append((kind, body))
            continue
        (code,) = struct.unpack_from("=i", body)
        if code:
            text = ""
            if flags & NLM_F_ACK_TLVS:  # capped: only the request's header follows the errno
                text = _attrs(body[4 + 16:]).get(NLMSGERR_ATTR_MSG, b"").rstrip(b"\0").decode(errors="replace")
            raise NetlinkError(-code, text)
        done = True
    return out, done


class GenlSocket:
    """A generic netlink socket of the calling process's network namespace."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_GENERIC)
        for opt in (NETLINK_CAP_ACK, NETLINK_EXT_ACK):
            try:
                self.sock.setsockopt(SOL_NETLINK, opt, 1)
            except OSError:  # an old kernel: errors without their text
                pass
        self.sock.bind((0, 0))
        self._seq = 0

    def request(self, family: int, cmd: int, attrs: bytes, version: int = MPTCP_PM_VER) -> list[tuple[int, bytes]]:
        self._seq += 1
        self.sock.send(message(family, cmd, attrs, version, self._seq))
        out: list[tuple[int, bytes]] = []
        done = False
        while not done:  # the answer, then the ack (NLM_F_ACK), maybe in two datagrams
            got, done = parse_reply(self.sock.recv(65536), self._seq)
            out += got
        return out

    def family(self, name: str) -> int:
        reply = self.request(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, attr(CTRL_ATTR_FAMILY_NAME, name.encode() + b"\0"),
                             version=1)
        for _kind, body in reply:
            fid = _attrs(body[4:]).get(CTRL_ATTR_FAMILY_ID)
            if fid is not None:
                return int(struct.unpack("=H", fid[:2])[0])
        raise NetlinkError(errno.ENOENT, f"no generic netlink family {name!r}")


def token_attr(token: int) -> bytes:
    return attr(ATTR_TOKEN, struct.pack("=I", token))


def endpoint_flags(names: str) -> int:
    """``subflow,laminar`` as MPTCP_PM_ADDR_FLAG_* bits (ValueError naming an unknown one)."""
    bits = 0
    for name in filter(None, names.split(",")):
        if name not in ENDPOINT_FLAGS:
            raise ValueError(f"{name!r} is not an endpoint flag ({', '.join(ENDPOINT_FLAGS)})")
        bits |= ENDPOINT_FLAGS[name]
    return bits


def kernel_version(release: str) -> tuple[int, int] | None:
    """``6.18.44-fc`` as (6, 18); None when the release does not start with a version."""
    m = re.match(r"(\d+)\.(\d+)", release)
    return (int(m[1]), int(m[2])) if m else None


def flag_problem(names: str, release: str) -> str | None:
    """Why this kernel would not act on one of the flags (None: it would), said before
    anything is sent: a kernel without the flag does not refuse it."""
    have = kernel_version(release)
    for name in filter(None, names.split(",")):
        since = FLAG_SINCE.get(name)
        if since is not None and have is not None and have < since:
            return (f"the {name} flag needs Linux {since[0]}.{since[1]} or later (this kernel: {release}), "
                    "which would take it and ignore it")
    return None


def request_of(args: argparse.Namespace) -> tuple[int, bytes]:
    """The command and attributes an invocation sends (pure: the tests check it)."""
    if args.op == "endpoint-add":
        try:
            ifindex = socket.if_nametoindex(args.dev) if args.dev is not None else None
        except OSError:
            raise OSError(errno.ENODEV, f"no interface {args.dev!r} in this network namespace") from None
        return CMD_ADD_ADDR, address(ATTR_ADDR, args.address, addr_id=args.id, port=args.port,
                                     flags=endpoint_flags(args.flags), ifindex=ifindex)
    tok = token_attr(args.token)
    if args.op == "announce":
        return CMD_ANNOUNCE, tok + address(ATTR_ADDR, args.address, addr_id=args.id, port=args.port,
                                           flags=FLAG_SIGNAL)
    if args.op == "remove":
        return CMD_REMOVE, tok + attr(ATTR_LOC_ID, struct.pack("=B", args.id))
    if args.op == "subflow-create":
        return CMD_SUBFLOW_CREATE, tok + address(ATTR_ADDR, args.local, addr_id=args.local_id,
                                                 flags=FLAG_BACKUP if args.backup else None) \
            + address(ATTR_ADDR_REMOTE, args.remote, port=args.remote_port)
    return CMD_SUBFLOW_DESTROY, tok + address(ATTR_ADDR, args.local, port=args.local_port) \
        + address(ATTR_ADDR_REMOTE, args.remote, port=args.remote_port)


def _port(text: str) -> int:
    v = int(text)
    if not 1 <= v <= 65535:
        raise argparse.ArgumentTypeError(f"{text}: not a port")
    return v


def _id(text: str) -> int:
    v = int(text)
    if not 0 <= v <= 255:
        raise argparse.ArgumentTypeError(f"{text}: an address id is 0 to 255")
    return v


def _flags(text: str) -> str:
    try:
        endpoint_flags(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="upm_tool.py", description="MPTCP userspace path manager commands")
    sub = p.add_subparsers(dest="op", required=True)
    ep = sub.add_parser("endpoint-add", help="an in-kernel path manager endpoint (ip mptcp endpoint add)")
    ep.add_argument("--address", required=True)
    ep.add_argument("--id", type=_id, help="the endpoint's id (the kernel numbers it without)")
    ep.add_argument("--port", type=_port, help="a signal endpoint's port")
    ep.add_argument("--dev", help="the interface the endpoint's subflows are bound to")
    ep.add_argument("--flags", type=_flags, default="", help="comma-separated: " + ",".join(ENDPOINT_FLAGS))
    for name in ("announce", "remove", "subflow-create", "subflow-destroy"):
        s = sub.add_parser(name)
        s.add_argument("--token", type=int, required=True, help="the connection's local token (decimal)")
        if name == "announce":
            s.add_argument("--address", required=True)
            s.add_argument("--id", type=_id, required=True)
            s.add_argument("--port", type=_port)
        elif name == "remove":
            s.add_argument("--id", type=_id, required=True)
        else:
            s.add_argument("--local", required=True)
            s.add_argument("--remote", required=True)
            s.add_argument("--remote-port", type=_port, required=True)
            if name == "subflow-create":
                s.add_argument("--local-id", type=_id, required=True)
                s.add_argument("--backup", action="store_true")
            else:
                s.add_argument("--local-port", type=_port, required=True)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.op == "endpoint-add" and (why := flag_problem(args.flags, os.uname().release)):
        print(f"{args.op}: {why}", file=sys.stderr)
        return 1
    try:
        cmd, attrs = request_of(args)
        nl = GenlSocket()
        nl.request(nl.family(MPTCP_PM_NAME), cmd, attrs)
    except (NetlinkError, OSError) as e:
        print(f"{args.op}: {e}", file=sys.stderr)
        return 1
    print(f"{args.op}: done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
