"""The link check step: each impaired link's RTT on every repetition, its rate once per
run per distinct configuration (linkcheck.py builds and judges the commands), and each
trace direction's replay once per run per distinct (trace, delay, MTU, queue)
(tracecheck.ReplayCheck, on a throwaway line)."""

from __future__ import annotations

import signal
import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..commands import Cmd
from ..emulation.base import delayline_binary
from ..emulation.linkmodel import DirectedLink
from ..lab.network import Link
from ..linkcheck import Check, RateCheckCmds, judge_rate, ping_cmd, rate_check_cmds, rtt_checks
from ..record.model import CalibrationCheck, LinkCalibration, TraceReplay
from ..tracecheck import ReplayCheck, replay_checks
from ..units import parse_time
from ..warncodes import LINK_OUT_OF_TOLERANCE
from .base import READY_TIMEOUT_S, UNTIL_READY, Planned, Rep, Step, answers, wait_for


def _shape_dict(shape: Any, mtu: int, direction: str) -> dict[str, Any]:
    return {"direction": direction, "rate_bps": shape.rate_bps, "delay_s": shape.delay_s, "jitter_s": shape.jitter_s,
            "loss": shape.loss, "queue_bytes": shape.queue_bytes(mtu) if shape.rate_bps or shape.trace else None,
            "mtu": mtu, **({"trace": str(shape.trace.path)} if shape.trace is not None else {})}


def _direction_name(dl: DirectedLink) -> str:
    return f"{dl.src}->{dl.dst}"


def link_calibration(link: Link, checks: list[Check], rate_measured_here: bool,
                     replays: list[TraceReplay]) -> LinkCalibration:
    """One link's checks in this repetition, as manifest.json keeps them (``trace_replays``
    only for a link with a trace)."""
    ab, ba = link.directions()
    return LinkCalibration(link=link.name, configured=_shape_dict(ab.shape, link.mtu, _direction_name(ab)),
                           configured_reverse=_shape_dict(ba.shape, link.mtu, _direction_name(ba)),
                           checks=[CalibrationCheck.model_validate(c.as_dict()) for c in checks],
                           ok=all(c.ok for c in checks), rate_measured_in_this_rep=rate_measured_here,
                           trace_replays=replays or None)


