"""A verified transfer: the client sends N bytes of a seeded pseudo-random stream over one
MPTCP (or TCP) connection, the server hashes what it received. Written here because no
existing tool checks content: iperf3 sends a repeated buffer and reports only counts.
Stdlib only, one file, run with the engine's Python by path (like churn_tool.py).

    transfer_tool.py server [--address A] --port P --out FILE [--seed S --bytes N] [--mptcp]
    transfer_tool.py client --address A --port P --bytes N --seed S [--bind SRC] [--mptcp]

Either family: a socket's family follows its address (an IPv6 literal: AF_INET6). The
server's default address is ``::`` with IPV6_V6ONLY off, so one listener takes connections
and joins of both families on every address of the node (what mptcp_connect does with its
default listening address ``::`` in mptcp_join.sh); a kernel without IPv6 gets 0.0.0.0.
Given an address, the server listens there only (mptcp_join.sh's ``bind_addr``).

The server accepts one connection, reads to EOF, writes {"received_sha256", "bytes",
"seconds"} to FILE, closes and exits. Given the client's seed and length it also compares
what arrives with that stream and adds "differs": the count of differing bytes and each run
of them with what arrived there (Comparison; traffic/transfer_diff.py tells whose they are).
The client connects, sends, shuts its sending side, waits for the server's close (so
everything sent was read) and prints {"sent_sha256", "bytes", "size", "connect_s", "seconds",
"mptcp"} as JSON on stdout; an error is reported there too.

A transfer that stalls (labs/middlebox row d with one subflow) is ended by the run: SIGINT
to the client at the flow's duration limit, then SIGTERM to the server. Each side then
still writes its report, with "stopped": true and what it had sent or received so far, so a
stall is a measured outcome (the bytes that got through) rather than a lost record.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import signal
import socket
import sys
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


def serve(address: str, port: int, out: str, mptcp: bool, expect: tuple[int, int] | None = None) -> int:
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
    conn.settimeout(POLL_S)
    t0 = time.monotonic()
    h, n, error = hashlib.sha256(), 0, None
    cmp = Comparison(*expect) if expect else None
    try:
        while not stop.stopped:
            try:
                data = conn.recv(CHUNK)
            except TimeoutError:
                continue
            if not data:
                break
            h.update(data)
            n += len(data)
            if cmp:
                cmp.feed(data)
    except OSError as e:
        error = str(e)
    stopped = stop.stopped
    # a stop that comes now, while the report is written or the interpreter exits (which
    # restores the default handlers), is the stop it asks for already
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    seconds = time.monotonic() - t0
    report: dict[str, object] = {"received_sha256": h.hexdigest(), "bytes": n, "seconds": round(seconds, 6),
                                 "error": error, "stopped": stopped}
    if cmp:
        report["differs"] = cmp.report()
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


def send(address: str, port: int, n: int, seed: int, bind: str | None, mptcp: bool) -> dict[str, object]:
    s = _socket(mptcp, family(address))
    h = hashlib.sha256()
    report: dict[str, object] = {"bytes": 0, "size": n, "seed": seed, "stopped": False}
    stop = _Interrupt()
    signal.signal(signal.SIGINT, stop)
    t0 = time.monotonic()
    try:
        if bind:
            s.bind((bind, 0))
        s.connect((address, port))
        stop.raising = False
        s.settimeout(POLL_S)
        report["connect_s"] = round(time.monotonic() - t0, 6)
        sent = 0
        for chunk in stream(seed, n):
            view = memoryview(chunk)
            while view and not stop.stopped:
                try:
                    k = s.send(view)
                except TimeoutError:
                    continue
                h.update(view[:k])
                sent += k
                report["bytes"] = sent
                view = view[k:]
            if stop.stopped:
                break
        else:
            report["mptcp"] = _is_mptcp(s) if mptcp else False
            s.shutdown(socket.SHUT_WR)
            while not stop.stopped:  # the server closes after reading everything
                try:
                    if not s.recv(CHUNK):
                        break
                except TimeoutError:
                    continue
    except OSError as e:
        report["error"] = str(e)
    except KeyboardInterrupt:
        pass
    finally:
        s.close()
    report["stopped"] = stop.stopped
    report["sent_sha256"] = h.hexdigest()
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
    a = p.parse_args(argv)
    if a.role == "server":
        if a.address is None:
            a.address = ANY
        if not a.out:
            p.error("server needs --out")
        return serve(a.address, a.port, a.out, a.mptcp, None if a.seed is None else (a.seed, a.bytes))
    if a.address is None:
        p.error("client needs --address")
    report = send(a.address, a.port, a.bytes, 1 if a.seed is None else a.seed, a.bind, a.mptcp)
    json.dump(report, sys.stdout)
    sys.stdout.write("\n")
    return 1 if "error" in report else 0


if __name__ == "__main__":
    sys.exit(main())
