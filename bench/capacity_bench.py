"""Re-measure the thresholds of mptcplab/emulation/capacity.py (``Limits``), on an idle machine.

Not a test, and not for a shared machine: the thresholds say what the delay line keeps time
at, so measuring them while other jobs load the CPUs moves them down (the ones in capacity.py
were measured before the delay line paced by default, and under load 9-11). Run it when the
host is otherwise quiet; it says the load before and after every configuration, and warns
when the host is busy (one-minute load above ``BUSY_PER_CPU`` x CPUs).

Each quantity of the estimate is swept on its own across its two thresholds, the others
held well below theirs, with one TCP flow over a two-namespace line shaped by the NFQUEUE
delay line (its rate stage, the default), captures on both ends as labs capture; a
configuration passes with bench/emulation_bench.py's rule (goodput >= 93 % of the rate,
ping min RTT within 2 % + 0.3 ms, delay lines healthy: no drops of their own, release
lateness p99 within max(0.5 ms, 5 % of the delay)):

* ``line_pps``: packets/s of one direction at 20 ms one way (held stays below its fits);
* ``line_pps_short``: the same below 10 ms (2 ms), where only the 0.5 ms floor is allowed;
* ``held``: packets held at once, 100 Mbit/s at longer and longer delays;
* ``host_pps``: delay lines together, two (then three) 40 ms lines at once at rising rates,
  each within line_pps's fits (the packets/s of both directions of every link, as
  capacity.estimate counts them).

For each quantity: the largest value that passed (``fits``) and the smallest that failed
(``beyond``), next to today's ``Limits``, and the ``Limits(...)`` to paste when the
measurement says they moved. ``--repeat N`` runs each configuration N times; it passes
only if every run does.

Usage (root, idle host, ~10-20 min with the defaults):
  .venv/bin/python bench/capacity_bench.py [--only line_pps,held] [--repeat 2] [--seconds 5]
      [--json out.json]
  .venv/bin/python bench/capacity_bench.py --list      # the configurations, no root needed
"""

from __future__ import annotations

import argparse
import concurrent.futures
import importlib.util
import json
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mptcplab.emulation.capacity import ACK_FACTOR, DEFAULT_LIMITS, Limits, full_frames_per_s
from mptcplab.emulation.linkmodel import LinkShape
from mptcplab.emulation.nfqueue import NfqueueEmulator
from mptcplab.linkcheck import tcp_timing

#: one-minute load per CPU above which the host is not idle enough for these numbers
BUSY_PER_CPU = 0.5


@dataclass(frozen=True)
class Config:
    """One configuration of a sweep: ``lines`` identical links measured at once."""

    quantity: str
    rate_mbit: float
    delay_ms: float
    lines: int = 1

    @property
    def pps(self) -> float:
        return full_frames_per_s(self.rate_mbit * 1e6)

    @property
    def value(self) -> float:
        """The quantity this configuration puts on the delay line(s)."""
        if self.quantity == "held":
            return self.pps * self.delay_ms / 1e3
        if self.quantity == "host_pps":
            return self.pps * ACK_FACTOR * self.lines
        return self.pps

    def label(self) -> str:
        n = f"{self.lines} x " if self.lines > 1 else ""
        return f"{self.quantity}: {n}{self.rate_mbit:g} Mbit/s {self.delay_ms:g} ms -> {self.value:,.0f}"


SWEEPS: dict[str, list[Config]] = {
    "line_pps": [Config("line_pps", r, 20) for r in (400, 700, 1000, 1500, 2000, 2500)],
    "line_pps_short": [Config("line_pps_short", r, 2) for r in (400, 700, 1000, 1500, 2000, 2500)],
    "held": [Config("held", 400, d) for d in (100, 200, 300, 400, 500)],
    # each line at most 1 Gbit/s (line_pps fits): what fails is the lines together, not one
    "host_pps": [*(Config("host_pps", r, 40, lines=2) for r in (400, 600, 800, 1000)), Config("host_pps", 1000, 40, 3)],
}

#: today's thresholds per quantity: (fits, beyond); host_pps per CPU in Limits
def current(limits: Limits, cpus: int) -> dict[str, tuple[float, float]]:
    return {"line_pps": (limits.line_pps_fits, limits.line_pps_beyond),
            "line_pps_short": (limits.line_pps_fits_short, limits.line_pps_beyond),
            "held": (limits.held_fits, limits.held_beyond),
            "host_pps": (limits.host_pps_fits_per_cpu * cpus, limits.host_pps_beyond_per_cpu * cpus)}


@dataclass(frozen=True)
class Threshold:
    quantity: str
    fits: float | None    # the largest value that passed (None: none passed)
    beyond: float | None  # the smallest value that failed (None: none failed)
    #: a pass above a failure: the host's noise, not the delay line; re-run with --repeat
    inconsistent: bool


def derive(rows: list[dict[str, Any]]) -> dict[str, Threshold]:
    """Per quantity, from the measured rows (``quantity``, ``value``, ``ok``)."""
    out = {}
    for q in dict.fromkeys(r["quantity"] for r in rows):
        mine = [r for r in rows if r["quantity"] == q]
        passed = [r["value"] for r in mine if r["ok"]]
        failed = [r["value"] for r in mine if not r["ok"]]
        fits = max(passed) if passed else None
        beyond = min(failed) if failed else None
        out[q] = Threshold(q, fits, beyond, fits is not None and beyond is not None and fits > beyond)
    return out


