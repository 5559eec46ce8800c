"""Can this machine carry a link configuration? A deliberately simple estimate, made
before anything is created (preflight, doctor), from numbers measured with
bench/emulation_bench.py.

What limits emulation here is the NFQUEUE delay line (docs/architecture.md, "What
limits the NFQUEUE delay line"): every delayed packet costs a trip to user space and,
on release, the rest of its receive path inside the delay line's verdict call. Two
quantities per delayed direction decide whether it keeps time:

* **packets per second** at the direction's rate in full-size frames,
  ``rate / (8 x (MTU + 14))``: the per-packet work;
* **packets held** at once, ``packets/s x (delay + jitter)``: how large the batches
  released together get (a 400 Mbit/s 100 ms line released batches of up to 3,300
  packets in 20-180 ms verdict calls, and everything due meanwhile was late).

and one per machine: the **packets per second of all delay lines together**, which
share the CPUs with the traffic and the captures. Per link that is the busier
direction's packets/s x 1.5 (a bulk flow's data one way, about one ACK per two
segments the other way, both through delay lines).

Each quantity gets a verdict against two thresholds: ``fits`` (measured to keep time),
``marginal`` (measured in tolerance only on an idle host, or not at all under load),
``beyond`` (measured out of tolerance). The thresholds (``Limits``) come from the
2026-11-23 measurements on the 2-core host (docs/architecture.md):

=================  =========  ==========  =============================================
quantity           fits <=    beyond >    measured
=================  =========  ==========  =============================================
line packets/s     16,513     33,025      200 Mbit/s (1514 B frames) kept time (p99 1.6
                                          ms at 100 ms); 400 Mbit/s in tolerance only
                                          at 1-2 ms on an idle host
 (delay < 10 ms)   8,256      33,025      the 0.5 ms lateness floor: 100 Mbit/s keeps
                                          p99 0.13 ms; 200 Mbit/s at 2 ms had p99 2.6
                                          ms (load 11)
packets held       1,651      3,000       200 Mbit/s x 100 ms kept time; 400 Mbit/s x
                                          100 ms (3,303 held): p99 lateness 30-83 ms
host packets/s     12,385     24,769      per CPU (x the CPU count): 2 x 100 Mbit/s at
                                          40 ms kept time on 2 CPUs; one 400 Mbit/s
                                          line is the edge, two at once did not
=================  =========  ==========  =============================================

Packets/s and packets held both grow with the rate, so the factor that makes a
configuration fit is the smallest ``fits threshold / value``; lab/scale.py rounds it
down to a readable factor. netem (in-kernel delay) and directions without delay
(tbf only) are not estimated: nothing here measured a limit for them. When the delay
line gets faster, re-measure and change ``Limits`` (one place).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from ..units import fmt_rate
from .linkmodel import ETH_HEADER, DirectedLink
from .nfqueue import LATENESS_FLOOR_US, LATENESS_FRACTION

FITS, MARGINAL, BEYOND, NOT_ESTIMATED = "fits", "marginal", "beyond", "not estimated"
#: one-way delay (+ jitter) below which a delay line is allowed only the lateness floor:
#: LATENESS_FLOOR_US / LATENESS_FRACTION (0.5 ms / 5 % = 10 ms)
SHORT_DELAY_S = LATENESS_FLOOR_US / LATENESS_FRACTION / 1e6
_ORDER = {NOT_ESTIMATED: 0, FITS: 1, MARGINAL: 2, BEYOND: 3}
#: a bulk flow's packets through delay lines per data packet: the data and ~1 ACK per 2 segments
ACK_FACTOR = 1.5


def full_frames_per_s(rate_bps: float, mtu: int = 1500) -> float:
    return rate_bps / (8 * (mtu + ETH_HEADER))


@dataclass(frozen=True)
class Limits:
    """Thresholds of the estimate (see the module's table), written as the measured
    configurations they come from (1500-byte MTU)."""

    #: 200 Mbit/s kept time; 400 Mbit/s (33,025/s) only on an idle host, at 1-2 ms
    line_pps_fits: float = full_frames_per_s(200e6)
    line_pps_beyond: float = full_frames_per_s(400e6)
    #: below SHORT_DELAY_S the lateness allowed is the 0.5 ms floor, not 5 % of the delay:
    #: 100 Mbit/s keeps p99 0.13 ms, 200 Mbit/s at 2 ms had p99 2.6 ms (load 11)
    line_pps_fits_short: float = full_frames_per_s(100e6)
    #: 200 Mbit/s x 100 ms kept time; 400 Mbit/s x 100 ms (3,303 held) did not
    held_fits: float = full_frames_per_s(200e6) * 0.100
    held_beyond: float = 3_000
    #: 2 x 100 Mbit/s with their ACKs kept time on 2 CPUs; one 400 Mbit/s line is the edge
    host_pps_fits_per_cpu: float = full_frames_per_s(100e6) * ACK_FACTOR
    host_pps_beyond_per_cpu: float = full_frames_per_s(400e6) * ACK_FACTOR / 2


DEFAULT_LIMITS = Limits()


def _verdict(value: float, fits: float, beyond: float) -> str:
    return FITS if value <= fits else MARGINAL if value <= beyond else BEYOND


def worst(verdicts: Sequence[str]) -> str:
    return max(verdicts, key=lambda v: _ORDER[v], default=NOT_ESTIMATED)


@dataclass(frozen=True)
class DirectionEstimate:
    direction: str  # "a:if->b:if"
    rate_bps: int | None
    delay_s: float
    pps: float | None
    held: float | None
    verdict: str
    #: the largest factor (not rounded) at which this direction fits; 1 when it does
    fit_factor: float
    note: str

    def line(self) -> str:
        if self.pps is None:
            return f"{self.direction}: {self.verdict} ({self.note})"
        return (f"{self.direction}: {self.verdict}: {self.pps:,.0f} packets/s, {self.held:,.0f} held "
                f"({self.note})")


@dataclass(frozen=True)
class LinkEstimate:
    name: str
    directions: tuple[DirectionEstimate, ...]
    #: what this link adds to the machine's delay-line packets/s
    host_pps: float

    @property
    def verdict(self) -> str:
        return worst([d.verdict for d in self.directions])

    @property
    def fit_factor(self) -> float:
        return min((d.fit_factor for d in self.directions), default=1.0)


@dataclass(frozen=True)
class Estimate:
    emulator: str
    links: tuple[LinkEstimate, ...]
    host_pps: float
    host_verdict: str
    cpus: int
    host_fit_factor: float
    limits: Limits = field(default=DEFAULT_LIMITS)

    @property
    def verdict(self) -> str:
        return worst([*(lk.verdict for lk in self.links), self.host_verdict])

    @property
    def fit_factor(self) -> float:
        """The largest factor (unrounded) at which every link and the machine fit."""
        return min([self.host_fit_factor, *(lk.fit_factor for lk in self.links)])

    def lines(self) -> list[str]:
        out = []
        for lk in self.links:
            out.append(f"link {lk.name}: {lk.verdict}")
            out += [f"  {d.line()}" for d in lk.directions]
        if self.host_verdict != NOT_ESTIMATED:
            out.append(f"all delay lines together: {self.host_verdict}: {self.host_pps:,.0f} packets/s on "
                       f"{self.cpus} CPU(s) (fits <= {self.limits.host_pps_fits_per_cpu * self.cpus:,.0f})")
        return out


def estimate_direction(dl: DirectedLink, emulator: str, limits: Limits = DEFAULT_LIMITS,
                       default_rate_bps: int | None = None) -> DirectionEstimate:
    """``default_rate_bps``: what to assume for a delayed direction without a rate of its
    own (its packets come through other, shaped links: at most the fastest of them)."""
    s = dl.shape
    name = f"{dl.src}->{dl.dst}"
    assumed = ""
    if s.needs_delay and not s.rate_bps and default_rate_bps and emulator == "nfqueue":
        s = replace(s, rate_bps=default_rate_bps)
        assumed = f"no rate here: at most the fastest shaped link's {fmt_rate(default_rate_bps)}; "
    if emulator != "nfqueue":
        return DirectionEstimate(name, s.rate_bps, s.delay_s, None, None, NOT_ESTIMATED, 1.0,
                                 f"{emulator}: in-kernel, no limit measured")
    if not s.needs_delay:
        return DirectionEstimate(name, s.rate_bps, s.delay_s, None, None, NOT_ESTIMATED, 1.0,
                                 "no delay: tbf only, no delay line")
    if not s.rate_bps:
        return DirectionEstimate(name, None, s.delay_s, None, None, NOT_ESTIMATED, 1.0,
                                 "no rate here: packets/s set by the other links")
    pps = s.rate_bps / (8 * (dl.mtu + ETH_HEADER))
    held = pps * (s.delay_s + s.jitter_s)
    # a short delay allows only the lateness floor (nfqueue.max_lateness_p99_us): fewer packets/s fit
    short = s.delay_s + s.jitter_s < SHORT_DELAY_S
    pps_fits = limits.line_pps_fits_short if short else limits.line_pps_fits
    v = worst([_verdict(pps, pps_fits, limits.line_pps_beyond),
               _verdict(held, limits.held_fits, limits.held_beyond)])
    fit = min(1.0, pps_fits / pps, limits.held_fits / held if held else 1.0)
    note = assumed + (f"fits <= {pps_fits:,.0f}/s and {limits.held_fits:,.0f} held" if v == FITS else
                      f"fits at {fit:.3g} of the rate")
    return DirectionEstimate(name, s.rate_bps, s.delay_s, pps, held, v, fit, note)


def estimate(links: Sequence[tuple[str, DirectedLink, DirectedLink]], emulator: str,
             cpus: int | None = None, limits: Limits = DEFAULT_LIMITS) -> Estimate:
    """The estimate for links given as (name, a->b, b->a). A delayed direction without a
    rate is taken at the fastest rate of these links (an upper bound of what reaches it)."""
    cpus = cpus or os.cpu_count() or 1
    rates = [dl.shape.rate_bps for _, *dls in links for dl in dls if dl.shape.rate_bps]
    fastest = max(rates) if rates else None
    out = []
    for name, ab, ba in links:
        dirs = (estimate_direction(ab, emulator, limits, fastest), estimate_direction(ba, emulator, limits, fastest))
        busiest = max((d.pps or 0.0 for d in dirs), default=0.0)
        out.append(LinkEstimate(name, dirs, busiest * ACK_FACTOR))
    host = sum(lk.host_pps for lk in out)
    if not any(d.pps for lk in out for d in lk.directions):
        host_v, host_fit = NOT_ESTIMATED, 1.0
    else:
        fits, beyond = limits.host_pps_fits_per_cpu * cpus, limits.host_pps_beyond_per_cpu * cpus
        host_v, host_fit = _verdict(host, fits, beyond), min(1.0, fits / host)
    return Estimate(emulator, tuple(out), host, host_v, cpus, host_fit, limits)
