"""Run ownership records: /run/mptcplab/<name>.json holds the owner's PID and what it
created, written before anything exists, so `mptcplab clean` can tell a killed run's
leftovers from a live run's resources. Used by the backends and by the host probes
(emulation/hostprobe.py), so it sits below both."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STATE_DIR = Path(os.environ.get("MPTCPLAB_STATE_DIR", "/run/mptcplab"))


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass(frozen=True)
class RunState:
    path: Path
    data: dict[str, Any]
    #: the owner still runs (and is not us): its resources must stay
    live: bool


def run_states(pattern: str, all_runs: bool = False) -> Iterator[RunState]:
    """The state files matching pattern; unreadable ones are removed. With all_runs,
    none counts as live. Our own PID never counts as live: whatever our runs still
    own when clean() is called is left over (a teardown was interrupted)."""
    if not STATE_DIR.is_dir():
        return
    for f in sorted(STATE_DIR.glob(pattern)):
        try:
            data = json.loads(f.read_text())
        except (OSError, ValueError):
            f.unlink(missing_ok=True)
            continue
        pid = int(data.get("pid", 0))
        yield RunState(f, data, not all_runs and pid != os.getpid() and alive(pid))


def write_state(path: Path, data: dict[str, Any]) -> None:
    """Record ownership (write-then-rename: clean never reads half a record). The
    owner's PID and the time are added."""
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({**data, "pid": os.getpid(), "created": time.time()}))
    tmp.replace(path)


def owner_live(name: str) -> bool:
    """Whether STATE_DIR/<name>.json exists *now* and names a live owner (not us).

    A run writes its state file before it creates anything and removes it after it
    deleted everything, so a resource seen in a listing whose owner is live still has
    its state file when asked afterwards. Deciding per resource at deletion time,
    instead of from a list of state files read earlier, is what keeps ``clean`` off a
    run that started while clean was running (issue 12, item 2)."""
    try:
        data = json.loads((STATE_DIR / f"{name}.json").read_text())
        pid = int(data.get("pid", 0))
    except (OSError, ValueError, TypeError):
        return False
    return pid != os.getpid() and alive(pid)


@contextmanager
def recorded_namespaces(name: str, namespaces: list[str]) -> Iterator[None]:
    """Own short-lived namespaces (e.g. a host probe's) the way a run owns its nodes:
    the state file exists before they do and goes after them, so a kill in between
    leaves something ``clean`` removes (a dead owner's state names them)."""
    write_state(STATE_DIR / f"{name}.json", {"prefix": name, "namespaces": namespaces, "probe": True})
    try:
        yield
    finally:
        (STATE_DIR / f"{name}.json").unlink(missing_ok=True)
