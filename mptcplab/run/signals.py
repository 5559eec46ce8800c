"""Signals during a run: SIGTERM/SIGINT/SIGHUP become ``Interrupted`` so teardown runs on
every exit path; while the last files are written they are recorded instead (DeferredSignals)."""

from __future__ import annotations

import signal
from typing import Any


class Interrupted(Exception):
    """SIGTERM/SIGINT during a run; teardown runs, the run is marked incomplete."""


_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def install_signal_handlers() -> dict[int, Any]:
    """Turn SIGTERM/SIGINT/SIGHUP into Interrupted; after the first one, further
    signals are ignored so the teardown it triggers is not itself interrupted.
    Returns the previous handlers (restore_signal_handlers)."""

    def handler(signum: int, _frame: Any) -> None:
        for s in _SIGNALS:
            signal.signal(s, signal.SIG_IGN)
        raise Interrupted(signal.Signals(signum).name)

    return {s: signal.signal(s, handler) for s in _SIGNALS}


def restore_signal_handlers(previous: dict[int, Any]) -> None:
    for s, h in previous.items():
        signal.signal(s, h)


class DeferredSignals:
    """While a run writes its last files (manifest, summary, report), SIGTERM/SIGINT/SIGHUP
    must not cut a write in half: from construction on they are recorded, not raised, and
    the run reads ``got`` when it is done (then marks itself interrupted). The caller
    restores the handlers it had (restore_signal_handlers)."""

    def __init__(self) -> None:
        self.got: str | None = None
        for s in _SIGNALS:
            signal.signal(s, self._record)

    def _record(self, signum: int, _frame: Any) -> None:
        self.got = self.got or signal.Signals(signum).name
