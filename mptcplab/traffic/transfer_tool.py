"""A verified transfer: a side sends N bytes of a seeded pseudo-random stream over one MPTCP
(or TCP) connection, the other hashes what it received. Written here because no existing
tool checks content: iperf3 sends a repeated buffer and reports only counts.
Stdlib only, one file, run with the engine's Python by path (like churn_tool.py).

    transfer_tool.py server [--address A] --port P --out FILE --seed S --bytes N [--mptcp] [COMMON]
    transfer_tool.py client --address A --port P --bytes N --seed S [--bind SRC] [--mptcp] [COMMON]
    COMMON: [--direction upload|download|both] [--rate BIT/S] [--fastclose client|server]

Either family: a socket's family follows its address (an IPv6 literal: AF_INET6). The
server's default address is ``::`` with IPV6_V6ONLY off, so one listener takes connections
and joins of both families on every address of the node (what mptcp_connect does with its
default listening address ``::`` in mptcp_join.sh); a kernel without IPv6 gets 0.0.0.0.
Given an address, the server listens there only (mptcp_join.sh's ``bind_addr``).

``--direction``: who sends: upload the client, download the server, both each side at once
on the one connection (a thread sends while the main thread receives). The client's stream
is random.Random(seed), the server's random.Random(seed + 2**32) (server_seed), so a stream
sent back is never taken for the other. A sender shuts its sending side when done; a side
that sends nothing shuts its own once it read the peer's end: every side reads to the peer's
end, so the client's end of reading says the server read everything. Each receiver hashes
what it got and compares it with the peer's stream ("differs": the count of differing bytes
and each run of them with what arrived there; Comparison; traffic/transfer_diff.py).
``--rate``: each sender paces itself to that many bit/s.

``--fastclose SIDE``: that side sends its N bytes, reads N bytes of the peer's, waits until
the peer acknowledged what it sent, and closes with the peer's further data unread, which
the kernel answers with MP_FASTCLOSE (net/mptcp/protocol.c __mptcp_close; TCP: RST), as
mptcp_connect -f does in mptcp_join.sh's fastclose tests. The peer sends without end until
the reset; a reset is then the expected end on both sides ("reset": true), not an error, and
a sender's "sent_sha256" covers the first N bytes, what the closing side reads.

Reports: the server writes its report to FILE, the client prints its own on stdout, as JSON,
with "sent_bytes", "sent_sha256", "received_bytes", "received_sha256", "differs", "seconds",
"reset", "error", "stopped" (and, for older readers, "bytes": the client's sent, the
server's received); the client adds "size", "seed", "connect_s", "mptcp", "direction",
"rate_bps", "fastclose_side".

A transfer that stalls (labs/middlebox row d with one subflow) is ended by the run: SIGINT
to the client at the flow's duration limit, then SIGTERM to the server. Each side then
still writes its report, with "stopped": true and what it had sent or received so far, so a
stall is a measured outcome (the bytes that got through) rather than a lost record.
"""

from __future__ import annotations

import argparse
import errno
import fcntl
import hashlib
import json
import random
import re
import signal
import socket
import sys
import termios
import threading
import time
from collections.abc import Iterator

IPPROTO_MPTCP = 262
CHUNK = 64 * 1024
SOL_MPTCP = 284
MPTCP_INFO = 1
#: runs of differing bytes reported with what arrived, and the bytes kept of them in all
MAX_RUNS = 64
MAX_KEPT = 64 * 1024
_NONZERO = re.compile(rb"[^\x00]+")


def stream(seed: int, n: int) -> Iterator[bytes]:
    """The deterministic stream: ``n`` bytes of random.Random(seed), in chunks. Always whole
    chunks drawn, the last cut: a shorter transfer sends a prefix of a longer one's stream."""
    rng = random.Random(seed)
    left = n
    while left > 0:
        k = min(CHUNK, left)
        yield rng.randbytes(CHUNK)[:k]
        left -= k


class _Run:
    """Consecutive differing bytes: where, how many, and the first of what arrived there."""

    def __init__(self, offset: int) -> None:
        self.offset, self.length, self.data = offset, 0, bytearray()


