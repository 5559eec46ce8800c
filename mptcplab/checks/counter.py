"""A kernel MIB counter (``{counter, node, op, value}``): any ``MPTcpExt*`` or ``TcpExt*``
counter, named as nstat names it, its delta over the traffic on one node, compared with a
constant in every repetition. This is how the kernel's own selftests state what a run must
do (mptcp_join.sh's chk_join_nr, chk_add_nr, chk_rm_nr, chk_prio_nr: counter == n), so
their expectations are written as findings without a metric per counter.

Judged like a capture fact, per repetition: holds when the counter satisfies the
comparison in every repetition, does not hold when in none, inconclusive between. A
repetition without the counter's record (no nstat probe, a node not recorded) is not
evidence either way ("not measurable").

A counter the kernel does not have (an older kernel: 6.1 has no MPJoinSynTx*, no
MPJoinRejected) is neither a pass nor a fail: the check is **skipped**, "not on this
kernel" (CheckStat.skipped), as the kernel's own script does (mptcp_lib.sh
``mptcp_lib_get_counter`` prints "[skip] counter X is not available" and the case goes
on); its finding is judged on the checks that remain (results/findings.py). Which names
are counters at all is ``known``: the running kernel's and every MPTcpExt*/TcpExt* name of
Linux 6.18 (kernel_counters.py, generated from a 6.18 host); the preflight refuses any
other name (a typo) and lets a known one this kernel lacks through to be skipped.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from ..metricdecl import COUNTER_NAME
from ..record.counters import counter_reading
from ..record.model import CheckStat, Repetition
from . import stats
from .base import CheckKind, CounterUse, Judging, SourceField
from .kernel_counters import KNOWN
from .metric import OPS


def _counter_name(v: str) -> str:
    if not COUNTER_NAME.match(v):
        raise ValueError(f"counter {v!r} is not an MPTcpExt* or TcpExt* name as nstat prints it "
                         "(e.g. MPTcpExtMPJoinSynRx)")
    return v


CounterName = Annotated[str, AfterValidator(_counter_name)]


def known(name: str, this_kernel: Collection[str] | None = None) -> bool:
    """Whether ``name`` is a counter of some kernel the project knows: Linux 6.18's
    (kernel_counters.py) or the running kernel's (``this_kernel``, a newer one may add some)."""
    return name in KNOWN or (this_kernel is not None and name in this_kernel)


def short(counter: str) -> str:
    """A counter as tables show it: MPTcpExt's names without the family (TcpExt's keep it)."""
    return counter.removeprefix("MPTcpExt")


class CounterCheck(CheckKind):
    """``counter``'s delta over the traffic on ``node`` (a node of the topology: the flow's
    client or server side) compared (``op``) with ``value`` in every repetition of
    ``scenario`` (default: the finding's)."""

    counter: CounterName
    #: a node, or several whose deltas are summed (mptcp_join.sh's "simult" removals count
    #: the subflows removed on both sides together)
    node: str | list[str] = Field(min_length=1)
    op: Literal["==", "!=", "<", "<=", ">", ">="]
    value: int = Field(ge=0)
    scenario: str | None = None
    source: SourceField | None = None

    def nodes(self) -> list[str]:
        return [self.node] if isinstance(self.node, str) else list(self.node)

    def counter_uses(self) -> list[CounterUse]:
        return [CounterUse(".counter", self.counter, n) for n in self.nodes()]

    def _on(self) -> str:
        return " + ".join(self.nodes())

    def _claim_text(self) -> str:
        return f"{self.counter} on {self._on()} {self.op} {self.value}"

    def _value(self, r: Repetition) -> tuple[int | None, str | None, bool]:
        """The counter summed over the check's nodes in one repetition, or why it has none,
        and whether that is because the kernel has no such counter."""
        total = 0
        for n in self.nodes():
            got = counter_reading(r, n, self.counter)
            if got.value is None:
                return None, got.missing, got.absent
            total += got.value
        return total, None, False

    def _brief(self, got: str) -> str:
        """"MPJoinSynRx@server 1→0" (== said by the number alone), "AddAddr@client >=1→1"."""
        op = "" if self.op == "==" else self.op
        return f"{short(self.counter)}@{'+'.join(self.nodes())} {op}{self.value}→{got}"

    def evaluate(self, default_scenario: str | None, on: Judging) -> tuple[CheckStat, str]:
        """Whether the counter satisfies the comparison in every repetition, with each
        repetition's value as the evidence ("expected == 2, got 2, 2, 1")."""
        c = self
        target = f"{c.op} {c.value} in every repetition"
        name = c.scenario or default_scenario
        if name is None:
            return c.not_measurable("no scenario of this lab to observe it in", target)
        if name not in on.reps:
            return c.not_measurable(f"scenario {name} not run", target)
        readings = [c._value(r) for r in on.reps[name]]
        got = [v for v, _, _ in readings if v is not None]
        if not got:
            why = next((w for _, w, _ in readings if w), "no value")
            if all(absent for _, _, absent in readings):
                row, _ = c.not_measurable("", target)
                skip = f"not on this kernel: {why}"
                return (row.model_copy(update={"skipped": skip, "brief": c._brief("n/a")}),
                        f"{c.counter} on {c._on()} in {name}: skipped, {skip}")
            return c.not_measurable(f"{c.counter} on {c._on()} in {name}: {why}", target)
        k = sum(1 for v in got if OPS[c.op](v, c.value))
        verdict = stats.agreement_verdict(k, len(got))
        lo, hi = stats.proportion_interval(k, len(got))
        values = ", ".join(str(v) for v in got)
        where = f" in {name}" if c.scenario else ""
        row = CheckStat(verdict=verdict, statistic=f"share of repetitions with {c._claim_text()}{where}",
                        estimate=k / len(got), low=lo, high=hi, confidence=stats.CONFIDENCE,
                        method="exact binomial (Clopper-Pearson)", n=[len(got)], target=target,
                        source=c.source_text(), brief=c._brief(",".join(str(v) for v in got)))
        return row, (f"{c.counter} on {c._on()}{where}: expected {c.op} {c.value}, got {values} "
                     f"({k} of {len(got)} rep{'' if len(got) == 1 else 's'}) -> {verdict}")

    def claim(self, default_scenario: str | None) -> str:
        return f"counter: {self._claim_text()} over the traffic, in {self.scenario or default_scenario} " \
               "(every repetition)"

    def audit_statistic(self, default_scenario: str | None, extremes: dict[str, str]) -> str:
        return "share of repetitions (every repetition)"
