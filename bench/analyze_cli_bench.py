#!/usr/bin/env python3
"""`mptcplab analyze` as a user runs it, against one bare tshark pass over the same files.

Issue 33's speed target: the whole command (interpreter start, imports, reading, analysis,
tables, summary) faster than one ``tshark -r FILE -T fields -e ...`` pass over the same
files, at every capture size. Each capture set is a directory of pcap/pcapng files (one per
capture point, as a repetition directory's capture-*.pcap) or a single file; each is timed
as separate processes, interleaved, --repeat times:

* ``tshark``: ``tshark -n -r FILE -T fields`` with the fields below, one file after another
  (what a user types for the same files); ``tshark ||``: the files' passes at once, one
  process per file (the best a user gets on several cores).
* ``analyze``: ``mptcplab analyze FILES --out TMP`` (the default: tables, summary, no figures).
* ``analyze --figures``: the same with the figures drawn.

Minimum and median wall time are printed per capture set (the machine may be shared: the
minimum is the run least disturbed, the median says how noisy it was), with the analysis'
packet count and the load average at the end.

    .venv/bin/python bench/analyze_cli_bench.py DIR_OR_FILE... [--repeat 5] [--no-figures]

A quick mtu repetition's captures: ``.venv/bin/mptcplab run labs/mtu --quick --results R``,
then R/mtu/<run>/scenarios/<scenario>/rep1 (mptcp-reverse: ~44k packets; the unshaped
scenarios: ~400-550k). With no argument the captures in tests/data are timed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MPTCPLAB = ROOT / ".venv/bin/mptcplab"
#: what a bare pass over an MPTCP capture asks for: times, addresses, ports, sequence
#: numbers, flags and the MPTCP option's subtype and mapping
FIELDS = ("frame.number", "frame.time_epoch", "ip.src", "ip.dst", "tcp.srcport", "tcp.dstport", "tcp.len",
          "tcp.seq_raw", "tcp.ack_raw", "tcp.flags", "tcp.options.mptcp.subtype",
          "tcp.options.mptcp.rawdataseqno", "tcp.options.mptcp.datalvllen")
DEFAULT_SETS = ("tests/data/tcp__client_eth1.pcap", "tests/data/mptcp_pmtud__client_eth1.pcap")


def tshark_cmd(f: Path) -> list[str]:
    return ["tshark", "-n", "-r", str(f), "-T", "fields", *(a for fld in FIELDS for a in ("-e", fld))]


def capture_files(arg: Path) -> list[Path]:
    if arg.is_file():
        return [arg]
    files = sorted(p for p in arg.iterdir() if p.suffix in (".pcap", ".pcapng") and ".clean." not in p.name)
    if not files:
        sys.exit(f"{arg}: no .pcap/.pcapng file")
    return files


def wall(cmds: list[list[str]], parallel: bool = False) -> float:
    """Seconds until every command has exited (in turn, or all started at once)."""
    w0 = time.perf_counter()
    if parallel:
        procs = [subprocess.Popen(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for c in cmds]
        rcs = [p.wait() for p in procs]
    else:
        rcs = [subprocess.run(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode for c in cmds]
    took = time.perf_counter() - w0
    if any(rcs):
        sys.exit(f"failed ({rcs}): {cmds}")
    return took


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("captures", nargs="*", type=Path, help="capture directories or files (default: tests/data's)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-figures", action="store_true", help="do not time analyze --figures")
    a = ap.parse_args()
    if shutil.which("tshark") is None:
        sys.exit("tshark not found")
    sets = a.captures or [ROOT / p for p in DEFAULT_SETS]
    kinds = ["tshark", "tshark ||", "analyze"] + ([] if a.no_figures else ["analyze --figures"])
    rows = []
    with tempfile.TemporaryDirectory(prefix="analyze-bench-") as td:
        for s in sets:
            files = capture_files(s)
            out = Path(td) / "out"
            cmds = {"tshark": [tshark_cmd(f) for f in files], "tshark ||": [tshark_cmd(f) for f in files],
                    "analyze": [[str(MPTCPLAB), "analyze", *map(str, files), "--out", str(out)]],
                    "analyze --figures": [[str(MPTCPLAB), "analyze", *map(str, files), "--out", str(out),
                                           "--figures"]]}
            times: dict[str, list[float]] = {k: [] for k in kinds}
            for _ in range(a.repeat):           # interleaved: a burst of load hits every kind alike
                for k in kinds:
                    if k.startswith("analyze"):
                        shutil.rmtree(out, ignore_errors=True)
                    times[k].append(wall(cmds[k], parallel=k == "tshark ||"))
            packets = json.loads((out / "summary.json").read_text())["packets"]
            size = sum(f.stat().st_size for f in files) / 1e6
            rows.append((f"{s.name} ({len(files)} file{'s' if len(files) > 1 else ''}, {size:.1f} MB)",
                         packets, times))
    print(f"wall time in s, min / median of {a.repeat} runs each (interleaved); "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end")
    head = f"{'capture':<48} {'packets':>8} " + " ".join(f"{k:>17}" for k in kinds) + "  analyze/tshark (min)"
    print(head)
    for name, packets, times in rows:
        cells = " ".join(f"{min(times[k]):>7.2f} / {statistics.median(times[k]):<7.2f}" for k in kinds)
        ratio = min(times["analyze"]) / min(times["tshark"])
        print(f"{name:<48} {packets:>8} {cells}  {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
