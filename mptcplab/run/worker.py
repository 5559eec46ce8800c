"""The analysis worker: one nice-19 process that analyses repetition k (tshark, CPU-heavy)
while repetition k+1 is measured, and that never outlives the run."""

from __future__ import annotations

import os
import signal


def analysis_worker_init(runner_pid: int) -> None:
    os.nice(19)
    # Ctrl-C goes to the whole process group: the parent decides, the worker finishes its job
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    # A runner killed with SIGKILL cannot stop its worker, which would wait for work
    # forever (issue 12: found by tests/faults). The kernel tells the worker instead
    # (parent-death signal); the worker leads its own process group so that its
    # tshark children go with it.
    os.setpgrp()
    signal.signal(signal.SIGTERM, worker_exit)
    set_parent_death_signal(signal.SIGTERM)
    if os.getppid() != runner_pid:  # the runner died before the line above
        worker_exit(signal.SIGTERM, None)


def set_parent_death_signal(sig: int) -> None:
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, int(sig), 0, 0, 0)


def worker_exit(_signum: int, _frame: object) -> None:
    os.killpg(os.getpgrp(), signal.SIGKILL)  # the worker and whatever it runs
