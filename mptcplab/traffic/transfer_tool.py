"""A verified transfer: the client sends N bytes of a seeded pseudo-random stream over one
MPTCP (or TCP) connection, the server hashes what it received. Written here because no
existing tool checks content: iperf3 sends a repeated buffer and reports only counts.
Stdlib only, one file, run with the engine's Python by path (like churn_tool.py).

    transfer_tool.py server --address A --port P --out FILE [--mptcp]
    transfer_tool.py client --address A --port P --bytes N --seed S [--bind SRC] [--mptcp]

The server accepts one connection, reads to EOF, writes {"received_sha256", "bytes",
"seconds"} to FILE, closes and exits. The client connects, sends, shuts its sending side,
waits for the server's close (so everything sent was read) and prints {"sent_sha256",
"bytes", "connect_s", "seconds", "mptcp"} as JSON on stdout; an error is reported there too.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import socket
import sys
import time
from collections.abc import Iterator

IPPROTO_MPTCP = 262
CHUNK = 64 * 1024
SOL_MPTCP = 284
MPTCP_INFO = 1


def stream(seed: int, n: int) -> Iterator[bytes]:
    """The deterministic stream: ``n`` bytes of random.Random(seed), in chunks. Always whole
    chunks drawn, the last cut: a shorter transfer sends a prefix of a longer one's stream."""
    rng = random.Random(seed)
    left = n
    while left > 0:
        k = min(CHUNK, left)
        yield rng.randbytes(CHUNK)[:k]
        left -= k


def _socket(mptcp: bool) -> socket.socket:
    return socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_MPTCP if mptcp else socket.IPPROTO_TCP)


def serve(address: str, port: int, out: str, mptcp: bool) -> int:
    lsock = _socket(mptcp)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind((address, port))
    lsock.listen(1)
    conn, _ = lsock.accept()
    t0 = time.monotonic()
    h, n, error = hashlib.sha256(), 0, None
    try:
        while data := conn.recv(CHUNK):
            h.update(data)
            n += len(data)
    except OSError as e:
        error = str(e)
    seconds = time.monotonic() - t0
    with open(out, "w") as f:
        json.dump({"received_sha256": h.hexdigest(), "bytes": n, "seconds": round(seconds, 6), "error": error}, f)
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
    s = _socket(mptcp)
    h = hashlib.sha256()
    report: dict[str, object] = {"bytes": 0, "seed": seed}
    t0 = time.monotonic()
    try:
        if bind:
            s.bind((bind, 0))
        s.connect((address, port))
        report["connect_s"] = round(time.monotonic() - t0, 6)
        sent = 0
        for chunk in stream(seed, n):
            s.sendall(chunk)
            h.update(chunk)
            sent += len(chunk)
            report["bytes"] = sent
        report["mptcp"] = _is_mptcp(s) if mptcp else False
        s.shutdown(socket.SHUT_WR)
        while s.recv(CHUNK):  # the server closes after reading everything
            pass
    except OSError as e:
        report["error"] = str(e)
    finally:
        s.close()
    report["sent_sha256"] = h.hexdigest()
    report["seconds"] = round(time.monotonic() - t0, 6)
    return report


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("role", choices=("server", "client"))
    p.add_argument("--address", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--mptcp", action="store_true")
    p.add_argument("--out")
    p.add_argument("--bytes", type=int, default=0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--bind")
    a = p.parse_args(argv)
    if a.role == "server":
        if not a.out:
            p.error("server needs --out")
        return serve(a.address, a.port, a.out, a.mptcp)
    report = send(a.address, a.port, a.bytes, a.seed, a.bind, a.mptcp)
    json.dump(report, sys.stdout)
    sys.stdout.write("\n")
    return 1 if "error" in report else 0


if __name__ == "__main__":
    sys.exit(main())