class Comparison:
    """What arrived against the stream the client sends, chunk by chunk as it arrives (no
    copy of the whole transfer): the number of differing bytes, and each run of consecutive
    differing bytes with its offset and the bytes that arrived there (the first MAX_RUNS
    runs, MAX_KEPT bytes in all; the rest counted in runs_left_off)."""

    def __init__(self, seed: int, n: int) -> None:
        self._expected = stream(seed, n)
        self._pending = bytearray()  # expected bytes not yet compared
        self._offset = 0
        self._kept = 0
        self.differing = 0
        self.runs: list[_Run] = []
        self.left_off = 0

    def feed(self, data: bytes) -> None:
        while len(self._pending) < len(data):
            chunk = next(self._expected, None)
            if chunk is None:
                break
            self._pending += chunk
        k = min(len(data), len(self._pending))  # bytes beyond the stream: the length check's
        got, want = data[:k], bytes(self._pending[:k])
        if got != want:
            # XOR as one big integer: the differing bytes are its non-zero ones, found by the
            # regex engine rather than by a Python loop over every byte
            x = (int.from_bytes(got, "big") ^ int.from_bytes(want, "big")).to_bytes(k, "big")
            for m in _NONZERO.finditer(x):
                self._add(self._offset + m.start(), got[m.start():m.end()])
        del self._pending[:k]
        self._offset += len(data)

    def _add(self, at: int, part: bytes) -> None:
        self.differing += len(part)
        run = self.runs[-1] if self.runs else None
        if run is None or run.offset + run.length != at:  # else: one run across two reads
            if len(self.runs) == MAX_RUNS:
                self.left_off += 1
                return
            run = _Run(at)
            self.runs.append(run)
        if len(run.data) == run.length:  # kept whole so far: it may grow
            keep = part[:max(0, MAX_KEPT - self._kept)]
            run.data += keep
            self._kept += len(keep)
        run.length += len(part)

    def report(self) -> dict[str, object]:
        return {"differing_bytes": self.differing, "runs_left_off": self.left_off,
                "runs": [{"offset": r.offset, "length": r.length, "data": r.data.hex()} for r in self.runs]}


class _Interrupt:
    """The run's stop (SIGINT to the client, SIGTERM to the server): raises only while
    connecting or accepting; afterwards it sets a flag the send and receive loops look at
    between system calls (which time out every POLL_S), so no byte a socket took or gave
    goes uncounted, as an exception between a system call and its count could make happen.
    Installed by each side itself, not inherited: a process started with the signal ignored
    (a shell's background job) would otherwise never see it."""

    def __init__(self) -> None:
        self.raising = True
        self.stopped = False

    def __call__(self, signum: int, frame: object) -> None:
        self.stopped = True
        if self.raising:
            raise KeyboardInterrupt


#: how often a blocked send or receive looks at the stop flag
POLL_S = 0.1


#: the server's address when none is given: every address of both families
ANY = "::"


def family(address: str) -> socket.AddressFamily:
    """The socket family an address literal needs: IPv6 (it has a colon) or IPv4."""
    return socket.AF_INET6 if ":" in address else socket.AF_INET


def _socket(mptcp: bool, fam: socket.AddressFamily = socket.AF_INET) -> socket.socket:
    return socket.socket(fam, socket.SOCK_STREAM, IPPROTO_MPTCP if mptcp else socket.IPPROTO_TCP)


def listener(address: str, mptcp: bool) -> tuple[socket.socket, str]:
    """The listening socket for ``address`` (not yet bound) and the address to bind: an IPv6
    socket takes IPv4 connections too (IPV6_V6ONLY off, whatever net.ipv6.bindv6only says);
    ``::`` on a kernel without IPv6 falls back to 0.0.0.0."""
    try:
        s = _socket(mptcp, family(address))
    except OSError:
        if address != ANY:
            raise
        return _socket(mptcp), "0.0.0.0"
    if s.family == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    return s, address


#: the server's stream seed is the client's plus this: never a client seed (0 to 2**32 - 1)
SERVER_SEED_OFFSET = 2**32
#: a peer of a fast-closing side sends until the reset: a stream longer than any transfer
ENDLESS = 2**62
#: errors that end a connection the peer reset (expected with --fastclose)
RESET_ERRNOS = (errno.ECONNRESET, errno.EPIPE, errno.ENOTCONN)
#: how long a fast-closing side waits for the peer to acknowledge what it sent
DRAIN_S = 10.0


def stream_seed(role: str, seed: int) -> int:
    """The seed of the stream ``role`` sends."""
    return seed if role == "client" else seed + SERVER_SEED_OFFSET


def sends(role: str, direction: str) -> bool:
    return direction == "both" or (direction == "upload") == (role == "client")


