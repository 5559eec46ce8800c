"""Connection churn: many short connections, each connect, send N bytes (none: N = 0),
read them back, close; and the held connections a churn is measured beside. Server and
clients in one stdlib-only file, so a node runs it with the engine's Python by path (no
package import in the node). MPTCP sockets are opened directly (IPPROTO_MPTCP, no mptcpize).

    churn_tool.py server --address A --port P [--mptcp]
    churn_tool.py client --address A --port P --size N --duration S [--rate R] [--count C]
                         [--bind SRC] [--mptcp]
    churn_tool.py hold --address A --port P --count C [--bind SRC] [--mptcp]

The clients print one JSON object on exit (also on SIGINT/SIGTERM: the run's stop). Their
times are the application's view; SYN -> SYN/ACK latencies come from the capture. ``hold``
opens C connections one after another, keeps them open and idle until it is stopped, then
closes them (traffic/hold.py: the server's established connections of labs/setup).
"""

from __future__ import annotations

import argparse
import json
import resource
import selectors
import signal
import socket
import sys
import time
from typing import Any

IPPROTO_MPTCP = 262
CONNECT_TIMEOUT_S = 5.0


def _socket(mptcp: bool) -> socket.socket:
    return socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_MPTCP if mptcp else socket.IPPROTO_TCP)


class _Stop(Exception):
    pass


def _raise_stop(_signum: int, _frame: Any) -> None:
    raise _Stop


def _more_files() -> None:
    """Raise the open-files limit to its hard limit: a held thousand connections plus the
    listener pass the usual soft limit of 1024."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def serve(address: str, port: int, mptcp: bool) -> int:
    """Echo every byte back until the peer closes; one selector loop, no threads."""
    _more_files()
    lsock = _socket(mptcp)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind((address, port))
    lsock.listen(1024)
    lsock.setblocking(False)
    sel = selectors.DefaultSelector()
    sel.register(lsock, selectors.EVENT_READ)
    signal.signal(signal.SIGTERM, _raise_stop)
    signal.signal(signal.SIGINT, _raise_stop)
    try:
        while True:
            for key, _ in sel.select():
                s = key.fileobj
                assert isinstance(s, socket.socket)
                if s is lsock:
                    try:
                        c, _ = lsock.accept()
                    except OSError:
                        continue
                    c.setblocking(False)
                    sel.register(c, selectors.EVENT_READ)
                    continue
                try:
                    data = s.recv(65536)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    data = b""
                if data:
                    try:
                        s.sendall(data)  # small echoes: the send buffer takes them whole
                    except OSError:
                        data = b""
                if not data:
                    sel.unregister(s)
                    s.close()
    except _Stop:
        return 0


def _pct(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    ys = sorted(xs)
    return ys[min(len(ys) - 1, int(q * len(ys)))]


def one(address: str, port: int, payload: bytes, bind: str | None, mptcp: bool) -> tuple[int, float, float]:
    """One connection: (local port, connect ms, whole exchange ms)."""
    t0 = time.perf_counter()
    s = _socket(mptcp)
    try:
        s.settimeout(CONNECT_TIMEOUT_S)
        if bind:
            s.bind((bind, 0))
        s.connect((address, port))
        t1 = time.perf_counter()
        sport = s.getsockname()[1]
        if payload:
            s.sendall(payload)
        got = 0
        while got < len(payload):
            chunk = s.recv(65536)
            if not chunk:
                raise ConnectionError(f"server closed after {got} of {len(payload)} bytes")
            got += len(chunk)
    finally:
        s.close()
    return sport, (t1 - t0) * 1e3, (time.perf_counter() - t0) * 1e3


def client(args: argparse.Namespace) -> int:
    payload = b"x" * args.size
    signal.signal(signal.SIGTERM, _raise_stop)
    signal.signal(signal.SIGINT, _raise_stop)
    conns: list[dict[str, Any]] = []
    errors: dict[str, int] = {}
    start = time.perf_counter()
    wall0 = time.time()
    try:
        i = 0
        while time.perf_counter() - start < args.duration and (args.count is None or i < args.count):
            if args.rate:
                # paced by schedule, not by the previous connection's end: a slow one makes
                # the next start at once, so the rate catches up while the host can
                wait = start + i / args.rate - time.perf_counter()
                if wait > 0:
                    time.sleep(wait)
            t = time.time() - wall0
            try:
                sport, c_ms, x_ms = one(args.address, args.port, payload, args.bind, args.mptcp)
                conns.append({"t": round(t, 6), "sport": sport, "connect_ms": round(c_ms, 3),
                              "exchange_ms": round(x_ms, 3), "ok": True})
            except OSError as e:
                errors[type(e).__name__] = errors.get(type(e).__name__, 0) + 1
                conns.append({"t": round(t, 6), "sport": None, "ok": False, "error": str(e)})
            i += 1
    except _Stop:
        pass
    seconds = time.perf_counter() - start
    ok = [c for c in conns if c["ok"]]
    cm = [c["connect_ms"] for c in ok]
    out = {"start_epoch": wall0, "seconds": round(seconds, 6), "attempted": len(conns), "completed": len(ok),
           "failed": len(conns) - len(ok), "rate_per_s": round(len(ok) / seconds, 3) if seconds > 0 else None,
           "connect_ms_p50": _pct(cm, 0.5), "connect_ms_p99": _pct(cm, 0.99), "errors": errors,
           "mptcp": args.mptcp, "connections": conns}
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0 if ok else 1


def hold(args: argparse.Namespace) -> int:
    """Open ``count`` connections, hold them idle until SIGINT/SIGTERM, close them, report."""
    _more_files()
    signal.signal(signal.SIGTERM, _raise_stop)
    signal.signal(signal.SIGINT, _raise_stop)
    held: list[socket.socket] = []
    errors: dict[str, int] = {}
    t0 = time.perf_counter()
    open_s: float | None = None
    try:
        for _ in range(args.count):
            s = _socket(args.mptcp)
            try:
                s.settimeout(CONNECT_TIMEOUT_S)
                if args.bind:
                    s.bind((args.bind, 0))
                s.connect((args.address, args.port))
                held.append(s)
            except OSError as e:
                errors[type(e).__name__] = errors.get(type(e).__name__, 0) + 1
                s.close()
        open_s = time.perf_counter() - t0
        # the run's readiness check counts the server's established sockets; this line is
        # for a person reading the stderr file
        print(f"holding {len(held)} of {args.count} connections", file=sys.stderr, flush=True)
        while True:
            signal.pause()
    except _Stop:
        pass
    for s in held:
        s.close()
    out = {"requested": args.count, "held": len(held), "failed": args.count - len(held) if open_s is not None
           else None, "open_s": None if open_s is None else round(open_s, 6),
           "seconds": round(time.perf_counter() - t0, 6), "errors": errors, "mptcp": args.mptcp}
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0 if len(held) == args.count else 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="churn_tool")
    p.add_argument("mode", choices=["server", "client", "hold"])
    p.add_argument("--address", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--mptcp", action="store_true")
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--duration", type=float, default=10.0)
    p.add_argument("--rate", type=float)
    p.add_argument("--count", type=int)
    p.add_argument("--bind")
    a = p.parse_args(argv)
    if a.mode == "hold":
        if a.count is None:
            p.error("hold needs --count")
        return hold(a)
    return serve(a.address, a.port, a.mptcp) if a.mode == "server" else client(a)


if __name__ == "__main__":
    sys.exit(main())
