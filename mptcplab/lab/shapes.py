"""A link direction's shape under the timeline's link changes: what the run's actions
apply (timeline/actions.py) and what the link check replays before the run (every trace
a direction switches to: steps/links.py), from one fold, so the two never disagree."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..emulation.linkmodel import DirectedLink, Endpoint, LinkShape, QueueLimit
from ..units import parse_fraction, parse_rate, parse_time
from .events import Event, LinkChange
from .network import Link, Network


def changed_shape(shape: LinkShape, ev: LinkChange, net: Network | None = None) -> LinkShape:
    """The shape after ``ev``: the parameters it names, the others as they were. A trace
    switch takes the trace the network loaded for it (``net.event_traces``)."""
    new = shape
    if ev.switches_trace:
        trace = shape.trace
        if ev.trace is not None:
            if net is None or ev.trace not in net.event_traces:
                raise ValueError(f"trace {ev.trace!r} was not loaded with the lab")
            trace = net.event_traces[ev.trace]
        offset = parse_time(ev.trace_offset) if ev.trace_offset is not None else 0.0
        new = replace(new, trace=trace, trace_offset_s=offset)
    if ev.rate is not None:
        new = replace(new, rate_bps=parse_rate(ev.rate))
    if ev.delay is not None:
        new = replace(new, delay_s=parse_time(ev.delay))
    if ev.loss is not None:
        new = replace(new, loss=parse_fraction(ev.loss))
    if ev.queue is not None:
        new = replace(new, queue=QueueLimit.parse(ev.queue))
    return new


def changes_direction(ev: LinkChange, dl: DirectedLink) -> bool:
    """Whether ``ev`` changes the direction ``dl`` of its link: both directions, or with
    ``direction: one`` the egress of the end it names."""
    return ev.direction == "both" or dl.src == Endpoint.parse(ev.link)


def trace_shapes(events: Sequence[Event], net: Network, link: Link,
                 dl: DirectedLink) -> list[tuple[float, LinkShape]]:
    """(time, shape) after each timeline link change that switches the direction's trace or
    offset, in the order the timeline runs them (the changes folded as the run folds them)."""
    out: list[tuple[float, LinkShape]] = []
    shape = dl.shape
    for ev in sorted((e for e in events if isinstance(e, LinkChange)), key=lambda e: e.at_s):
        if net.link_of(ev.link) is not link or not changes_direction(ev, dl):
            continue
        shape = changed_shape(shape, ev, net)
        if ev.switches_trace:
            out.append((ev.at_s, shape))
    return out
