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

A direction that replays a delivery trace is estimated at the trace's peak rate per
100 ms (``LinkShape.nominal_rate_bps``): the most its delay line can be asked to carry.

Each quantity gets a verdict against two thresholds: ``fits`` (the largest configuration
measured to keep time on a quiet host, the condition records are made in), ``marginal``
(between the largest configuration measured to keep time and the smallest measured not
to; where none was measured not to, up to ``UNMEASURED_MARGIN`` times the former),
``beyond`` (further). The thresholds (``Limits``) are the 2026-11-28 measurements on
the 2-core host with the delay line's rate stage and release slot (docs/architecture.md),
kept in bench/records/scale-20261128/ (``bench/capacity_bench.py`` sweeps each quantity
across its thresholds, ``bench/reachability_bench.py`` measures the papers' lines with
calibrate, a quick lab run at full rate several lines at once); tests/unit/test_reachability_records.py
checks that the estimate agrees with them:

=================  =========  =========  ================================================
quantity           fits <=    beyond >   measured (calibrate-style check: goodput >= 93 %,
                                         min RTT, delay lines healthy and on time)
=================  =========  =========  ================================================
line packets/s     123,844    165,125    1.5 Gbit/s (1514 B frames) at 20 ms one way kept
                                         time, 2 Gbit/s did not (p99 lateness 1.5-1.8 ms)
 (delay < 10 ms)   123,844    165,125    the same at 2 ms, within the 0.5 ms floor; 2
                                         Gbit/s had p99 0.79 ms
packets held       13,210     (26,420)   400 Mbit/s x 400 ms kept time; nothing larger
                                         measured (beyond: UNMEASURED_MARGIN x fits)
host packets/s     92,883     99,075     per CPU (x the CPU count): one 1.5 Gbit/s line
                                         with its ACKs (185,766/s on 2 CPUs) and 2 x 600
                                         Mbit/s at 40 ms kept time; 2 x 800 Mbit/s
                                         (198,151/s) did not
=================  =========  =========  ================================================

Also measured to keep time (bench/reachability_bench.py, `mptcplab calibrate` with
captures): 400 Mbit/s at 2, 100 and 200 ms and 1 Gbit/s at 1 and 20 ms one way; and
labs/asym's s1 at full rate (two 400 Mbit/s 2 ms lines, 99,075/s), every link check passed.

The 2026-11-23 thresholds (200 Mbit/s, 1,651 held, 12,385/s per CPU) were measured before
the rate stage moved the rate and queue into the delay line; against these calibrate and
the runs' own link checks disagreed with the estimate (400 Mbit/s x 200 ms "beyond" while
calibrate measured it within tolerance), which is why they were measured again.

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


#: how far past the largest configuration measured to keep time an estimate says "marginal"
#: (not measured either way) before it says "beyond", where no configuration was measured out
#: of tolerance: a convention, not a measurement
UNMEASURED_MARGIN = 2.0


@dataclass(frozen=True)
class Limits:
    """Thresholds of the estimate (see the module's table), written as the measured
    configurations they come from (1500-byte MTU; bench/records/scale-20261128/)."""

    #: 1.5 Gbit/s kept time at 20 ms one way, 2 Gbit/s did not (p99 lateness 1.5-1.8 ms)
    line_pps_fits: float = full_frames_per_s(1.5e9)
    line_pps_beyond: float = full_frames_per_s(2e9)
    #: below SHORT_DELAY_S only the 0.5 ms floor is allowed: at 2 ms the same two rates
    line_pps_fits_short: float = full_frames_per_s(1.5e9)
    #: 400 Mbit/s x 400 ms kept time; nothing larger was measured
    held_fits: float = full_frames_per_s(400e6) * 0.400
    held_beyond: float = full_frames_per_s(400e6) * 0.400 * UNMEASURED_MARGIN
    #: all lines together: one 1.5 Gbit/s line with its ACKs kept time (and 2 x 600 Mbit/s at
    #: 40 ms), 2 x 800 Mbit/s at 40 ms did not (p99 lateness 2.4-2.8 ms against 2 ms)
    host_pps_fits_per_cpu: float = full_frames_per_s(1.5e9) * ACK_FACTOR / 2
    host_pps_beyond_per_cpu: float = 2 * full_frames_per_s(800e6) * ACK_FACTOR / 2


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
    if s.trace is not None:
        # the delay line replays it: at most the trace's peak rate per 100 ms goes through
        assumed = f"trace {s.trace.name} at its peak rate; "
        s = replace(s, rate_bps=s.nominal_rate_bps)
    if s.needs_delay and not s.rate_bps and default_rate_bps and emulator == "nfqueue":
        s = replace(s, rate_bps=default_rate_bps)
        assumed = f"no rate here: at most the fastest shaped link's {fmt_rate(default_rate_bps)}; "
    if emulator != "nfqueue":
        return DirectionEstimate(name, s.rate_bps, s.delay_s, None, None, NOT_ESTIMATED, 1.0,
                                 f"{emulator}: in-kernel, no limit measured")
    if not s.needs_delay and s.trace is None:
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
    rates = [dl.shape.nominal_rate_bps for _, *dls in links for dl in dls if dl.shape.nominal_rate_bps]
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
