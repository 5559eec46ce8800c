"""What one latency flow runs, as data, and the two command lines it becomes.

Nothing here executes anything: ``server_argv``/``client_argv`` are what the dry run
prints and what the run executes (inside the node: the backend adds ``ip netns exec``).
"""

from __future__ import annotations

import ipaddress
import math
import os
from dataclasses import dataclass
from pathlib import Path

from ...commands import Cmd
from ...emulation.base import repo_root
from ...errors import HostNotReady

#: the 32-byte header every block starts with (native/latency/latrec.h)
HEADER_BYTES = 32
MAX_BLOCK_BYTES = 64 * 1024 * 1024


def latency_binary(must_exist: bool = True) -> Path:
    """Path of mptcplab-latency: $MPTCPLAB_LATENCY, else <repo>/native/build/.
    ``must_exist=False`` is for --dry-run (prints the path it would use)."""
    env = os.environ.get("MPTCPLAB_LATENCY")
    path = Path(env) if env else repo_root() / "native" / "build" / "mptcplab-latency"
    if must_exist and not (path.is_file() and os.access(path, os.X_OK)):
        where = "$MPTCPLAB_LATENCY points to" if env else "expected"
        raise HostNotReady(f"the latency tool is not built ({where} {path}); build it with "
                           f"`make -C {repo_root() / 'native'}` (needs only a C compiler)")
    return path


