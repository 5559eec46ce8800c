"""Who uses an engine congestion control: a reference count of runs, kept as files.

A repetition that needs ``mptcp_lia`` writes a hold, ``/run/mptcplab/cc-mptcp_lia-<hex>.json``
(its PID, runstate.write_state), and registers the congestion control if the kernel does
not list it yet. When it lets go it removes its hold and unregisters the congestion
control only if no other hold names a live process. Both happen under an exclusive
flock on ``/run/mptcplab/cc-mptcp_lia.lock``, so two runs never interleave a check and a
(un)registration. The hold is written before the registration, so a run killed at any
point leaves a hold of a dead process, and ``clean`` (run by ``mptcplab clean`` and at
the start and end of every run) unregisters what only dead processes held.

A registered ``mptcp_lia`` that no live hold names is a leftover, whoever registered it.
"""

from __future__ import annotations

import fcntl
import json
import secrets
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .. import runstate
from ..commands import Cmd
from .bpfcc import BPF_CCS, BpfCc

#: runs a host command (a backend's ``run`` logs it to the repetition's commands.log)
Execute = Callable[[Cmd], object]
#: an upper bound for bpftool: loading means the verifier checks every program
BPFTOOL_TIMEOUT_S = 60.0


def host_execute(c: Cmd) -> None:
    p = subprocess.run(list(c.argv), capture_output=True, text=True, timeout=BPFTOOL_TIMEOUT_S, check=False)
    if p.returncode != 0 and c.check:
        tail = (p.stderr or p.stdout).strip().splitlines()
        raise RuntimeError(f"{' '.join(c.argv)} failed (exit {p.returncode}): {tail[-1] if tail else ''}")


@dataclass(frozen=True)
class Hold:
    cc: BpfCc
    path: Path
    #: this hold's registration made it appear (False: another run had it registered)
    registered_here: bool


def _lock_path(cc: BpfCc) -> Path:
    return runstate.STATE_DIR / f"cc-{cc.name}.lock"


def _hold_glob(cc: BpfCc) -> str:
    return f"cc-{cc.name}-*.json"


@contextmanager
def _locked(cc: BpfCc) -> Iterator[None]:
    runstate.STATE_DIR.mkdir(parents=True, exist_ok=True)
    with _lock_path(cc).open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # released when the file closes, also if we die
        yield


def _live_holds(cc: BpfCc) -> list[Path]:
    """Holds of live processes (ours included: one process may hold it twice)."""
    out = []
    for f in sorted(runstate.STATE_DIR.glob(_hold_glob(cc))):
        try:
            pid = int(json.loads(f.read_text()).get("pid", 0))
        except (OSError, ValueError, TypeError, AttributeError):
            continue
        if runstate.alive(pid):
            out.append(f)
    return out


def acquire(cc: BpfCc, holder: str, execute: Execute = host_execute) -> Hold:
    """Hold cc for ``holder`` (a repetition's directory, for the record), registering it
    when the kernel does not list it. Raises when the registration fails (the hold goes)."""
    with _locked(cc):
        path = runstate.STATE_DIR / f"cc-{cc.name}-{secrets.token_hex(4)}.json"
        runstate.write_state(path, {"cc": cc.name, "holder": holder})
        if cc.registered():
            return Hold(cc, path, registered_here=False)
        try:
            execute(cc.register_cmd())
            if not cc.registered():
                raise RuntimeError(f"{cc.name} was registered but the kernel does not list it "
                                   "(tcp_available_congestion_control)")
        except BaseException:
            path.unlink(missing_ok=True)
            raise
        return Hold(cc, path, registered_here=True)


def release(hold: Hold, execute: Execute = host_execute) -> bool:
    """Let go of a hold; unregister when no other live process holds it. Returns
    whether it was unregistered."""
    cc = hold.cc
    with _locked(cc):
        hold.path.unlink(missing_ok=True)
        if _live_holds(cc) or not cc.registered():
            return False
        _unregister(cc, execute)
        return True


def _unregister(cc: BpfCc, execute: Execute) -> None:
    execute(cc.unregister_cmd())
    if cc.registered():
        raise RuntimeError(f"{' '.join(cc.unregister_cmd().argv)} left {cc.name} registered")


def clean(all_runs: bool = False, execute: Execute = host_execute) -> list[str]:
    """Remove the holds of processes that are gone (every hold with all_runs; our own
    PID's count as gone, as in runstate.run_states: whatever our runs still hold when
    clean is called was left by an interrupted teardown), and unregister each engine
    congestion control no live process holds. Returns the names unregistered."""
    removed: list[str] = []
    for cc in BPF_CCS.values():
        with _locked(cc):
            live = False
            for st in runstate.run_states(_hold_glob(cc), all_runs):
                if st.live:
                    live = True
                else:
                    st.path.unlink(missing_ok=True)
            if not live and cc.registered():
                _unregister(cc, execute)
                removed.append(cc.name)
    return removed
