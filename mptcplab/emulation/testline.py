"""A throwaway two-namespace line (a <-> b over one veth pair) for exercising an
emulator with real traffic without the lab engine: used by the integration tests
and bench/emulation_bench.py.

Namespace names are ``<prefix>a`` / ``<prefix>b`` with a random ``mplt<hex>``
prefix, so parallel runs never collide; ``close()`` kills every process left in
them and deletes them, and is safe to call twice.
"""

from __future__ import annotations

import json
import re
import secrets
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..commands import Cmd
from ..supervise import Supervisor
from .base import Emulator
from .linkmodel import DirectedLink, Endpoint, LinkShape
from .nfqueue import PING_RTT_FLAGS

NODES = ("a", "b")
IFACE = "eth0"
ADDR = {"a": "10.77.0.1", "b": "10.77.0.2"}


def new_prefix() -> str:
    return f"mplt{secrets.token_hex(3)}"


@dataclass
class PingResult:
    sent: int
    received: int
    min_ms: float
    avg_ms: float
    max_ms: float


def parse_ping(text: str) -> PingResult:
    """Parses iputils ping's summary lines."""
    m = re.search(r"(\d+) packets transmitted, (\d+) received", text)
    if not m:
        raise ValueError(f"no ping summary in: {text[-300:]!r}")
    sent, recv = int(m.group(1)), int(m.group(2))
    r = re.search(r"= ([\d.]+)/([\d.]+)/([\d.]+)/", text)
    if r:
        return PingResult(sent, recv, float(r.group(1)), float(r.group(2)), float(r.group(3)))
    return PingResult(sent, recv, float("nan"), float("nan"), float("nan"))


def iperf3_server_argv(node: str, server_extra: Sequence[str] = ()) -> tuple[str, ...]:
    """The server ``TwoNodeLine.iperf3`` starts at ``node`` (generated apart, for dry runs)."""
    return ("iperf3", "-s", "-1", "-B", ADDR[node], *server_extra)


def iperf3_client_argv(src: str, seconds: float, window: int | None = None, omit: int = 1,
                       extra: Sequence[str] = ()) -> tuple[str, ...]:
    """The client ``TwoNodeLine.iperf3`` runs at ``src``, to the other node."""
    dst = "b" if src == "a" else "a"
    argv = ("iperf3", "-c", ADDR[dst], "-t", str(seconds), "-O", str(omit), "-J", *extra)
    return argv + (("-w", str(window)) if window else ())


