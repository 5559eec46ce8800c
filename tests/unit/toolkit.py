"""What the unit tests that run a traffic tool over loopback share: a free port and a wait
for its listener that does not connect (the tools' servers accept one connection)."""

from __future__ import annotations

import socket
import time
from pathlib import Path


def free_port(family: socket.AddressFamily = socket.AF_INET) -> int:
    with socket.socket(family) as probe:
        probe.bind(("::1" if family == socket.AF_INET6 else "127.0.0.1", 0))
        return int(probe.getsockname()[1])


def listening(port: int) -> None:
    """Waits for a listener on ``port`` of either family, without connecting to it."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            rows = Path(table).read_text().splitlines()[1:]
            if any(r.split()[1].endswith(f":{port:04X}") and r.split()[3] == "0A" for r in rows):
                return
        time.sleep(0.05)
    raise AssertionError(f"nothing listens on {port}")
