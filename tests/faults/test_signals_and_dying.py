"""SIGTERM and SIGINT at random moments; an iperf3 server, a tcpdump and a delay line
killed from outside mid-run. A run that handles the fault itself must leave nothing
behind without any help; after `mptcplab clean` nothing of any run may be left; the
run directory says what happened."""

from __future__ import annotations

import json
import os
import random
import signal
import time
from pathlib import Path

import pytest
from faults_harness import (
    Before,
    Session,
    Watcher,
    clean,
    descendants,
    finished_complete,
    leftovers,
    new_capture_bytes,
    output,
    phase,
    results_problems,
    run_and_signal,
    run_dirs,
    seed,
    start,
    start_ticks,
)

pytestmark = pytest.mark.netns


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_at_random_moment(faults: Session, sig: int) -> None:
    at = random.Random(f"{seed()}-{signal.Signals(sig).name}").uniform(0, faults.run_seconds)
    known = {str(d.relative_to(faults.results)) for d in run_dirs(faults.results)}
    before = Before.take()
    o = run_and_signal(faults.results, at, sig)
    where = phase(faults.results, known)
    tag = f"seed {seed()}, {signal.Signals(sig).name} at {at:.2f} s ({where}; runner rc {o.rc})"
    print(f"\n{tag}")
    if o.rc == 130:  # handled: the run tore itself down and said so
        assert not leftovers(o.seen, faults.results, before), tag
        new = [d for d in run_dirs(faults.results) if str(d.relative_to(faults.results)) not in known]
        if where == "before the run directory":
            # Ctrl-C before the run began (e.g. while the host is checked): one line, nothing made
            assert new == [] and "Traceback" not in o.stderr, tag
        else:
            assert len(new) == 1, tag
            m = json.loads((new[0] / "manifest.json").read_text())
            assert m["complete"] is False and \
                m["incomplete_reason"] == f"interrupted by {signal.Signals(sig).name}", tag
    elif o.rc is not None and o.rc >= 0 and where == "report written":
        assert finished_complete(faults.results, o) is None, tag  # the signal came after the run
    clean(faults.results)
    assert not leftovers(o.seen, faults.results, before), tag
    assert not results_problems(faults.results, faults.complete), tag
    faults.add_complete()


def _run_procs(runner: int, namespaces: set[str]) -> list[tuple[int, int | None, str, str]]:
    """(pid, start time, comm, argv) of the runner's processes in the run's namespaces: one
    walk of /proc (no `ip netns pids` per namespace: that takes a second on a loaded host,
    and the kill must not come that late)."""
    inodes = set()
    for n in namespaces:
        try:
            inodes.add(os.stat(f"/run/netns/{n}").st_ino)
        except OSError:
            continue
    out = []
    for pid, (st, comm) in descendants(runner).items():
        try:
            if os.stat(f"/proc/{pid}/ns/net").st_ino not in inodes:
                continue
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        out.append((pid, st, comm, argv))
    return out


#: captured bytes that say data segments flow (the control exchange writes a few hundred)
DATA_FLOWS = 64 * 1024
#: how long after that the kill comes: past iperf3's first one-second report interval, so
#: the client's JSON shows data went out (a test that never started is measured again:
#: runner.measure_repetition) and well before the end of the 3 s transfer
KILL_AFTER_DATA_S = 1.5


@pytest.mark.parametrize("victim", [("iperf3", " -s "), ("tcpdump", ""), ("mptcplab-delayl", "")],
                         ids=["iperf3-server", "tcpdump", "delay-line"])
def test_process_of_the_run_dies(faults: Session, victim: tuple[str, str]) -> None:
    """Killed (SIGKILL, from outside, found in the run's namespaces) mid-transfer: the
    measured iperf3 client runs and its data has flowed for KILL_AFTER_DATA_S. The run must
    end by itself, leave nothing, and never present the result as complete and valid.

    The moment is chosen from evidence, not from how long a listing takes: listing the
    victim with `ip netns pids` after the client was seen let the kill land after the
    transfer on a loaded host (CI: the server killed then passed as valid, before
    servers_died), and a kill at the client's first sighting comes before any data (the
    repetition is then rightly measured again, and valid)."""
    comm, argv_has = victim
    known = {str(d.relative_to(faults.results)) for d in run_dirs(faults.results)}
    before = Before.take()
    p = start(faults.results)
    w = Watcher(p.pid)
    w.start()
    killed: list[int] = []
    data_since: float | None = None
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and p.poll() is None and not killed:
            if data_since is None and new_capture_bytes(faults.results, known) >= DATA_FLOWS:
                data_since = time.monotonic()
            if data_since is not None and time.monotonic() - data_since >= KILL_AFTER_DATA_S:
                namespaces = {n for n in w.seen.namespaces if not n.startswith("mplt")}  # not host probes
                procs = _run_procs(p.pid, namespaces)
                if any(c == "iperf3" and " -c " in argv for _, _, c, argv in procs):
                    for pid, st in [(pid, st) for pid, st, c, argv in procs if c == comm and argv_has in argv][:1]:
                        if start_ticks(pid) != st:
                            continue  # exited since the listing: look again
                        try:
                            os.kill(pid, signal.SIGKILL)
                        except ProcessLookupError:
                            continue
                        killed.append(pid)
            time.sleep(0.02)
        assert killed, f"no {comm} found while the measured flow ran"
        rc = p.wait(timeout=180)  # the run ends by itself: no hang
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        seen = w.stop()
    out, err = output(p)
    tag = f"{comm} killed mid-traffic; runner rc {rc}; stderr: {err.strip()[-600:]}"
    print(f"\n{tag}")
    assert not leftovers(seen, faults.results, before), tag  # the run's own teardown, no clean
    new = [d for d in run_dirs(faults.results) if str(d.relative_to(faults.results)) not in known]
    assert len(new) == 1, tag
    m = json.loads((new[0] / "manifest.json").read_text())
    summary = json.loads((new[0] / "summary.json").read_text())
    # never a complete and valid result: incomplete with a reason, or invalid with reasons
    assert rc != 0, tag
    if m["complete"]:
        assert summary["valid"] is False and summary["invalid_reasons"], tag
    else:
        assert m["incomplete_reason"], tag
    assert len(err.strip().splitlines()) == 1, f"not one line: {tag}"
    clean(faults.results)
    assert not results_problems(faults.results, faults.complete), tag
    faults.add_complete()