class TwoNodeLine:
    def __init__(self, mtu: int = 1500, prefix: str | None = None, offloads_off: bool = True) -> None:
        self.prefix = prefix or new_prefix()
        self.mtu = mtu
        self.ns = {n: f"{self.prefix}{n}" for n in NODES}
        self._created: list[str] = []
        self._build(offloads_off)

    # -- running things in a node -------------------------------------------
    def host_argv(self, node: str, argv: Sequence[str]) -> list[str]:
        return ["ip", "netns", "exec", self.ns[node], *argv]

    def sh(self, node: str | None, *argv: str, check: bool = True,
           timeout: float = 60) -> subprocess.CompletedProcess[str]:
        full = self.host_argv(node, argv) if node else list(argv)
        p = subprocess.run(full, capture_output=True, text=True, timeout=timeout, check=False)
        if check and p.returncode != 0:
            raise RuntimeError(f"{' '.join(full)} failed ({p.returncode}): {p.stderr.strip()}")
        return p

    def run(self, c: Cmd) -> subprocess.CompletedProcess[str]:
        return self.sh(c.node, *c.argv, check=c.check)

    def popen(self, node: str, *argv: str) -> subprocess.Popen[str]:
        return subprocess.Popen(self.host_argv(node, argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    # -- topology ----------------------------------------------------------
    def _build(self, offloads_off: bool) -> None:
        try:
            for n in NODES:
                self.sh(None, "ip", "netns", "add", self.ns[n])
                self._created.append(self.ns[n])
            # create with unique host-side names, then rename inside the namespaces
            self.sh(None, "ip", "link", "add", f"{self.prefix}x", "netns", self.ns["a"], "type", "veth",
                    "peer", "name", f"{self.prefix}y", "netns", self.ns["b"])
            for n, tmp in (("a", f"{self.prefix}x"), ("b", f"{self.prefix}y")):
                self.sh(n, "ip", "link", "set", tmp, "name", IFACE)
                self.sh(n, "ip", "link", "set", IFACE, "mtu", str(self.mtu))
                self.sh(n, "ip", "addr", "add", f"{ADDR[n]}/24", "dev", IFACE)
                self.sh(n, "ip", "link", "set", IFACE, "up")
                self.sh(n, "ip", "link", "set", "lo", "up")
                if offloads_off:
                    # as the lab does: real MTU-sized segments on the wire and in captures
                    self.sh(n, "ethtool", "-K", IFACE, "tso", "off", "gso", "off", "gro", "off")
        except BaseException:
            self.close()
            raise

    def tcp_buffers(self, max_bytes: int) -> None:
        """Lets TCP autotuning grow socket buffers to ``max_bytes`` in both nodes.
        (iperf3 -w is capped by net.core.[rw]mem_max, which is not per namespace;
        tcp_rmem/tcp_wmem are.)"""
        for n in NODES:
            self.sh(n, "sysctl", "-q", "-w", f"net.ipv4.tcp_rmem=4096 131072 {max_bytes}",
                    f"net.ipv4.tcp_wmem=4096 16384 {max_bytes}")

    def directed(self, src: str, shape: LinkShape) -> DirectedLink:
        dst = "b" if src == "a" else "a"
        return DirectedLink(Endpoint(src, IFACE), Endpoint(dst, IFACE), shape, self.mtu)

    def apply(self, emulator: Emulator, shape_ab: LinkShape, shape_ba: LinkShape, workdir: Path,
              supervisor: Supervisor) -> list[DirectedLink]:
        """Shapes both directions: daemons first (ready), then rules and qdiscs."""
        links = [self.directed("a", shape_ab), self.directed("b", shape_ba)]
        for q, dl in enumerate(links, start=1):
            cmds, daemons = emulator.link_cmds(dl, q, workdir)
            supervisor.start_all(daemons)
            for c in cmds:
                self.run(c)
        return links

    # -- measurements ------------------------------------------------------
    def ping(self, src: str, count: int = 20, interval: float = 0.05, size: int = 56,
             timeout: float = 30) -> PingResult:
        dst = ADDR["b" if src == "a" else "a"]
        # -U: user-to-user time; the kernel's receive timestamp would be taken
        # before the receiver-side delay line holds the reply (see nfqueue.py)
        p = self.sh(src, "ping", *PING_RTT_FLAGS, "-q", "-n", "-c", str(count), "-i", str(interval), "-s", str(size),
                    "-W", "2", dst, check=False, timeout=timeout)
        return parse_ping(p.stdout)

    def iperf3(self, src: str, seconds: float, window: int | None = None, omit: int = 1,
               extra: Sequence[str] = (), server_extra: Sequence[str] = ()) -> dict[str, Any]:
        """One TCP flow from ``src`` to the other node (``extra`` may make it UDP); iperf3's
        JSON result. ``server_extra``: the server's own options (-J, for its intervals)."""
        dst = "b" if src == "a" else "a"
        server = self.popen(dst, *iperf3_server_argv(dst, server_extra))
        try:
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:  # wait for the listening socket
                if f"{ADDR[dst]}:5201" in self.sh(dst, "ss", "-Hltn").stdout:
                    break
                time.sleep(0.05)
            argv = iperf3_client_argv(src, seconds, window, omit, extra)
            p = self.sh(src, *argv, check=False, timeout=seconds + omit + 30)
            result: dict[str, Any] = json.loads(p.stdout) if p.stdout.strip() else {"error": p.stderr}
            return result
        finally:
            if server.poll() is None:
                server.terminate()
            server.communicate(timeout=5)

    # -- teardown ----------------------------------------------------------
    def close(self) -> None:
        for ns in list(self._created):
            pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True,
                                  check=False).stdout.split()
            for pid in pids:
                subprocess.run(["kill", "-9", pid], capture_output=True, check=False)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
            self._created.remove(ns)

    def __enter__(self) -> TwoNodeLine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def goodput_bps(result: dict[str, Any]) -> float:
    """Receiver-side goodput of an iperf3 -J result (omitted seconds excluded)."""
    return float(result["end"]["sum_received"]["bits_per_second"])
