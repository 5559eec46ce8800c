"""The host's CPU accounting between two instants, from /proc/stat and /proc/pressure/cpu:
parsing and differencing (pure), and the one function that reads the files.

Why: the delay lines' stalls (issue 13) may be the hypervisor's. Inside the guest the
only witness is the ``steal`` column (CONFIG_PARAVIRT_TIME_ACCOUNTING), per CPU, in ticks of
1/USER_HZ s; softirq (and irq, only with CONFIG_IRQ_TIME_ACCOUNTING) say what the kernel
did on the CPUs meanwhile, PSI's ``some`` how long runnable tasks waited for one. A
repetition's ``host_cpu`` (record/model.HostCpu) is the difference over its traffic.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..record.model import CpuTime, HostCpu

#: /proc/stat's first eight columns (proc(5)); guest and guest_nice are already in user and nice
COLUMNS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def parse_stat(text: str) -> dict[str, tuple[int, ...]]:
    """/proc/stat -> {"cpu": ticks by COLUMNS, "cpu0": ..., ...}; a kernel that prints fewer
    columns (before 2.6.11: no steal) gets zeros for the missing ones."""
    out: dict[str, tuple[int, ...]] = {}
    for line in text.splitlines():
        name, *values = line.split() or [""]
        if name.startswith("cpu"):
            ticks = [int(v) for v in values[:len(COLUMNS)]]
            out[name] = (*ticks, *[0] * (len(COLUMNS) - len(ticks)))
    return out


def parse_psi_some_us(text: str) -> int | None:
    """The ``some`` line's ``total=`` (microseconds, cumulative) of a /proc/pressure file."""
    for line in text.splitlines():
        kind, *fields = line.split() or [""]
        if kind == "some":
            for f in fields:
                if f.startswith("total="):
                    return int(f.removeprefix("total="))
    return None


@dataclass(frozen=True)
class Snapshot:
    """One reading: CLOCK_MONOTONIC in ms (the delay lines' stall-log clock), /proc/stat's
    CPU lines, PSI's cpu ``some`` total (None: no PSI)."""

    mono_ms: float
    stat: dict[str, tuple[int, ...]] = field(default_factory=dict)
    psi_some_us: int | None = None


def _cpu_time(before: tuple[int, ...], after: tuple[int, ...], tick_ms: float) -> CpuTime:
    # a CPU taken offline and back restarts its counters: never a negative time
    d = dict(zip(COLUMNS, (max(0, a - b) * tick_ms for a, b in zip(after, before, strict=True)), strict=True))
    return CpuTime(busy_ms=d["user"] + d["nice"] + d["system"], idle_ms=d["idle"], iowait_ms=d["iowait"],
                   irq_ms=d["irq"], softirq_ms=d["softirq"], steal_ms=d["steal"])


def interval(before: Snapshot, after: Snapshot, tick_hz: int = 100) -> HostCpu:
    """What the CPUs did between two snapshots; CPUs present in both only."""
    tick_ms = 1000 / tick_hz
    per_cpu = {n: _cpu_time(before.stat[n], after.stat[n], tick_ms)
               for n in after.stat if n != "cpu" and n in before.stat}
    total = (_cpu_time(before.stat["cpu"], after.stat["cpu"], tick_ms)
             if "cpu" in before.stat and "cpu" in after.stat else CpuTime())
    psi = (after.psi_some_us - before.psi_some_us
           if after.psi_some_us is not None and before.psi_some_us is not None else None)
    return HostCpu(interval_s=round((after.mono_ms - before.mono_ms) / 1000, 3), start_ms=round(before.mono_ms, 3),
                   end_ms=round(after.mono_ms, 3), cpus=len(per_cpu), tick_ms=tick_ms, total=total,
                   per_cpu=per_cpu, psi_cpu_some_us=psi)


def steal_clause(hc: HostCpu) -> str:
    """How much CPU the hypervisor took over the interval, for a reason or a warning."""
    share = hc.steal_share
    pct = f"{share * 100:.1f} %" if share is not None else "an unknown share"
    return (f"during the traffic the hypervisor stole {hc.total.steal_ms:.0f} ms of CPU ({pct} of "
            f"{hc.cpus} CPU(s) x {hc.interval_s:.1f} s; counted in {hc.tick_ms:g} ms ticks)")


def read_snapshot(proc: Path = Path("/proc")) -> Snapshot:
    """The host's counters now (the runner's kernel: the nodes' namespaces share it)."""
    mono_ms = time.clock_gettime(time.CLOCK_MONOTONIC) * 1000
    stat = parse_stat((proc / "stat").read_text())
    try:
        psi = parse_psi_some_us((proc / "pressure" / "cpu").read_text())
    except OSError:  # a kernel without CONFIG_PSI, or booted with psi=0
        psi = None
    return Snapshot(mono_ms, stat, psi)


def tick_hz() -> int:
    """USER_HZ, the unit of /proc/stat."""
    return os.sysconf("SC_CLK_TCK")
