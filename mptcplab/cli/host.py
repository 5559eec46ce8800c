"""Commands on this host: clean what killed runs left, say what the labs need, calibrate an
emulated link."""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import HostNotReady
from .options import rate_in_tbf

if TYPE_CHECKING:
    from ..emulation.base import Emulator


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    c = sub.add_parser("clean", help="remove namespaces, containers and processes left by killed runs")
    c.add_argument("--all", action="store_true", help="also those of runs still alive")
    c.add_argument("--results", type=Path, default=Path("results"),
                   help="results root whose runs killed before they could say so are marked incomplete "
                        "(default: results/)")
    c.set_defaults(handler=cmd_clean)

    d = sub.add_parser("doctor", help="what the labs need and what this host has")
    d.add_argument("lab", nargs="?", help="also check what this lab needs")
    d.set_defaults(handler=cmd_doctor)

    k = sub.add_parser("calibrate", help="measure an emulated link against its configuration")
    what = k.add_mutually_exclusive_group(required=True)
    what.add_argument("--rate", help="e.g. 100mbit")
    what.add_argument("--trace", help="a delivery trace (a name in traces/, or a file): its replay's bytes per "
                                      "100 ms window against the trace's capacity, under a saturating UDP flood")
    k.add_argument("--delay", default="0ms", help="one-way delay, each direction, e.g. 40ms")
    k.add_argument("--jitter", help="e.g. 2ms (no reordering)")
    k.add_argument("--loss", help="random loss, e.g. 1%%")
    k.add_argument("--buffer", help="queue limit: bytes (150KB) or time at the rate (80ms)")
    k.add_argument("--mtu", type=int, default=1500)
    k.add_argument("--seconds", type=float, help="duration of the goodput and loss tests (default 5), or of the "
                                                 "trace's flood (default: the trace's period + 1 s)")
    # --emulation as `run` names it; --backend, its name before, still works
    k.add_argument("--emulation", "--backend", dest="emulation", choices=["netem", "nfqueue"],
                   help="force the link emulation")
    k.add_argument("--capture", action="store_true", help="tcpdump on both ends while measuring, as labs capture")
    k.add_argument("--rate-in-tbf", action="store_true",
                   help="nfqueue: rate and queue by tbf at the sender, not by the delay line (the default; "
                        "see emulation/nfqueue.py)")
    k.set_defaults(handler=cmd_calibrate)


def _emulator(force: str | None) -> Emulator:
    """The emulator of `calibrate` (a line of network namespaces)."""
    from ..emulation.hostprobe import netem_available
    from ..emulation.select import select_emulator

    return select_emulator(force, netem_available() if force != "nfqueue" else False)


def cmd_clean(a: argparse.Namespace) -> int:
    if os.geteuid() != 0:
        raise HostNotReady("clean removes network namespaces and processes of runs: run as root")
    from .. import backends

    for name in backends.names():
        cls = backends.get(name)
        removed = cls.clean(all_runs=a.all)
        print(f"removed {len(removed)} {cls.cleans}" + (": " + " ".join(removed) if removed else ""))
    from ..probes.tracefs import clean as clean_tracefs

    removed = clean_tracefs(all_runs=a.all)
    print(f"removed {len(removed)} tracefs instance(s)" + (": " + " ".join(removed) if removed else ""))
    from ..cc.holds import clean as clean_ccs

    removed = clean_ccs(all_runs=a.all)
    print(f"unregistered {len(removed)} congestion control(s) no live run held"
          + (": " + " ".join(removed) if removed else ""))
    from ..record.store import mark_dead_runs

    for d in mark_dead_runs(a.results):
        print(f"marked incomplete (owner process died): {d}")
    return 0


def cmd_doctor(a: argparse.Namespace) -> int:
    from ..doctor import checks, lab_needs, reachability, render
    from ..lab.loader import load_lab

    lab = load_lab(a.lab) if a.lab else None  # a bad lab fails in one line, before the host table
    items = checks()
    print(render(items))
    print("\n" + "\n".join(reachability(items, lab)))
    problems = [f"{i.name}: {i.fix}" for i in items if i.required and not i.ok]
    if lab is not None:
        problems = lab_needs(lab, items)
    if problems:
        print("\nlabs cannot run here until fixed:\n  " + "\n  ".join(problems))
        return 1
    print("\nall labs' requirements are met on this host")
    return 0


def cmd_calibrate(a: argparse.Namespace) -> int:
    if a.trace is not None:
        return _calibrate_trace(a)
    from ..calibrate import CalibrateRequest, calibrate, render

    req = CalibrateRequest(rate=a.rate, delay=a.delay, jitter=a.jitter, loss=a.loss, buffer=a.buffer, mtu=a.mtu,
                           seconds=5.0 if a.seconds is None else a.seconds, capture=a.capture)
    from ..calibrate import _line_lab

    _line_lab(req)  # validate before anything is created
    if os.geteuid() != 0:
        raise HostNotReady("calibrate creates network namespaces and qdiscs: run as root")
    em = rate_in_tbf(_emulator(a.emulation), a.rate_in_tbf)
    from ..emulation.linkmodel import LinkShape

    # a direction without delay has no delay line, so tbf keeps its rate
    paced = getattr(em, "rate_in_delayline", False) and LinkShape.parse(a.rate, a.delay, a.jitter).needs_delay
    print(f"link: rate {a.rate}, one-way delay {a.delay} each direction"
          + (f", jitter {a.jitter}" if a.jitter else "") + (f", loss {a.loss}" if a.loss else "")
          + (f", buffer {a.buffer}" if a.buffer else "") + f", MTU {a.mtu}; emulation: {em.name}"
          + (" (rate and queue in the delay line, no tbf)" if paced else ""))
    with tempfile.TemporaryDirectory(prefix="mptcplab-cal-") as wd:
        ok, checks = calibrate(req, em, Path(wd))
    print(render(checks))
    print("within tolerance" if ok else "OUT OF TOLERANCE")
    return 0 if ok else 1


def _calibrate_trace(a: argparse.Namespace) -> int:
    """`calibrate --trace`: the delay line's trace stage, so nfqueue only, and a flood that
    jitter, loss or a capture would make unsaturating or unreadable."""
    from ..calibrate import CLI, TraceCalibrateRequest, calibrate_trace, check_trace_request
    from ..emulation.nfqueue import NfqueueEmulator
    from ..errors import LabInputError

    for opt, val in (("--jitter", a.jitter), ("--loss", a.loss), ("--capture", a.capture or None),
                     ("--rate-in-tbf", a.rate_in_tbf or None), ("--emulation netem", a.emulation == "netem" or None)):
        if val is not None:
            raise LabInputError(CLI, opt, "not with --trace (the replay is checked under a lossless, jitter-free "
                                          "flood, in the delay line's trace stage)")
    cal = check_trace_request(TraceCalibrateRequest(trace=a.trace, delay=a.delay, buffer=a.buffer, mtu=a.mtu,
                                                    seconds=a.seconds), Path.cwd())
    if os.geteuid() != 0:
        raise HostNotReady("calibrate creates network namespaces and qdiscs: run as root")
    print(f"link: {cal.describe()}")
    with tempfile.TemporaryDirectory(prefix="mptcplab-cal-") as wd:
        report = calibrate_trace(cal, NfqueueEmulator().binary, Path(wd))
    print(report.render())
    return 0 if report.ok else 1
