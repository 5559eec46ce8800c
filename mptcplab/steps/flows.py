"""When the flows of a repetition run: each flow's duration, which flows a timeline event
starts, which run in the background, which are measured, and the start-offset schedule
of the rest. Read by the traffic step, the run's wall-time estimate and the runner."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lab.schema import ExperimentBody, Flow
from ..traffic.kinds import kind_of
from ..units import parse_time

if TYPE_CHECKING:
    from .base import RunContext


def flow_duration(ctx: RunContext, body: ExperimentBody, flow: Flow) -> float:
    return flow_seconds(body, flow, ctx.quick)


def flow_seconds(body: ExperimentBody, flow: Flow, quick: bool) -> float:
    """How long a flow runs: the quick duration in a quick run, else its own. A byte-count
    flow ends when its bytes are sent; its duration is the limit, kept in quick runs too
    (the byte count is the experiment)."""
    if getattr(flow, "bytes", None) is not None:
        return parse_time(flow.duration)
    return parse_time(body.quick.duration) if quick else parse_time(flow.duration)


def event_started(body: ExperimentBody) -> dict[str, float]:
    """Flows a timeline ``flow_start`` event starts (docs/lab-format.md), with the event's time
    (after the measured flow's start): their own start offset does not start them."""
    from ..lab.events import FlowStart

    return {ev.flow: ev.at_s for ev in body.traffic.events if isinstance(ev, FlowStart)}


def event_started_flows(body: ExperimentBody) -> set[str]:
    return set(event_started(body))


def background_flows(body: ExperimentBody) -> list[str]:
    """Flows of a background kind (hold) that no timeline event starts: started before the
    others, stopped after them."""
    started_by_event = event_started_flows(body)
    return [n for n, f in body.traffic.flows.items() if kind_of(f).background and n not in started_by_event]


def measured_flows(body: ExperimentBody) -> list[str]:
    """Names of the measured flows in the lab's order; the first is the primary one (the
    repetition's top-level fields, iperf3.json)."""
    return [n for n, f in body.traffic.flows.items() if f.role == "measured"]


class StartOffsets:
    """When each flow starts, relative to the first: a start-offset scheduler the
    timeline of typed events will replace."""

    def __init__(self, flows: dict[str, Flow]) -> None:
        self.pending = sorted(((parse_time(f.start), name) for name, f in flows.items()))

    def due(self, elapsed_s: float) -> list[str]:
        out = []
        while self.pending and elapsed_s >= self.pending[0][0]:
            out.append(self.pending.pop(0)[1])
        return out

    @property
    def done(self) -> bool:
        return not self.pending