@dataclass(frozen=True)
class LatencyParams:
    """One flow of timestamped blocks, client (sender) -> server (receiver).

    Buffers: ``None`` leaves the buffer to the kernel's autotuning (tcp_wmem/tcp_rmem);
    a number is passed to setsockopt, which locks it (no autotuning) and makes the kernel
    store twice the value, capped by net.core.wmem_max/rmem_max unless ``force_buffers``
    (see analyze.expected_locked_buffer). The paper's "send buffer" is the client's
    ``sndbuf``, its "receive buffer" the server's ``rcvbuf``.
    Length: ``duration_s``, or ``blocks``, or ``bytes_total`` (rounded up to whole blocks);
    with none of them the tool runs 10 s. Rate: ``rate_bps`` (application payload bit/s,
    headers included) or ``rate_blocks_per_s``; neither = back to back (bulk).
    """

    server_address: str
    port: int = 5301
    mptcp: bool = True
    bind: str | None = None
    listen_address: str | None = None  # default: server_address
    block_bytes: int = 8192
    duration_s: float | None = None
    blocks: int | None = None
    bytes_total: int | None = None
    rate_bps: float | None = None
    rate_blocks_per_s: float | None = None
    sndbuf: int | None = None          # client SO_SNDBUF
    rcvbuf: int | None = None          # server SO_RCVBUF
    client_rcvbuf: int | None = None
    server_sndbuf: int | None = None
    force_buffers: bool = False
    connect_timeout_s: float = 5.0
    #: the sender's congestion control (TCP_CONGESTION on its socket; MPTCP: every subflow).
    #: None: the namespace's default, which a namespace inherits from the host and may not
    #: change to one outside net.ipv4.tcp_allowed_congestion_control
    cc: str | None = None

    def __post_init__(self) -> None:
        for name in ("server_address", "bind", "listen_address"):
            v = getattr(self, name)
            if v is not None:
                try:
                    ipaddress.ip_address(v)
                except ValueError:
                    raise ValueError(f"latency: {name} {v!r} is not an IP address") from None
        if self.cc is not None and not (0 < len(self.cc) < 16 and self.cc.replace("_", "").replace("-", "").isalnum()):
            raise ValueError(f"latency: cc {self.cc!r} is not a congestion control name")
        if not 1 <= self.port <= 65535:
            raise ValueError(f"latency: port {self.port} is not 1..65535")
        if not HEADER_BYTES <= self.block_bytes <= MAX_BLOCK_BYTES:
            raise ValueError(f"latency: block_bytes {self.block_bytes} is not {HEADER_BYTES}..{MAX_BLOCK_BYTES}")
        if self.blocks is not None and self.bytes_total is not None:
            raise ValueError("latency: blocks and bytes_total exclude each other")
        if self.rate_bps is not None and self.rate_blocks_per_s is not None:
            raise ValueError("latency: rate_bps and rate_blocks_per_s exclude each other")
        for name in ("duration_s", "rate_bps", "rate_blocks_per_s", "connect_timeout_s"):
            v = getattr(self, name)
            if v is not None and not (math.isfinite(v) and v > 0):
                raise ValueError(f"latency: {name} must be > 0, not {v}")
        for name in ("blocks", "bytes_total"):
            v = getattr(self, name)
            if v is not None and v <= 0:
                raise ValueError(f"latency: {name} must be > 0, not {v}")
        for name in ("sndbuf", "rcvbuf", "client_rcvbuf", "server_sndbuf"):
            v = getattr(self, name)
            if v is not None and not 0 <= v <= 2**30:
                raise ValueError(f"latency: {name} must be 0..1 GiB, not {v}")

    @property
    def rate_blocks(self) -> float | None:
        """The pacing rate in blocks/s, as the tool computes it (None: bulk)."""
        if self.rate_blocks_per_s is not None:
            return self.rate_blocks_per_s
        if self.rate_bps is not None:
            return self.rate_bps / (8.0 * self.block_bytes)
        return None

    @property
    def expected_duration_s(self) -> float | None:
        """How long the client should write (None: until its byte/block count is sent in bulk)."""
        if self.duration_s is not None:
            return self.duration_s
        n = self.blocks if self.blocks is not None else (
            -(-self.bytes_total // self.block_bytes) if self.bytes_total is not None else None)
        if n is None:
            return 10.0
        rb = self.rate_blocks
        return n / rb if rb else None


@dataclass(frozen=True)
class LatencyFiles:
    """Output files of one flow, named after the flow (fixed names: the results contract)."""

    server_json: Path
    server_records: Path
    client_json: Path
    client_records: Path

    @classmethod
    def in_dir(cls, directory: Path, name: str = "latency") -> LatencyFiles:
        return cls(server_json=directory / f"{name}.server.json",
                   server_records=directory / f"{name}.recv.bin",
                   client_json=directory / f"{name}.client.json",
                   client_records=directory / f"{name}.send.bin")


def _num(v: float) -> str:
    """A number the C side parses exactly ("{:g}" would round 12345678 to 1.23457e+07)."""
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def _buffers(sndbuf: int | None, rcvbuf: int | None, force: bool) -> list[str]:
    out: list[str] = []
    if sndbuf is not None:
        out += ["--sndbuf", str(sndbuf)]
    if rcvbuf is not None:
        out += ["--rcvbuf", str(rcvbuf)]
    if force and out:
        out.append("--force-buffers")
    return out


def server_argv(p: LatencyParams, files: LatencyFiles, binary: Path | None = None) -> tuple[str, ...]:
    """The receiver: accepts one connection, prints "ready" once it listens."""
    b = binary if binary is not None else latency_binary(must_exist=False)
    argv = [str(b), "server", "--listen", p.listen_address or p.server_address, "--port", str(p.port)]
    if not p.mptcp:
        argv.append("--tcp")
    argv += _buffers(p.server_sndbuf, p.rcvbuf, p.force_buffers)
    argv += ["--json", str(files.server_json), "--records", str(files.server_records)]
    return tuple(argv)


def client_argv(p: LatencyParams, files: LatencyFiles, binary: Path | None = None) -> tuple[str, ...]:
    """The sender: connects (retrying while refused, up to connect_timeout_s), writes, drains."""
    b = binary if binary is not None else latency_binary(must_exist=False)
    argv = [str(b), "client", "--connect", p.server_address, "--port", str(p.port)]
    if p.bind:
        argv += ["--bind", p.bind]
    if not p.mptcp:
        argv.append("--tcp")
    if p.cc is not None:
        argv += ["--cc", p.cc]
    argv += _buffers(p.sndbuf, p.client_rcvbuf, p.force_buffers)
    argv += ["--block", str(p.block_bytes)]
    if p.duration_s is not None:
        argv += ["--duration", _num(p.duration_s)]
    if p.blocks is not None:
        argv += ["--blocks", str(p.blocks)]
    if p.bytes_total is not None:
        argv += ["--bytes", str(p.bytes_total)]
    if p.rate_bps is not None:
        argv += ["--rate-bps", _num(p.rate_bps)]
    if p.rate_blocks_per_s is not None:
        argv += ["--rate-blocks", _num(p.rate_blocks_per_s)]
    argv += ["--connect-timeout", _num(p.connect_timeout_s),
             "--json", str(files.client_json), "--records", str(files.client_records)]
    return tuple(argv)


def commands(p: LatencyParams, files: LatencyFiles, server_node: str, client_node: str,
             binary: Path | None = None) -> tuple[Cmd, Cmd]:
    """The two commands as the engine's ``Cmd`` (node + argv + why), for the traffic step
    and the dry run: the server first (wait for its "ready" line), then the client."""
    mode = f"paced at {p.rate_blocks:g} blocks/s" if p.rate_blocks else "back to back"
    proto = "MPTCP" if p.mptcp else "TCP"
    return (Cmd(server_argv(p, files, binary), node=server_node,
                why=f"latency receiver ({proto}): records each block's arrival"),
            Cmd(client_argv(p, files, binary), node=client_node,
                why=f"latency sender ({proto}): {p.block_bytes}-byte timestamped blocks, {mode}"))
