"""Command line: ``mptcplab <command>``. Each module of this package owns a group of commands,
their arguments (``register``) and their handlers; this one assembles the parser and turns
the engine's errors into one line and an exit status (2: bad input, 3: host not ready,
1: run failed, 130: interrupted)."""

from __future__ import annotations

import argparse
import os
import sys

from .. import __version__
from ..errors import HostNotReady, LabInputError, RunFailed
from . import analyze, campaign, host, lab, records, reproductions

# the order `mptcplab --help` lists them in
COMMANDS = (lab, host, campaign, records, reproductions, analyze)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mptcplab", description="Rerun published MPTCP experiments on this kernel.")
    p.add_argument("--version", action="version", version=f"mptcplab {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    for group in COMMANDS:
        group.register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    a = _parser().parse_args(argv)
    try:
        status: int = a.handler(a)
        return status
    except LabInputError as e:
        print(f"mptcplab: error: {e}", file=sys.stderr)
        return 2
    except HostNotReady as e:
        print(f"mptcplab: host not ready: {e}", file=sys.stderr)
        return 3
    except RunFailed as e:
        print(f"mptcplab: run failed: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        finished: tuple[int, str | None] | None = getattr(a, "finished", None)
        if finished is not None:  # after the run was marked: its status stands (cmd_run)
            status, unsaid = finished
            print(unsaid or "mptcplab: interrupted after the run finished", file=sys.stderr)
            return status
        # Ctrl-C outside a run's own handling (e.g. while its report is written): the run
        # directory keeps its owner record, so `mptcplab clean` or the next run marks it
        print("mptcplab: interrupted", file=sys.stderr)
        return 130
    except OSError as e:
        from ..record.store import STORAGE_ERRNOS

        if e.errno in STORAGE_ERRNOS and a.command == "run":
            # a results directory that filled up (or went read-only) mid-run: the run tore
            # its network down on the way out; what it had written stays, marked incomplete
            where = e.filename or getattr(a, "results", None) or "the results directory"
            print(f"mptcplab: run failed: cannot write {where}: {e.strerror}; "
                  f"free space or choose another --results (the run is incomplete)", file=sys.stderr)
            return 1
        # last resort: whatever a subcommand did not foresee is one line, not a traceback
        if os.environ.get("MPTCPLAB_DEBUG") == "1":
            raise
        return _os_error(e)


def _os_error(e: OSError) -> int:
    what = e.strerror or str(e) or type(e).__name__
    where = f": {e.filename}" if e.filename else ""
    if isinstance(e, PermissionError):
        print(f"mptcplab: host not ready: {what}{where} (run as root?)", file=sys.stderr)
        return 3
    print(f"mptcplab: error: {what}{where} (MPTCPLAB_DEBUG=1 shows where)", file=sys.stderr)
    return 1

