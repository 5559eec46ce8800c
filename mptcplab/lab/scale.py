"""The scale factor (issue 13): the one place that says what scaling a lab changes.

A machine that cannot carry a lab's links at their rates (emulation/capacity.py says
which) can run the lab at a fraction of them: with factor F every **rate** becomes
F x rate and every **queue given in bytes** F x bytes, so a queue keeps its length in
time (a queue given as time, "80ms", already does). **Delays, jitter, loss, MTUs** are
unchanged, so the ratios between paths (400 / 4 Mbit/s becomes 40 / 0.4) and the
RTTs stay the paper's. Event and flow rates (a rate change on the timeline, a UDP
flood's rate) scale with the links: the ``rate`` of an event and the fields a flow
kind's schema class names in ``scaled_rates`` (a UDP flow's rate; a churn flow's rate
counts connections and stays).

Not scaled, and said so (``unscaled_notes``): socket buffers (a flow's ``window``,
``tcp_rmem``/``tcp_wmem`` sysctls) and durations. A buffer sized to the paper's
bandwidth-delay product is F times too large after scaling, so a lab whose point is a
buffer limit must scale its buffers itself.

Results: goodput (Mbit/s) scales with F; shares, segment sizes, counts and times do
not (each metric's declaration says so: mptcplab/metricdecl.py ``metric_scales``). The
report and terminal summary label every scaled number (``rate_unit``), and a finding or a
published value that compares an absolute rate with the paper's compares against the
paper's number x F (metricdecl's ``paper_target``) and says so.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from ..errors import LabInputError
from ..units import fmt_factor, is_time, parse_rate, parse_size

if TYPE_CHECKING:
    from ..values.flowbase import FlowBase
    from .model import Lab
    from .schema import ExperimentBody, LinkSpec

#: where a run's factor came from
SOURCES = ("none", "lab", "command line", "auto")
#: the factors `--scale auto` and the reachability estimate suggest: round numbers, so
#: scaled rates stay readable (400 Mbit/s x 0.1 = 40 Mbit/s)
NICE_FACTORS = (1.0, 0.5, 0.25, 0.2, 0.1, 0.05, 0.025, 0.02, 0.01, 0.005, 0.002, 0.001)


def nice_factor_at_most(limit: float) -> float:
    """The largest of NICE_FACTORS not above ``limit`` (the smallest one if none is)."""
    return next((f for f in NICE_FACTORS if f <= limit + 1e-12), NICE_FACTORS[-1])


def _rate(value: Any, factor: float) -> int:
    return max(1, round(parse_rate(value) * factor))


def _queue(value: Any, factor: float) -> Any:
    # a queue given as time keeps its meaning at the scaled rate; bytes scale with the rate
    return value if is_time(value) else max(1, round(parse_size(value) * factor))


def _scaled_fields(model: Any, factor: float) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if getattr(model, "rate", None) is not None:
        out["rate"] = _rate(model.rate, factor)
    if getattr(model, "queue", None) is not None:
        out["queue"] = _queue(model.queue, factor)
    return out


def _scaled_rates(flow: FlowBase, factor: float) -> dict[str, Any]:
    return {k: _rate(v, factor) for k in flow.scaled_rates if (v := getattr(flow, k)) is not None}


def scale_link(spec: LinkSpec, factor: float) -> LinkSpec:
    update = _scaled_fields(spec, factor)
    for which in ("egress", "ingress"):
        d = getattr(spec, which)
        if d is not None:
            update[which] = d.model_copy(update=_scaled_fields(d, factor))
    return spec.model_copy(update=update)


def scale_body(body: ExperimentBody, factor: float) -> ExperimentBody:
    """The body with every rate and byte-sized queue times ``factor`` (see the module)."""
    if factor == 1:
        return body
    links = {ep: scale_link(spec, factor) for ep, spec in body.links.items()}
    events = [ev.model_copy(update=_scaled_fields(ev, factor)) if getattr(ev, "rate", None) is not None else ev
              for ev in body.traffic.events]
    # each flow kind's schema class says which of its fields are bit rates (a churn flow's
    # rate counts connections per second and stays)
    flows = {n: f.model_copy(update=_scaled_rates(f, factor)) if f.scaled_rates else f
             for n, f in body.traffic.flows.items()}
    traffic = body.traffic.model_copy(update={"events": events, "flows": flows})
    return body.model_copy(update={"links": links, "traffic": traffic})


def unscaled_notes(body: ExperimentBody) -> list[str]:
    """What a scaled run leaves at the paper's size although it relates to the rate."""
    out = [f"traffic.flows.{n}.window" for n, f in body.traffic.flows.items() if getattr(f, "window", None) is not None]
    keys = ("net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.core.rmem_max", "net.core.wmem_max")
    out += [f"sysctls.{k}" for k in keys if k in body.sysctls]
    out += [f"nodes.{n}.sysctls.{k}" for n, s in body.nodes.items() for k in keys if k in s.sysctls]
    return out


def parse_scale_arg(text: str) -> float | None:
    """``--scale`` on the command line: a factor in (0, 1], or 'auto' (None)."""
    if text == "auto":
        return None
    try:
        f = float(text)
    except ValueError:
        raise LabInputError("command line", "--scale", f"{text!r} is neither a number nor 'auto'") from None
    if not 0 < f <= 1:
        raise LabInputError("command line", "--scale", f"{text} is outside (0, 1]")
    return f


def apply_scale(lab: Lab, factor: float, source: str) -> Lab:
    """The lab with every scenario's body (as the lab files give it) scaled; the limits the emulation checks (tbf's)
    are checked again on the scaled links, since scaling can make a rate too slow."""
    from .limits import check_network
    from .network import build_network

    if source not in SOURCES:
        raise ValueError(f"unknown scale source {source!r}")
    base = lab.base_scenarios()
    if factor == 1:
        return dataclasses.replace(lab, scenarios=base, scale=1.0, scale_source=source, unscaled=())
    file = str(lab.path / "experiment.yml")
    scenarios = []
    for sc in base:
        body = scale_body(sc.body, factor)
        try:
            check_network(build_network(lab.topology, body, file), body, file)
        except LabInputError as e:
            raise LabInputError(file, e.field, f"{e.problem} (scenario {sc.name}, scaled {fmt_factor(factor)})") \
                from None
        scenarios.append(dataclasses.replace(sc, body=body))
    return dataclasses.replace(lab, scenarios=tuple(scenarios), scale=factor, scale_source=source, unscaled=base)


def scale_reason(lab: Lab) -> str | None:
    """Why the run is scaled: the lab's stated measurement, or where the factor came from."""
    if lab.scale == 1:
        return None
    if lab.scale_source == "lab":
        return lab.experiment.scale_reason
    if lab.scale_source == "auto":
        return "this machine's reachability estimate (emulation/capacity.py) suggested it (--scale auto)"
    if lab.scale_note:
        return f"given on the command line (--scale): {lab.scale_note}"
    return "given on the command line (--scale)"


def manifest_record(lab: Lab) -> dict[str, Any]:
    """manifest.json's ``scale``: the factor, where it came from and what it does not touch."""
    unscaled = sorted({n for sc in lab.scenarios for n in unscaled_notes(sc.body)}) if lab.scale != 1 else []
    return {"factor": lab.scale, "source": lab.scale_source, "reason": scale_reason(lab),
            "scaled": "link, event and flow rates; queues given in bytes" if lab.scale != 1 else "nothing",
            "unscaled_fields": unscaled}
