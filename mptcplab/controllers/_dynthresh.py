"""The decision logic of Algorithms 3 and 4 of Karunarathne, Wijethilake and
Keppitiyagama, "An Evaluation of Multipath TCP with Highly Asymmetric Subflows"
(ICTer 2024): pure, no I/O, fed with numbers, so every branch is unit-testable with
synthetic samples (tests/unit/test_dynthresh.py). The controllers
``dynamic_threshold`` and ``dynamic_threshold_ext`` turn a View into these samples
and these decisions into endpoint flag actions.

Algorithm 3 (Dynamic Threshold), at every step (every Δ, the controller's interval)::

    for each subflow i of the connection:
        m_i = cwnd_i * MSS_i / RTT_i
        max_i = max(max_i, m_i)                      # the subflow's best recorded rate
        threshold = max(threshold, max_i)            # the best recorded single-path rate
        total += m_i
    if total < threshold: ignore the bad path

Algorithm 4 (Extended Dynamic Threshold) marks a subflow bad when it falls under the
dynamic threshold, and a timer lets a marked subflow transmit again now and then
(re-probe) so that its rate is measured afresh.

Where the paper is ambiguous, this module chooses (docs/controllers.md repeats it):

- **The threshold** is the best recorded single-path rate over the connection's current
  subflows (a closed subflow's maximum leaves with it, as the per-subflow field of the
  paper's kernel structure would). ``total`` sums every current subflow, a demoted one
  included with its last value: the pseudo-code's loop has no exception.
- **The bad path** (Algorithm 3 says "ignore bad path", singular) is the weakest subflow
  (lowest current m) among those still used, and never the one with the highest
  current m; one demotion per step; the last subflow in use is never demoted.
- **Algorithm 4's mark** ("throughput_i < dynamic_threshold") is read as Algorithm 3's
  condition: taken literally, the best subflow itself is below the best recorded rate
  whenever its window shrinks (every congestion event), and every subflow would be
  marked. So a subflow is marked exactly when Algorithm 3 would ignore it.
- **Re-probe and restore** (the paper leaves timer, probe length and unmark rule open):
  a demoted path is re-probed ``reprobe_every`` (T) after its demotion, for
  ``reprobe_for`` (W): it is used again (nobackup) and not judged meanwhile
  ("transmit_time == true: transmit over the bad path"). At the first step after W,
  the mark is evaluated again on that step's numbers: if Algorithm 3's condition
  holds and the probed path is the weakest of those in use, it is demoted again
  (and re-probed T later); otherwise it is restored and stays in use.
- **The unit of demotion is the local address** (the endpoint: the mechanism is
  ``ip mptcp endpoint change ADDRESS backup``, which flags every subflow of that
  address); rates and maxima stay per subflow.
- A subflow without an RTT or window yet (m unknown) takes no part in the step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Verb = Literal["demote", "reprobe", "restore", "redemote"]


@dataclass(frozen=True)
class SubflowRate:
    """One subflow at one step."""

    key: str  # "local_address:local_port": names the subflow
    address: str  # its local address: the endpoint a demotion flags
    rate_bps: float | None  # m = cwnd x MSS / RTT in bit/s; None: not measurable yet


@dataclass(frozen=True)
class Verdict:
    """One decision with the numbers behind it."""

    verb: Verb
    t: float
    address: str  # the endpoint concerned
    subflow: str  # the subflow whose rate decided it (the weakest, or the probed one)
    rates: tuple[tuple[str, float], ...]  # every measurable subflow's m at this step (bit/s)
    total_bps: float
    threshold_bps: float
    threshold_subflow: str  # whose recorded maximum the threshold is

    @property
    def flags(self) -> Literal["backup", "nobackup"] | None:
        """The endpoint flag the decision sets; None: nothing to change (a restore keeps
        the nobackup its re-probe set)."""
        if self.verb in ("demote", "redemote"):
            return "backup"
        return "nobackup" if self.verb == "reprobe" else None

    def detail(self) -> str:
        """``key=value`` pairs, space-separated (events.csv ``detail``), rates in Mbit/s."""
        parts = [f"decision={self.verb}", f"address={self.address}", f"subflow={self.subflow}",
                 f"total_mbps={self.total_bps / 1e6:.3f}", f"threshold_mbps={self.threshold_bps / 1e6:.3f}",
                 f"threshold_subflow={self.threshold_subflow}"]
        parts += [f"m_mbps[{k}]={v / 1e6:.3f}" for k, v in self.rates]
        return " ".join(parts)


@dataclass
class _Demoted:
    probe_at: float | None  # when its re-probe starts (None: Algorithm 3, never)


@dataclass
class _Probing:
    until: float


class DynamicThreshold:
    """The state of Algorithm 3 (``reprobe_every`` None) or 4 for one connection."""

    def __init__(self, reprobe_every: float | None = None, reprobe_for: float | None = None,
                 warmup: float = 0.0, slack: float = 1e-6) -> None:
        if (reprobe_every is None) != (reprobe_for is None):
            raise ValueError("reprobe_every and reprobe_for go together")
        self.reprobe_every = reprobe_every
        self.reprobe_for = reprobe_for
        self.warmup = warmup
        #: a timer is due this much early: steps come every Δ with some lateness each,
        #: so "T after" lands on the step nearest to it, not one Δ later (half Δ; the
        #: default only absorbs float rounding)
        self.slack = slack
        self.maxima: dict[str, float] = {}  # subflow -> best recorded m (bit/s)
        self.state: dict[str, _Demoted | _Probing] = {}  # address -> not in use / being probed

    @property
    def demoted(self) -> set[str]:
        """Addresses flagged backup now."""
        return {a for a, s in self.state.items() if isinstance(s, _Demoted)}

    def step(self, t: float, subflows: list[SubflowRate]) -> list[Verdict]:
        seen = [(s, s.rate_bps) for s in subflows if s.rate_bps is not None and s.rate_bps > 0]
        for s, m in seen:
            if m > self.maxima.get(s.key, 0.0):
                self.maxima[s.key] = m
        if not seen:
            return []
        current = {s.key for s, _ in seen}
        threshold_subflow = max(current, key=lambda k: (self.maxima[k], k))
        threshold = self.maxima[threshold_subflow]
        total = sum(m for _, m in seen)
        if t < self.warmup:
            return []
        rates = tuple((s.key, m) for s, m in seen)

        def decide(verb: Verb, s: SubflowRate) -> Verdict:
            return Verdict(verb, t, s.address, s.key, rates, total, threshold, threshold_subflow)

        out: list[Verdict] = []
        # Algorithm 4: a probe whose window W is over is judged on this step's numbers
        for addr, st in list(self.state.items()):
            if isinstance(st, _Probing) and t >= st.until - self.slack:
                weakest = self._weakest(seen, also=addr)
                probed = next((s for s, _ in seen if s.address == addr), None)
                if total < threshold and weakest is not None and weakest.address == addr:
                    out.append(decide("redemote", weakest))
                    self.state[addr] = self._demoted(t)
                else:
                    del self.state[addr]
                    if probed is not None:
                        out.append(decide("restore", probed))
                    else:  # its subflow is gone: nothing measured, nothing to keep it out
                        out.append(Verdict("restore", t, addr, "-", rates, total, threshold, threshold_subflow))
        # Algorithm 3: the connection does less than its best single path: ignore the bad path
        # (at most one demotion per step: the next step sees the numbers without it)
        if total < threshold and not any(v.verb == "redemote" for v in out):
            weakest = self._weakest(seen)
            if weakest is not None:
                out.append(decide("demote", weakest))
                self.state[weakest.address] = self._demoted(t)
        # Algorithm 4's timer: a demoted path transmits again for W, every T
        if self.reprobe_for is not None:
            for addr, st in list(self.state.items()):
                if isinstance(st, _Demoted) and st.probe_at is not None and t >= st.probe_at - self.slack:
                    self.state[addr] = _Probing(t + self.reprobe_for)
                    probed = next((s for s, _ in seen if s.address == addr), None)
                    out.append(decide("reprobe", probed) if probed is not None else
                               Verdict("reprobe", t, addr, "-", rates, total, threshold, threshold_subflow))
        return out

    def _demoted(self, t: float) -> _Demoted:
        return _Demoted(None if self.reprobe_every is None else t + self.reprobe_every)

    def _weakest(self, seen: list[tuple[SubflowRate, float]], also: str | None = None) -> SubflowRate | None:
        """The bad path: the weakest subflow among those in use (plus ``also``'s), if it
        is not on the address of the strongest and another address stays in use."""
        used = [(s, m) for s, m in seen if s.address not in self.state or s.address == also]
        if len({s.address for s, _ in used}) < 2:
            return None
        weak, _ = min(used, key=lambda x: (x[1], x[0].key))
        strong, _ = max(used, key=lambda x: (x[1], x[0].key))
        return None if weak.address == strong.address else weak
