"""Stopping the link-emulation daemons after traffic: SIGTERM, so each writes its
statistics (the delay lines' apart from the other daemons')."""

from __future__ import annotations

from .base import Planned, Rep, Step


class StopDaemons(Step):
    title = "stop link-emulation daemons (SIGTERM: they write their statistics)"

    def commands(self, rep: Rep) -> list[Planned]:
        return []

    def run(self, rep: Rep) -> None:
        lines = {rd.daemon.name for rd in rep.running.running if rd.daemon.delay_line}
        stats = rep.running.stop_all()
        rep.extra["delay_line_stats"] = {n: s for n, s in stats.items() if n in lines}
        rep.extra["daemon_stats"] = {n: s for n, s in stats.items() if n not in lines}

