"""`analyze`: capture files made elsewhere, analyzed as a lab's run is."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import LabInputError, RunFailed

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..analysis.model import FlowAnalysis
    from ..analysis.standalone import Guess


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    an = sub.add_parser("analyze", help="analyze capture files made elsewhere: tables, verdict, figures on request",
                        description="Analyze capture files made elsewhere: writes the tables (CSV) and summary.json "
                                    "into --out and prints the summary; --figures also draws the PNG figures.")
    an.add_argument("pcap", nargs="+", type=Path, help="pcap/pcapng files of one connection, one per capture point")
    an.add_argument("--out", type=Path, help="output directory (default: <first file>-analysis/)")
    an.add_argument("--server-port", type=int, help="the server's port (default: guessed)")
    an.add_argument("--path", action="append", metavar="LABEL=ADDRESS",
                    help="a path label for a client address, e.g. A=10.0.1.2 (repeatable; default: guessed)")
    an.add_argument("--direction", choices=["upload", "download"], help="data direction (default: guessed)")
    an.add_argument("--same-clock", action="store_true",
                    help="the files were captured on one host clock (one machine, e.g. network namespaces): "
                         "one-way delays between the capture points are measured; never for two machines")
    an.add_argument("--figures", action="store_true",
                    help="also draw the figures (dsn, tcp_seq, delivery, resends, throughput PNGs) into "
                         "<out>/figures/, after the summary; off by default: importing and drawing them takes "
                         "longer than the analysis itself on small captures")
    an.add_argument("--packets", action="store_true",
                    help="also write packets.csv: every packet's decoded TCP/MPTCP fields, one row per packet")
    an.add_argument("--clean", action="store_true",
                    help="also write <file>.clean.pcap per file: only the analyzed connection's subflows "
                         "(tcpdump -r/-w with a filter on their 4-tuples), to open in Wireshark")
    an.add_argument("--dry-run", action="store_true",
                    help="with --clean: print the tcpdump commands instead of running them")
    an.add_argument("--follow", type=float, metavar="SECONDS",
                    help="files still being written (tcpdump -U -w): analyze again every SECONDS while they "
                         "grow, rewriting the tables (and with --figures the figures), until they stop growing "
                         "or Ctrl-C")
    an.set_defaults(handler=cmd_analyze)


def cmd_analyze(a: argparse.Namespace) -> int:
    from ..analysis.standalone import analyze_files, describe

    for f in a.pcap:
        if not f.is_file():
            raise LabInputError("command line", "PCAP", f"{f} is not a file")
    paths = None
    if a.path:
        paths = {}
        for item in a.path:
            label, sep, addr = item.partition("=")
            if not sep or not label or not addr:
                raise LabInputError("command line", "--path", f"{item!r}: expected LABEL=ADDRESS")
            paths[addr] = label
    out = a.out or a.pcap[0].with_name(a.pcap[0].stem + "-analysis")

    def run() -> tuple[FlowAnalysis, Guess]:
        fa, g = analyze_files(a.pcap, out, a.server_port, paths, a.direction, same_clock=a.same_clock,
                              packets=a.packets)
        if a.follow is not None and a.figures:     # each round's figures, as its tables
            _figures(fa, out)
        return fa, g

    if a.follow is not None:
        if a.follow <= 0:
            raise LabInputError("command line", "--follow", f"{a.follow}: expected seconds above 0")
        last = _follow(a.pcap, a.follow, run)
        if last is None:
            print("nothing analyzed: no TCP packets in the files")
            return 0
        fa, g = last
    else:
        fa, g = run()
    print("\n".join(describe(fa, g)))
    print(f"tables: {out}", flush=True)
    if a.figures:
        if a.follow is None:        # after the summary: the numbers are on screen while they are drawn
            _figures(fa, out)
        print(f"figures: {out / 'figures'}")
    elif (out / "figures").is_dir():
        print(f"figures: not drawn (--figures draws them); {out / 'figures'} is from an earlier analysis")
    else:
        print("figures: not drawn (--figures draws them)")
    if a.clean:
        _clean(a.pcap, fa, out, a.dry_run)
    return 0


def _figures(fa: FlowAnalysis, out: Path) -> None:
    """The PNG figures into ``out``/figures; matplotlib imported only here (most of the
    command's time on small captures when it was imported and drawn on every run)."""
    from ..results.figures import capture_figures

    capture_figures(fa, out / "figures")


def _follow(files: list[Path], interval: float,
            run: Callable[[], tuple[FlowAnalysis, Guess]]) -> tuple[FlowAnalysis, Guess] | None:
    """``analyze --follow``: analysis/follow.py's rounds, a status line each; the last analysis."""
    from ..analysis.follow import follow, status_line

    last: list[tuple[FlowAnalysis, Guess]] = []

    def once() -> None:
        try:
            last[:] = [run()]
        except (LabInputError, RunFailed) as e:   # no TCP packet, or no file header, yet: just started
            print(f"{time.strftime('%H:%M:%S')} waiting: {e}", flush=True)
            return
        print(status_line(last[0][0]), flush=True)

    try:
        follow(files, interval, once)
    except KeyboardInterrupt:
        print("stopped")
    return last[0] if last else None


def _clean(files: list[Path], fa: FlowAnalysis, out: Path, dry_run: bool) -> None:
    """``analyze --clean``: the filtered copies (analysis/clean.py), or with --dry-run their commands."""
    from ..analysis.clean import clean_commands, clean_path, run_commands

    cmds = clean_commands(files, fa.subflows, out)
    if not cmds:
        print("no filtered copy: the analysis found no connection to keep")
        return
    if dry_run:
        print("\n".join(c.render() for c in cmds))
        return
    for w in run_commands(cmds):
        print(f"warning: {w}")
    print("filtered copies: " + ", ".join(str(clean_path(f, out)) for f in files))
