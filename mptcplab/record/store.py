"""Run directories: results/<lab>/<run-id>/, never overwritten; ``latest`` points
to the newest *complete* run only, and is switched atomically.

A run directory appears whole: it is built as ``.partial-<run-id>`` (owner record,
first manifest) and renamed into place, so a kill never leaves an empty or
manifest-less run directory. While its process works on it, a run directory holds
``.owner`` (PID, process start time, boot id, host); the run removes it when it has
written everything it will write. A ``.owner`` whose process is gone means the
process died without marking the run (kill -9, out of memory, power loss): the next
run in the same results directory, or ``mptcplab clean``, marks such a run
``complete: false`` with ``incomplete_reason`` "owner process died"
(mark_dead_runs). Complete runs are never touched.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import shutil
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import LabInputError

OWNER = ".owner"
PARTIAL = ".partial-"
#: a staging directory without an owner record is a kill between its mkdir and the
#: record's write; one this old cannot belong to a run still starting
STALE_PARTIAL_S = 60.0
#: errors that mean "this results directory cannot take (more) files"
STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM})
DEAD_REASON = ("owner process died before it could mark the run (e.g. kill -9, the out-of-memory killer, "
               "or a results directory that filled up)")


def new_run_id() -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(2)


def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def _start_ticks(pid: int) -> int | None:
    """The process's start time (clock ticks since boot): with the PID it names one
    process, so a reused PID is not mistaken for the owner."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def owner_record() -> dict[str, Any]:
    pid = os.getpid()
    return {"pid": pid, "start_ticks": _start_ticks(pid), "boot_id": _boot_id(), "host": socket.gethostname()}


def owner_alive(owner: dict[str, Any]) -> bool:
    """Whether the process an owner record names still runs. A record from another
    host (a shared results directory) counts as alive: nothing here can tell."""
    if owner.get("host") != socket.gethostname():
        return True
    if owner.get("boot_id") != _boot_id():
        return False
    pid = int(owner.get("pid", 0))
    return pid > 0 and _start_ticks(pid) == owner.get("start_ticks")


def not_writable(root: Path, e: OSError) -> LabInputError:
    return LabInputError("command line", "--results",
                         f"cannot create a run directory under {root}: {e.strerror or e} "
                         f"(choose a writable results directory with --results)")


def create_run_dir(results_root: Path, lab: str,
                   first_manifest: Callable[[str], dict[str, Any]] | None = None) -> tuple[str, Path]:
    """A new run directory holding its owner record and (given first_manifest, a
    function of the run id) its first manifest.json, created whole or not at all.
    A results directory that cannot take it is bad input: LabInputError (exit 2)."""
    base = results_root / lab
    staging: Path | None = None
    try:
        base.mkdir(parents=True, exist_ok=True)
        while True:
            run_id = new_run_id()
            path = base / run_id
            staging = base / (PARTIAL + run_id)
            try:
                staging.mkdir()  # exclusive among runs starting now
            except FileExistsError:
                continue
            write_json(staging / OWNER, owner_record())
            if first_manifest is not None:
                write_json(staging / "manifest.json", first_manifest(run_id))
            try:
                # never replaces: a finished run directory is never empty
                os.rename(staging, path)
            except OSError as e:
                if e.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                    raise
                shutil.rmtree(staging, ignore_errors=True)
                continue
            return run_id, path
    except OSError as e:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        # only directories and files under --results were tried: whatever the reason
        # (read-only, full, not a directory, permission), the fix is another --results
        raise not_writable(results_root, e) from e


def release(run_dir: Path) -> None:
    """The run has written everything it will write: it no longer needs marking."""
    (run_dir / OWNER).unlink(missing_ok=True)


def write_json(path: Path, data: Any) -> None:
    """Write-then-rename so a reader (or a kill) never sees half a file; a failed
    write (a full file system) leaves no temporary file behind."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def mark_latest(run_dir: Path) -> None:
    link = run_dir.parent / "latest"
    tmp = run_dir.parent / f".latest-{os.getpid()}"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(run_dir.name)
    tmp.replace(link)


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def read_owner(d: Path) -> dict[str, Any] | None:
    """The owner record of a run or staging directory; None when it has none (or a torn one)."""
    return _read_json(d / OWNER)


def mark_dead_runs(results_root: Path) -> list[Path]:
    """Mark the runs under results_root/<lab>/ whose process died without marking
    them, and remove staging directories such a process left. Returns the run
    directories marked. Best effort: a directory that cannot be written stays as is."""
    marked: list[Path] = []
    try:
        labs = [d for d in results_root.iterdir() if d.is_dir() and not d.is_symlink()]
    except OSError:
        return marked
    for lab_dir in labs:
        try:
            entries = list(lab_dir.iterdir())
        except OSError:
            continue
        for d in entries:
            if d.is_symlink() and d.name.startswith(".latest-"):
                _remove_dead_latest_tmp(d)
            if d.is_symlink() or not d.is_dir():
                continue
            owner = read_owner(d)
            try:
                if d.name.startswith(PARTIAL):
                    stale = time.time() - d.stat().st_mtime > STALE_PARTIAL_S
                    if (owner is not None and not owner_alive(owner)) or (owner is None and stale):
                        shutil.rmtree(d)
                    continue
                if owner is None or owner_alive(owner):
                    continue
                manifest = _read_json(d / "manifest.json") or {}
                if not manifest.get("incomplete_reason"):
                    reason = DEAD_REASON
                    if manifest.get("complete"):
                        reason += "; its measurements were complete but its report was not written " \
                                  "(mptcplab report DIR writes it)"
                    manifest.update(complete=False, incomplete_reason=reason)
                    summary = _read_json(d / "summary.json")
                    if summary is not None and summary.get("complete"):
                        summary["complete"] = False  # the two files must not disagree
                        write_json(d / "summary.json", summary)
                    write_json(d / "manifest.json", manifest)
                    marked.append(d)
                for tmp in d.glob("*.tmp"):  # a write_json the kill cut between write and rename
                    tmp.unlink(missing_ok=True)
                release(d)
            except OSError:
                continue
    return marked


def _remove_dead_latest_tmp(link: Path) -> None:
    """mark_latest's temporary link of a process killed between making and renaming it."""
    try:
        pid = int(link.name.removeprefix(".latest-"))
    except ValueError:
        return
    if pid != os.getpid() and not Path(f"/proc/{pid}").exists():
        link.unlink(missing_ok=True)
