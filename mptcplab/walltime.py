"""How long a run will take, said before it starts (the dry run's header, the run's first
lines, manifest.json ``estimate``): every repetition's traffic seconds plus an overhead
per repetition for set-up, link checks, captures' and daemons' stops and teardown.

The overhead is the lab's own when the results root has a complete run of it (its
manifest's wall_seconds minus traffic_seconds over its repetitions: same host, same
link checks), else DEFAULT_OVERHEAD_S plus the trace replay checks' floods, once per run per
distinct check (tracecheck.replay_checks: a whole trace in a full run, about a minute for a
60 s trace), which the default overhead does not hold. Analysis overlaps the next repetition
(run/lab.py), so it adds nothing but the last repetition's."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .lab.model import Lab, ScenarioRun
from .lab.schema import ExperimentBody
from .steps.flows import background_flows, event_started, flow_seconds
from .units import parse_time

#: seconds per repetition besides its traffic, measured on the 2-core development host with
#: nothing else running: the rcvbuf "paper" subset took 1386 s of wall time for 1320 s of
#: traffic in 27 repetitions (2.4 s each; its links need pings over a 150 ms path and rate
#: checks), labs/cc 342 s for 301 s in 30 (1.4 s). A loaded host took 13 s per rcvbuf
#: repetition, so the default leans to the slower side of the idle measurements.
DEFAULT_OVERHEAD_S = 3.0


@dataclass(frozen=True)
class Estimate:
    repetitions: int
    traffic_seconds: float
    overhead_per_rep_s: float
    #: where the overhead comes from: "default" or the run directory it was measured in
    overhead_source: str
    #: flows that end by count (their bytes sent, their connections made) whose duration is a
    #: limit; with no earlier run to say how long they took, traffic_seconds is an upper bound
    by_count: tuple[str, ...] = ()
    #: the run whose measured traffic per repetition bounded those flows' seconds, if any
    traffic_source: str | None = None
    #: the trace replay checks' floods, once per run (0 when a past run's overhead holds them)
    replay_seconds: float = 0.0

    @property
    def wall_seconds(self) -> float:
        return self.traffic_seconds + self.repetitions * self.overhead_per_rep_s + self.replay_seconds

    def record(self) -> dict[str, Any]:
        return {**asdict(self), "wall_seconds": round(self.wall_seconds, 1)}

    def line(self) -> str:
        source = ("the default, measured on a 2-core host" if self.overhead_source == "default"
                  else f"as measured in {self.overhead_source}")
        bound = self.by_count and self.traffic_source is None
        traffic = f"{self.traffic_seconds:.0f} s of traffic"
        if self.by_count:
            names = ", ".join(self.by_count)
            traffic += (f" (flow(s) {names} end by count: their durations are limits, so this is an upper bound)"
                        if bound else f" (flow(s) {names} end by count: as long as they took in {self.traffic_source})")
        replays = f" + {self.replay_seconds:.0f} s of trace replay checks" if self.replay_seconds else ""
        return (f"estimated wall time: {'at most ' if bound else ''}{_clock(self.wall_seconds)} = {traffic} + "
                f"{self.repetitions} repetition(s) x {self.overhead_per_rep_s:.1f} s of set-up, checks and "
                f"teardown ({source}){replays}")


def traffic_seconds(body: ExperimentBody, quick: bool) -> float:
    """One repetition's traffic: until its last timed flow ends (flows run side by side; a
    flow a timeline event starts begins at the event's time; background flows last as long
    as the others)."""
    by_event = event_started(body)
    background = set(background_flows(body))
    ends = [by_event.get(name, parse_time(f.start)) + flow_seconds(body, f, quick)
            for name, f in body.traffic.flows.items() if name not in background]
    return max(ends, default=0.0)


def ends_by_count(body: ExperimentBody) -> tuple[str, ...]:
    """Timed flows that end when their bytes are sent or their connections made (``bytes``,
    a churn's ``count``): their ``duration`` is a limit, not how long they run."""
    background = set(background_flows(body))
    return tuple(n for n, f in body.traffic.flows.items() if n not in background
                 and (getattr(f, "bytes", None) is not None or getattr(f, "count", None) is not None))


@dataclass(frozen=True)
class PastRun:
    """Per repetition, what the lab's latest complete run took."""

    overhead_s: float
    traffic_s: float
    run_dir: str
    quick: bool = False


def latest_run(results_root: Path, lab_name: str) -> PastRun | None:
    """The lab's latest complete run under ``results_root``, None when there is none or it
    lacks the numbers (its manifest's traffic_seconds is what the flows measured)."""
    from .record.model import load_manifest

    latest = results_root / lab_name / "latest"
    try:
        # is_dir raises on a directory this user may not search (a dry run as nobody)
        if not latest.is_dir():
            return None
        m = load_manifest(latest)
    except Exception:  # noqa: BLE001 - an unreadable old run only loses the estimate's source
        return None
    if not (m.complete and m.wall_seconds and m.traffic_seconds is not None and m.repetitions and m.scenarios):
        return None
    reps = m.repetitions * len(m.scenarios)
    return PastRun(max(0.0, (m.wall_seconds - m.traffic_seconds) / reps), m.traffic_seconds / reps,
                   str(latest.resolve()), bool(m.quick))


def measured_overhead(results_root: Path, lab_name: str) -> tuple[float, str] | None:
    """Overhead per repetition of the lab's latest complete run under ``results_root``:
    (seconds, run directory), None when there is none or it lacks the numbers."""
    past = latest_run(results_root, lab_name)
    return (past.overhead_s, past.run_dir) if past is not None else None


def replay_seconds(lab: Lab, scenarios: Sequence[ScenarioRun], quick: bool) -> float:
    """The seconds of flood of the run's trace replay checks, each distinct check once (the
    link check caches them per run: steps/links.py)."""
    from .net.plan import network_for
    from .tracecheck import replay_checks

    seen: set[tuple[str, str, float, int, int, float, float]] = set()
    total = 0.0
    for sc in scenarios:
        cal = sc.body.calibration
        if not cal.enabled:
            continue
        net = network_for(lab.topology, sc, str(lab.path / "experiment.yml"))
        span = parse_time(cal.trace_seconds) if cal.trace_seconds is not None else None
        for link in net.links:
            if not link.impaired:
                continue
            for _, check in replay_checks(link, sc.body.traffic.events, net, span, quick):
                if check.key not in seen:
                    seen.add(check.key)
                    total += check.seconds
    return total


def estimate(lab: Lab, scenarios: Sequence[ScenarioRun], reps_of: Callable[[ScenarioRun], int], quick: bool,
             results_root: Path | None = None, calibrate: bool = True) -> Estimate:
    past = latest_run(results_root, lab.name) if results_root is not None else None
    overhead, source = (past.overhead_s, past.run_dir) if past is not None else (DEFAULT_OVERHEAD_S, "default")
    total_reps = sum(reps_of(sc) for sc in scenarios)
    by_count = tuple(dict.fromkeys(n for sc in scenarios for n in ends_by_count(sc.body)))
    # a flow that ends by count runs at most its duration; the lab's last complete run of the
    # same kind (a quick run's counts and durations are smaller) says how long it took
    typical = past.traffic_s if past is not None and by_count and past.quick == quick else None

    def per_rep(sc: ScenarioRun) -> float:
        limit = traffic_seconds(sc.body, quick)
        return min(limit, typical) if typical is not None and ends_by_count(sc.body) else limit

    traffic = sum(reps_of(sc) * per_rep(sc) for sc in scenarios)
    # a past run's overhead holds its checks; the default overhead does not
    replays = replay_seconds(lab, scenarios, quick) if past is None and calibrate else 0.0
    return Estimate(total_reps, traffic, overhead, source, by_count,
                    past.run_dir if typical is not None and past is not None else None, replays)


def _clock(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"about {minutes} min" if minutes < 120 else f"about {minutes / 60:.1f} h"