class Sender(threading.Thread):
    """Sends the stream (``n`` bytes, or ENDLESS) at ``rate`` bit/s, hashing the first
    ``size`` bytes; shuts the sending side when done unless ``shut`` is false (a
    fast-closing side)."""

    def __init__(self, conn: socket.socket, seed: int, n: int, size: int, rate: int | None, stop: _Interrupt,
                 shut: bool, tolerate_reset: bool) -> None:
        super().__init__(daemon=True)
        self.conn, self.seed, self.n, self.size, self.rate, self.stop = conn, seed, n, size, rate, stop
        self.shut, self.tolerate_reset = shut, tolerate_reset
        self.h = hashlib.sha256()
        self.sent = 0
        self.error: str | None = None
        self.reset = False

    def _pace(self, t0: float) -> None:
        if self.rate is None:
            return
        while not self.stop.stopped and (wait := t0 + self.sent * 8 / self.rate - time.monotonic()) > 0:
            time.sleep(min(wait, POLL_S))

    def run(self) -> None:
        # a paced sender writes 50 ms of its rate at a time (at least 1 KB), so the pace is smooth
        piece = CHUNK if self.rate is None else max(1024, self.rate // 8 // 20)
        t0 = time.monotonic()
        try:
            for chunk in stream(self.seed, self.n):
                view = memoryview(chunk)
                while view and not self.stop.stopped:
                    try:
                        k = self.conn.send(view[:piece])
                    except TimeoutError:
                        continue
                    if self.sent < self.size:
                        self.h.update(view[:min(k, self.size - self.sent)])
                    self.sent += k
                    view = view[k:]
                    self._pace(t0)
                if self.stop.stopped:
                    return
            if self.shut:
                self.conn.shutdown(socket.SHUT_WR)
        except OSError as e:
            if self.tolerate_reset and e.errno in RESET_ERRNOS:
                self.reset = True
            else:
                self.error = str(e)


class Received:
    """What one side read: its hash, count, the comparison with the peer's stream."""

    def __init__(self, expect: tuple[int, int] | None) -> None:
        self.h = hashlib.sha256()
        self.n = 0
        self.cmp = Comparison(*expect) if expect else None
        self.eof = False
        self.reset = False
        self.error: str | None = None


def receive(conn: socket.socket, got: Received, stop: _Interrupt, limit: int | None, tolerate_reset: bool) -> None:
    """Reads until the peer's end (or ``limit`` bytes, a fast-closing side), a reset or the stop."""
    while not stop.stopped:
        want = CHUNK if limit is None else min(CHUNK, limit - got.n)
        if want <= 0:
            return
        try:
            data = conn.recv(want)
        except TimeoutError:
            continue
        except OSError as e:
            if tolerate_reset and e.errno in RESET_ERRNOS:
                got.reset = True
            else:
                got.error = str(e)
            return
        if not data:
            got.eof = True
            return
        got.h.update(data)
        got.n += len(data)
        if got.cmp:
            got.cmp.feed(data)


def drain(conn: socket.socket, stop: _Interrupt) -> None:
    """Waits until the peer acknowledged everything sent (SIOCOUTQ, which MPTCP sockets answer
    at the connection level): a fast close drops what is still queued."""
    deadline = time.monotonic() + DRAIN_S
    while not stop.stopped and time.monotonic() < deadline:
        try:
            left = int.from_bytes(fcntl.ioctl(conn.fileno(), termios.TIOCOUTQ, b"\0" * 4), sys.byteorder)
        except OSError:
            return
        if left == 0:
            return
        time.sleep(0.01)


class Plan:
    """What one side does on the connection (from the command line)."""

    def __init__(self, role: str, seed: int, n: int, direction: str, rate: int | None,
                 fastclose: str | None) -> None:
        self.role, self.seed, self.n, self.rate, self.fastclose = role, seed, n, rate, fastclose
        self.direction = direction
        self.sends = sends(role, direction)
        peer = "server" if role == "client" else "client"
        self.receives = sends(peer, direction)
        self.closer = fastclose == role
        #: the peer's stream this side compares what arrives with
        self.expect = (stream_seed(peer, seed), n) if self.receives else None


def exchange(conn: socket.socket, plan: Plan, stop: _Interrupt) -> dict[str, object]:
    """The data phase on a connected socket: send (a thread) and receive at once; the close.
    The report's numbers, an error (a reset is none with --fastclose) and what the socket
    ran (MPTCP_INFO before the close)."""
    conn.settimeout(POLL_S)
    tolerate = plan.fastclose is not None
    # the peer of a fast-closing side sends until the reset
    n = ENDLESS if plan.fastclose is not None and not plan.closer else plan.n
    sender = (Sender(conn, stream_seed(plan.role, plan.seed), n, plan.n, plan.rate, stop,
                     shut=not plan.closer, tolerate_reset=tolerate) if plan.sends else None)
    got = Received(plan.expect)
    if sender:
        sender.start()
    receive(conn, got, stop, plan.n if plan.closer else None, tolerate)
    if sender:
        while sender.is_alive():
            sender.join(POLL_S)
    reset = got.reset or bool(sender and sender.reset)
    # after a reset MPTCP_INFO says nothing of what the connection ran: unknown
    mptcp = None if reset else _is_mptcp(conn)
    if plan.closer:
        drain(conn, stop)
    elif not plan.sends and got.eof:
        try:
            conn.shutdown(socket.SHUT_WR)  # tells the sender everything was read
        except OSError:
            pass
    error = got.error or (sender.error if sender else None)
    return {"sent_bytes": sender.sent if sender else 0,
            "sent_sha256": sender.h.hexdigest() if sender else None,
            "sent_seed": stream_seed(plan.role, plan.seed) if sender else None,
            "received_bytes": got.n, "received_sha256": got.h.hexdigest(),
            **({"differs": got.cmp.report()} if got.cmp else {}),
            "reset": reset, "fastclose": plan.closer,
            "error": error, "mptcp_info": mptcp}


def serve(address: str, port: int, out: str, mptcp: bool, plan: Plan) -> int:
    lsock, address = listener(address, mptcp)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind((address, port))
    lsock.listen(1)
    stop = _Interrupt()
    signal.signal(signal.SIGTERM, stop)
    try:
        conn, _ = lsock.accept()
    except KeyboardInterrupt:
        return 0  # no connection came: nothing to report, the client's side says why
    stop.raising = False
    t0 = time.monotonic()
    try:
        report = exchange(conn, plan, stop)
    except OSError as e:
        report = {"error": str(e)}
    stopped = stop.stopped
    # a stop that comes now, while the report is written or the interpreter exits (which
    # restores the default handlers), is the stop it asks for already
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    report.pop("mptcp_info", None)
    report.update({"bytes": report.get("received_bytes", 0), "seconds": round(time.monotonic() - t0, 6),
                   "stopped": stopped})
    with open(out, "w") as f:
        json.dump(report, f)
    conn.close()
    lsock.close()
    return 0


def _is_mptcp(s: socket.socket) -> bool | None:
    """Whether the socket still runs MPTCP (MPTCP_INFO answers only before a fallback)."""
    try:
        s.getsockopt(SOL_MPTCP, MPTCP_INFO, 256)
        return True
    except OSError:
        return False


def send(address: str, port: int, bind: str | None, mptcp: bool, plan: Plan) -> dict[str, object]:
    """The client's side: connect, exchange, close; its report."""
    s = _socket(mptcp, family(address))
    report: dict[str, object] = {"bytes": 0, "size": plan.n, "seed": plan.seed, "stopped": False,
                                 "direction": plan.direction, "rate_bps": plan.rate, "fastclose_side": plan.fastclose}
    stop = _Interrupt()
    signal.signal(signal.SIGINT, stop)
    t0 = time.monotonic()
    try:
        if bind:
            s.bind((bind, 0))
        s.connect((address, port))
        stop.raising = False
        report["connect_s"] = round(time.monotonic() - t0, 6)
        done = exchange(s, plan, stop)
        info = done.pop("mptcp_info")
        if not stop.stopped:
            report["mptcp"] = info if mptcp else False
        error = done.pop("error")
        if error is not None:
            report["error"] = error
        report.update(done)
    except OSError as e:
        report["error"] = str(e)
    except KeyboardInterrupt:
        pass
    finally:
        s.close()
    report["bytes"] = report.get("sent_bytes", 0)
    report["stopped"] = stop.stopped
    report.setdefault("sent_sha256", hashlib.sha256().hexdigest())
    report["seconds"] = round(time.monotonic() - t0, 6)
    return report


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("role", choices=("server", "client"))
    p.add_argument("--address", help=f"the server's address (client), where it listens (server, default {ANY})")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--mptcp", action="store_true")
    p.add_argument("--out")
    p.add_argument("--bytes", type=int, default=0)
    p.add_argument("--seed", type=int)
    p.add_argument("--bind")
    p.add_argument("--direction", choices=("upload", "download", "both"), default="upload")
    p.add_argument("--rate", type=int, help="each sender's pace, bit/s")
    p.add_argument("--fastclose", choices=("client", "server"))
    a = p.parse_args(argv)
    plan = Plan(a.role, 1 if a.seed is None else a.seed, a.bytes, a.direction, a.rate, a.fastclose)
    if a.role == "server":
        if a.address is None:
            a.address = ANY
        if not a.out:
            p.error("server needs --out")
        if a.seed is None:
            plan.expect = None  # not told the client's stream: nothing to compare with
        return serve(a.address, a.port, a.out, a.mptcp, plan)
    if a.address is None:
        p.error("client needs --address")
    report = send(a.address, a.port, a.bind, a.mptcp, plan)
    json.dump(report, sys.stdout)
    sys.stdout.write("\n")
    return 1 if "error" in report else 0


if __name__ == "__main__":
    sys.exit(main())
