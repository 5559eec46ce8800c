"""Whether this machine can carry a lab's links, per scenario, before anything runs
(the model is emulation/capacity.py), and the scale factor that would make it fit.

Used by `mptcplab run` (printed before measuring; `--scale auto` takes the suggested
factor; what does not fit becomes a coded warning in the results), `mptcplab doctor`
(for a lab, or for the papers' configurations).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..emulation.capacity import BEYOND, FITS, MARGINAL, NOT_ESTIMATED, Estimate, estimate
from ..emulation.linkmodel import DirectedLink, Endpoint, LinkShape
from ..units import fmt_factor
from .model import Lab, ScenarioRun
from .network import build_network
from .scale import nice_factor_at_most

#: warning codes in the results (docs/results-format.md)
BEYOND_CODE = "emulation-beyond-host"
MARGINAL_CODE = "emulation-marginal"

#: the papers' link configurations issue 13 names (rate, one-way delay), as two-node lines
PAPER_CONFIGS: tuple[tuple[str, str, str], ...] = (
    ("asymmetric paper, short path", "400mbit", "2ms"),
    ("asymmetric paper, long path", "400mbit", "100ms"),
    ("asymmetric paper, longest path", "400mbit", "200ms"),
    ("NSDI 2012, fast path", "1gbit", "1ms"),
)


def scenario_estimate(lab: Lab, sc: ScenarioRun, emulator: str, cpus: int | None = None) -> Estimate:
    net = build_network(lab.topology, sc.body, str(lab.path / "experiment.yml"))
    return estimate([(lk.name, *lk.directions()) for lk in net.links if lk.impaired], emulator, cpus)


@dataclass(frozen=True)
class LabEstimate:
    #: (scenario names, their estimate): scenarios whose links estimate alike are grouped
    groups: tuple[tuple[tuple[str, ...], Estimate], ...]

    @property
    def verdict(self) -> str:
        order = [NOT_ESTIMATED, FITS, MARGINAL, BEYOND]
        return max((e.verdict for _, e in self.groups), key=order.index, default=NOT_ESTIMATED)

    @property
    def fit_factor(self) -> float:
        return min((e.fit_factor for _, e in self.groups), default=1.0)

    @property
    def suggested_factor(self) -> float:
        """A round factor at which every scenario fits (1 when they do)."""
        return 1.0 if self.fit_factor >= 1 else nice_factor_at_most(self.fit_factor)

    def lines(self) -> list[str]:
        out = []
        for names, e in self.groups:
            shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
            out.append(f"scenario(s) {shown}: {e.verdict}")
            out += [f"  {line}" for line in e.lines()]
        return out


def lab_estimate(lab: Lab, scenarios: Sequence[ScenarioRun], emulator: str, cpus: int | None = None) -> LabEstimate:
    groups: dict[tuple[str, ...], tuple[list[str], Estimate]] = {}
    for sc in scenarios:
        e = scenario_estimate(lab, sc, emulator, cpus)
        key = tuple(e.lines())
        groups.setdefault(key, ([], e))[0].append(sc.name)
    return LabEstimate(tuple((tuple(names), e) for names, e in groups.values()))


def verdict_text(est: LabEstimate, factor: float) -> list[str]:
    """What `run` prints before measuring: the verdict per link and the way out."""
    scaled = f" (rates scaled {fmt_factor(factor)})" if factor != 1 else ""
    head = f"reachability estimate for this machine{scaled}: {est.verdict}"
    out = [head, *[f"  {line}" for line in est.lines()]]
    if est.verdict in (MARGINAL, BEYOND):
        total = est.suggested_factor * factor
        out.append(f"  suggestion: run with --scale {total:g} (or --scale auto): rates ×{total:g}, delays kept")
    return out


def run_warnings(est: LabEstimate, factor: float) -> list[dict[str, str]]:
    """Coded warnings for the results when a configuration is beyond (or at the edge of)
    what the estimate says this machine carries."""
    out = []
    for names, e in est.groups:
        if e.verdict not in (MARGINAL, BEYOND):
            continue
        bad = [d.line() for lk in e.links for d in lk.directions if d.verdict in (MARGINAL, BEYOND)]
        if e.host_verdict in (MARGINAL, BEYOND):
            bad.append(f"all delay lines together {e.host_pps:,.0f} packets/s")
        code = BEYOND_CODE if e.verdict == BEYOND else MARGINAL_CODE
        what = "beyond what" if e.verdict == BEYOND else "at the edge of what"
        out.append({"code": code, "message": (
            f"scenario(s) {', '.join(names)}: the link configuration is {what} this machine's delay lines "
            f"were measured to carry (emulation/capacity.py): {'; '.join(bad)}; expect links out of tolerance. "
            f"A fitting factor: --scale {nice_factor_at_most(e.fit_factor) * factor:g}")})
    return out


def paper_estimates(emulator: str = "nfqueue", cpus: int | None = None) -> list[tuple[str, Estimate]]:
    """The papers' configurations on a two-node line, both directions shaped alike."""
    a, b = Endpoint("a", "eth0"), Endpoint("b", "eth0")
    out = []
    for label, rate, delay in PAPER_CONFIGS:
        shape = LinkShape.parse(rate=rate, delay=delay)
        e = estimate([(f"{rate} {delay}", DirectedLink(a, b, shape, 1500), DirectedLink(b, a, shape, 1500))],
                     emulator, cpus)
        out.append((label, e))
    return out