class LinkCheck(Step):
    """RTT on every repetition (both directions at once: a round trip); rate (one TCP flow, or
    UDP above the rate where the queue holds less than a round trip: linkcheck.rate_check_cmds,
    judge_rate) once per run for each distinct link configuration, the result
    shared by every scenario. A symmetric link's rate is checked a -> b only (b -> a is the
    same shape on the same emulator); an asymmetric link's in each direction against its
    own shape, the sender at that direction's source."""

    title = ("link checks (RTT on every repetition; rate, and a trace's replay, once per run per distinct "
             "link configuration)")

    @staticmethod
    def _enabled(rep: Rep) -> bool:
        return rep.ctx.calibrate and rep.body.calibration.enabled

    @staticmethod
    def _links(rep: Rep) -> list[Link]:
        return [link for link in rep.plan.net.links if link.impaired]

    @staticmethod
    def _ends(link: Link) -> tuple[str, str]:
        return str(link.addr(link.a).ip), str(link.addr(link.b).ip)

    def _rate_cmds(self, rep: Rep, link: Link, dl: DirectedLink) -> Any:
        # the client sends: it runs at the direction's source, the server at its end
        return rate_check_cmds(dl.dst.node, dl.src.node, str(link.addr(dl.src).ip), str(link.addr(dl.dst).ip),
                               parse_time(rep.body.calibration.rate_seconds), shape=dl.shape, mtu=link.mtu)

    def _rated(self, rep: Rep, link: Link) -> list[DirectedLink]:
        """The directions whose rate is checked."""
        if not rep.body.calibration.rate_check:
            return []
        dirs = link.directions()[:1] if link.symmetric else link.directions()
        return [dl for dl in dirs if dl.shape.rate_bps]

    @staticmethod
    def _replays(rep: Rep, link: Link) -> list[tuple[DirectedLink, ReplayCheck]]:
        """The link's trace directions and their replay checks (tracecheck.replay_checks)."""
        cal = rep.body.calibration
        return replay_checks(link, rep.body.traffic.events, rep.plan.net,
                             parse_time(cal.trace_seconds) if cal.trace_seconds is not None else None, rep.ctx.quick)

    @staticmethod
    def _ping(link: Link) -> Cmd:
        src, dst = LinkCheck._ends(link)
        return ping_cmd(link.a.node, dst, src, link.shape_ab, back=link.shape_ba)

    def commands(self, rep: Rep) -> list[Planned]:
        out: list[Planned] = []
        if not self._enabled(rep):
            return out
        for link in self._links(rep):
            out.append(Planned(self._ping(link), note=f"link {link.name}: RTT"))
            for dl in self._rated(rep, link):
                rc = self._rate_cmds(rep, link, dl)
                out += [Planned(rc.server, background=True,
                                note=f"link {link.name}: rate {_direction_name(dl)} (once per run)"),
                        Planned(rc.listening, note=UNTIL_READY), Planned(rc.client)]
            seen = set()
            for dl, rc_ in self._replays(rep, link):
                if rc_.key in seen:
                    continue
                seen.add(rc_.key)
                # run by the runner in a two-namespace line of its own (testline.TwoNodeLine), not
                # through the lab's backend: printed as comments
                note = f"link {link.name} {_direction_name(dl)}: {rc_.describe()} (once per run)"
                out += [Planned(c, in_process=True, background=i in (1, 2), note=note if i == 0 else "")
                        for i, c in enumerate(rc_.planned())]
        return out

    def run(self, rep: Rep) -> None:
        if not self._enabled(rep):
            return
        for link in self._links(rep):
            p = rep.backend.run([self._ping(link)])[0]
            checks: list[Check] = rtt_checks(link.shape_ab, p.stdout, back=link.shape_ba)
            rate_measured_here = False
            for dl in self._rated(rep, link):
                key = (link.name, _direction_name(dl), repr(dl.shape), link.mtu)
                if key not in rep.ctx.rate_cache:
                    rc = self._rate_cmds(rep, link, dl)
                    rep.ctx.rate_cache[key] = judge_rate(rc, dl.shape, link.mtu, self._rate(rep, rc),
                                                         _direction_name(dl))
                    rate_measured_here = True
                checks.append(rep.ctx.rate_cache[key])
            replays: list[TraceReplay] = []
            for dl, rc_ in self._replays(rep, link):
                here = rc_.key not in rep.ctx.trace_cache
                if here:
                    rep.ctx.trace_cache[rc_.key] = self._replay(rep, link, dl, rc_)
                checks += [c for c in rep.ctx.trace_cache[rc_.key] if c.direction == _direction_name(dl)] or \
                    [replace(c, direction=_direction_name(dl)) for c in rep.ctx.trace_cache[rc_.key]]
                replays.append(TraceReplay(direction=_direction_name(dl), check=rc_.describe(),
                                           measured_in_this_rep=here))
            entry = link_calibration(link, checks, rate_measured_here, replays)
            if not entry.ok:
                bad = "; ".join(f"{c.quantity}{f' {c.direction}' if c.direction not in (None, 'both') else ''} "
                                f"{c.measured} vs {c.configured} ({c.tolerance})"
                                for c in checks if not c.ok)
                rep.warn(LINK_OUT_OF_TOLERANCE, f"link {link.name} out of tolerance: {bad}")
            rep.calibration.append(entry)

    @staticmethod
    def _replay(rep: Rep, link: Link, dl: DirectedLink, check: ReplayCheck) -> list[Check]:
        """One replay check's verdict (tracecheck.ReplayReport.checks); its report is logged and
        kept beside the repetition (trace-replay-<trace>.txt). A check that could not run is
        a failed check, not a failed repetition."""
        rep.ctx.log(f"link {link.name} {_direction_name(dl)}: {check.describe()}")
        try:
            with tempfile.TemporaryDirectory(prefix="mptcplab-tracecheck-") as tmp:
                report = check.run(delayline_binary(), Path(tmp), rep.ctx.log)
        except (RuntimeError, ValueError, OSError, subprocess.SubprocessError) as e:
            return [Check("trace_replay", 0, None, f"the check failed to run: {e}", False, _direction_name(dl))]
        text = report.render()
        rep.ctx.log(text)
        (rep.out / f"trace-replay-{check.trace.name}.txt").write_text(check.describe() + "\n" + text + "\n")
        return report.checks(_direction_name(dl))

    def _rate(self, rep: Rep, rc: RateCheckCmds) -> str:
        """The rate check's client output (iperf3's JSON)."""
        backend = rep.backend
        assert rc.server.node is not None
        srv = backend.spawn(rc.server.node, rc.server.argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for(lambda: answers(backend, rc.listening), READY_TIMEOUT_S, f"iperf3 on {rc.server.node}")
            return backend.run([rc.client])[0].stdout
        finally:
            backend.signal(srv, signal.SIGTERM)
            srv.wait(timeout=5)