def suggested_limits(found: dict[str, Threshold], cpus: int, base: Limits = DEFAULT_LIMITS) -> Limits:
    """Limits with every threshold the sweeps pinned down replaced (the rest kept)."""
    kw: dict[str, float] = {}
    names = {"line_pps": ("line_pps_fits", "line_pps_beyond"), "line_pps_short": ("line_pps_fits_short", None),
             "held": ("held_fits", "held_beyond"),
             "host_pps": ("host_pps_fits_per_cpu", "host_pps_beyond_per_cpu")}
    for q, t in found.items():
        if t.inconsistent:
            continue
        per = cpus if q == "host_pps" else 1
        fits_name, beyond_name = names[q]
        if t.fits is not None:
            kw[fits_name] = t.fits / per
        if beyond_name is not None and t.beyond is not None:
            kw[beyond_name] = t.beyond / per
    return Limits(**{**base.__dict__, **kw})


def _emulation_bench() -> Any:
    # a sibling script, not a package: loaded by path (its measure() is the pass rule)
    spec = importlib.util.spec_from_file_location("emulation_bench", Path(__file__).with_name("emulation_bench.py"))
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # as an import would (dataclasses look their module up there)
    spec.loader.exec_module(mod)
    return mod


def run_config(c: Config, seconds: float, wd: Path, measure: Callable[..., dict[str, Any]]) -> dict[str, Any]:
    em = NfqueueEmulator()
    rate, delay = f"{c.rate_mbit:g}mbit", f"{c.delay_ms:g}ms"
    omit, dur = tcp_timing(LinkShape.parse(rate=rate, delay=delay), 1500, seconds)

    def one_line(i: int) -> dict[str, Any]:
        # a directory per line: the lines' delay-line control files and logs share names
        # (three lines in one directory removed each other's control file)
        d = wd / f"line{i}"
        d.mkdir(parents=True, exist_ok=True)
        return measure(em, rate, delay, None, True, dur, omit, d)

    with concurrent.futures.ThreadPoolExecutor(c.lines) as ex:
        rows = list(ex.map(one_line, range(c.lines)))
    return {"quantity": c.quantity, "rate_mbit": c.rate_mbit, "delay_ms": c.delay_ms, "lines": c.lines,
            "value": c.value, "ok": all(r["ok"] for r in rows), "load_before": rows[0]["load_before"],
            "load_after": rows[-1]["load_after"], "runs": rows}


def _why(runs: list[dict[str, Any]]) -> str:
    """What failed, in a few words: the goodput ratio, the RTT, the delay lines' problems."""
    out = []
    for r in (line for run in runs for line in run["runs"] if not line["ok"]):
        if not r.get("goodput_ok", True):
            out.append(f"goodput {r['goodput_ratio']:.0%} of the rate")
        if not r.get("rtt_ok", True):
            out.append(f"min RTT {r['rtt_min_ms']:.2f} ms for {r['rtt_want_ms']:.1f}")
        out += r.get("problems", [])[:2]
    return ": " + "; ".join(dict.fromkeys(out)) if out else ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default=",".join(SWEEPS), help="quantities, comma separated")
    ap.add_argument("--repeat", type=int, default=1, help="runs per configuration (all must pass)")
    ap.add_argument("--seconds", type=float, default=5.0, help="measured seconds (at least 10 RTTs)")
    ap.add_argument("--json", type=Path, help="write every row here")
    ap.add_argument("--list", action="store_true", help="print the configurations and exit")
    a = ap.parse_args()
    wanted = [q for q in a.only.split(",") if q]
    unknown = [q for q in wanted if q not in SWEEPS]
    if unknown:
        print(f"unknown quantity {', '.join(unknown)}; known: {', '.join(SWEEPS)}", file=sys.stderr)
        return 2
    cpus = os.cpu_count() or 1
    now = current(DEFAULT_LIMITS, cpus)
    if a.list:
        for q in wanted:
            print(f"# {q}: today fits <= {now[q][0]:,.0f}, beyond > {now[q][1]:,.0f}")
            for c in SWEEPS[q]:
                print("  " + c.label())
        return 0
    if os.geteuid() != 0:
        print("needs root (network namespaces)", file=sys.stderr)
        return 2
    load = os.getloadavg()[0]
    print(f"# host: {cpus} CPUs, load {load:.2f}")
    if load > BUSY_PER_CPU * cpus:
        print(f"# WARNING: the host is busy (load {load:.1f} > {BUSY_PER_CPU * cpus:g}): thresholds measured now "
              "are lower than the delay line's own", flush=True)
    measure = _emulation_bench().measure
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="mptcplab-capacity-") as tmp:
        for q in wanted:
            for c in SWEEPS[q]:
                runs = [run_config(c, a.seconds, Path(tmp), measure) for _ in range(a.repeat)]
                row = {**runs[0], "ok": all(r["ok"] for r in runs), "repeats": runs}
                rows.append(row)
                print(f"{c.label()}: {'OK' if row['ok'] else 'FAIL'} (load {row['load_before']:.1f}"
                      f"->{runs[-1]['load_after']:.1f}){_why(runs)}", flush=True)
    found = derive(rows)
    print("\n# quantity        measured fits / beyond      today fits / beyond")
    for q, t in found.items():
        f = "-" if t.fits is None else f"{t.fits:,.0f}"
        b = "-" if t.beyond is None else f"{t.beyond:,.0f}"
        print(f"  {q:15} {f:>10} / {b:<12} {now[q][0]:>10,.0f} / {now[q][1]:,.0f}"
              + ("   INCONSISTENT (a pass above a failure: re-run with --repeat)" if t.inconsistent else ""))
    print(f"\n# capacity.py, if these numbers hold on an idle host:\n{suggested_limits(found, cpus)!r}")
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
