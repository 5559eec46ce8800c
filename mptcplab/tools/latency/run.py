"""Running one server/client pair to completion (the integration tests and the bench;
the engine runs the same argument lists through its own traffic step).

``prefix`` functions put a command inside a node, e.g. ``TwoNodeLine.host_argv``.
"""

from __future__ import annotations

import select
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .params import LatencyFiles, LatencyParams, client_argv, latency_binary, server_argv

Prefix = Callable[[Sequence[str]], list[str]]


@dataclass(frozen=True)
class PairOutcome:
    server_rc: int
    client_rc: int
    server_stderr: str
    client_stderr: str

    @property
    def ok(self) -> bool:
        return self.server_rc == 0 and self.client_rc == 0


def _wait_ready(proc: subprocess.Popen[str], timeout_s: float) -> None:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        r, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
        if not r:
            break
        line = proc.stdout.readline()
        if line.strip() == "ready":
            return
        if line == "":  # exited before listening
            break
    proc.kill()
    _, err = proc.communicate(timeout=5)
    raise RuntimeError(f"latency server not ready: {err.strip()[-300:]}")


def run_pair(params: LatencyParams, files: LatencyFiles, server_prefix: Prefix, client_prefix: Prefix,
             binary: Path | None = None, timeout_s: float | None = None) -> PairOutcome:
    """Starts the server, waits for its "ready", runs the client to its end, waits for the
    server (which exits after the client's end of data). Kills both on timeout."""
    b = binary if binary is not None else latency_binary()
    Path(files.server_json).parent.mkdir(parents=True, exist_ok=True)
    Path(files.client_json).parent.mkdir(parents=True, exist_ok=True)
    expected = params.expected_duration_s or 10.0
    limit = timeout_s if timeout_s is not None else expected + 30.0
    server = subprocess.Popen(server_prefix(server_argv(params, files, b)), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        _wait_ready(server, 10.0)
        client = subprocess.run(client_prefix(client_argv(params, files, b)), capture_output=True, text=True,
                                timeout=limit, check=False)
        _, s_err = server.communicate(timeout=15)
        return PairOutcome(server.returncode, client.returncode, s_err, client.stderr)
    finally:
        if server.poll() is None:
            server.kill()
            server.communicate(timeout=5)
