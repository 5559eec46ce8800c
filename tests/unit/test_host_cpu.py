"""The host's CPU accounting over a repetition's traffic (probes/procstat.py, probes/hostcpu.py):
/proc/stat and PSI parsed and differenced, the record's ``host_cpu``, and the steal it states
beside a delay line that did not keep time (run/verdicts.daemon_problems)."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from mptcplab.probes import procstat
from mptcplab.probes.hostcpu import HostCpuProbe
from mptcplab.record.model import HostCpu, Repetition
from mptcplab.run import daemon_problems
from mptcplab.steps.base import Rep

#: this VM's /proc/stat (6.18, 2 vCPUs), then 4 s later with 80 + 40 ticks of steal
BEFORE = """\
cpu  674986 606844 578982 2956573 24049 0 102536 15985 0 11
cpu0 267919 294817 268061 1586037 3168 0 50520 7951 0 5
cpu1 407066 312027 310921 1370536 20880 0 52016 8034 0 5
intr 101282195 0 0 0
ctxt 226253098
btime 1763940000
"""
AFTER = """\
cpu  675086 606894 578982 2956773 24049 0 102586 16105 0 11
cpu0 267969 294817 268061 1586137 3168 0 50540 8031 0 5
cpu1 407116 312077 310921 1370636 20880 0 52046 8074 0 5
intr 101292195 0 0 0
ctxt 226263098
"""
PSI = """\
some avg10=10.36 avg60=7.14 avg300=5.45 total=4301505762
full avg10=0.00 avg60=0.00 avg300=0.00 total=0
"""


def test_proc_stat_is_parsed_by_column_and_cpu() -> None:
    st = procstat.parse_stat(BEFORE)
    assert list(st) == ["cpu", "cpu0", "cpu1"]  # intr, ctxt, btime are not CPU lines
    assert dict(zip(procstat.COLUMNS, st["cpu1"], strict=True)) == {
        "user": 407066, "nice": 312027, "system": 310921, "idle": 1370536, "iowait": 20880, "irq": 0,
        "softirq": 52016, "steal": 8034}
    # an old kernel's shorter line (no steal column): zeros, not a misread
    assert procstat.parse_stat("cpu 1 2 3 4 5 6 7\n")["cpu"] == (1, 2, 3, 4, 5, 6, 7, 0)


def test_psi_some_total() -> None:
    assert procstat.parse_psi_some_us(PSI) == 4301505762
    assert procstat.parse_psi_some_us("full avg10=0.00 avg60=0.00 avg300=0.00 total=7\n") is None


def test_interval_in_ms_per_cpu_and_total() -> None:
    a = procstat.Snapshot(1_000_000.0, procstat.parse_stat(BEFORE), 4_301_505_762)
    b = procstat.Snapshot(1_004_000.0, procstat.parse_stat(AFTER), 4_301_818_262)
    hc = procstat.interval(a, b, tick_hz=100)
    assert (hc.interval_s, hc.start_ms, hc.end_ms, hc.cpus, hc.tick_ms) == (4.0, 1_000_000.0, 1_004_000.0, 2, 10.0)
    assert hc.total.steal_ms == 1200 and hc.per_cpu["cpu0"].steal_ms == 800 and hc.per_cpu["cpu1"].steal_ms == 400
    assert hc.total.busy_ms == 1500 and hc.total.idle_ms == 2000 and hc.total.softirq_ms == 500
    assert hc.per_cpu["cpu1"].softirq_ms == 300 and hc.total.irq_ms == 0
    assert hc.psi_cpu_some_us == 312_500
    assert hc.steal_share == pytest.approx(1200 / 8000)
    assert "stole 1200 ms of CPU (15.0 % of 2 CPU(s) x 4.0 s; counted in 10 ms ticks)" in procstat.steal_clause(hc)


def test_interval_without_psi_and_with_a_cpu_that_restarted() -> None:
    a = procstat.Snapshot(0.0, {"cpu": (0,) * 8, "cpu0": (5,) * 8, "cpu1": (9,) * 8})
    b = procstat.Snapshot(500.0, {"cpu": (1,) * 8, "cpu0": (6,) * 8, "cpu2": (1,) * 8})
    hc = procstat.interval(a, b, tick_hz=250)
    assert hc.psi_cpu_some_us is None
    assert list(hc.per_cpu) == ["cpu0"] and hc.cpus == 1  # a CPU only one snapshot has is left out
    assert hc.total.steal_ms == 4.0 and hc.per_cpu["cpu0"].busy_ms == 12.0
    back = procstat.interval(b, a)  # counters going backwards (a CPU offlined and back): 0, never negative
    assert back.per_cpu["cpu0"].steal_ms == 0.0


def test_read_snapshot_from_a_proc_directory(tmp_path: Path) -> None:
    (tmp_path / "stat").write_text(BEFORE)
    snap = procstat.read_snapshot(tmp_path)  # no pressure/: a kernel without PSI
    assert snap.psi_some_us is None and snap.stat["cpu0"][7] == 7951 and snap.mono_ms > 0
    (tmp_path / "pressure").mkdir()
    (tmp_path / "pressure" / "cpu").write_text(PSI)
    assert procstat.read_snapshot(tmp_path).psi_some_us == 4301505762


def test_the_probe_puts_host_cpu_in_the_record() -> None:
    rep = SimpleNamespace(extra={})
    probe = HostCpuProbe()
    probe.start(cast(Rep, rep))
    probe.stop(cast(Rep, rep))
    hc = HostCpu.model_validate(rep.extra["host_cpu"])  # the real /proc of this host
    assert hc.interval_s >= 0 and hc.cpus >= 1 and set(hc.per_cpu) >= {"cpu0"}
    assert probe.artifacts() == [] and HostCpuProbe.analyze(Path("/nonexistent")).empty
    record = Repetition.model_validate({"name": "s", "mptcp": {"requested": False}, "host_cpu": rep.extra["host_cpu"]})
    assert record.host_cpu == hc


def record_of(fields: dict[str, Any]) -> Repetition:
    """A repetition's record with these fields (run/verdicts reads the model)."""
    return Repetition.model_validate({"name": "s", **fields})


def test_a_late_delay_line_is_told_with_the_steal_of_its_interval() -> None:
    late = {"delay_us": 2000, "packets": 5000, "lateness_us": {"p50": 60, "p99": 3000, "max": 9000, "n": 5000}}
    hc = procstat.interval(procstat.Snapshot(0.0, procstat.parse_stat(BEFORE)),
                           procstat.Snapshot(4000.0, procstat.parse_stat(AFTER)))
    timing, _ = daemon_problems(record_of({"delay_line_stats": {"delayline a": late}, "host_cpu": hc.model_dump()}))
    assert timing == ["delayline a: release lateness p99 3000 us > 500 us allowed for a 2 ms delay (CPU-starved?); "
                      "during the traffic the hypervisor stole 1200 ms of CPU (15.0 % of 2 CPU(s) x 4.0 s; "
                      "counted in 10 ms ticks)"]
    # losses say nothing about the hypervisor; a record without host_cpu: the reason as before
    lost = {**late, "lateness_us": {"p99": 10}, "enobufs": 2}
    assert daemon_problems(record_of({"delay_line_stats": {"delayline a": lost}, "host_cpu": hc.model_dump()}))[0] == [
        "delayline a: 2 netlink receive buffer overflows (ENOBUFS)"]
    assert daemon_problems(record_of({"delay_line_stats": {"delayline a": late}}))[0][0].endswith("(CPU-starved?)")


def _rep(name: str, rep: int, idle_ms: float, steal_ms: float = 0.0, psi_us: int | None = 500_000) -> dict[str, Any]:
    # 2 CPUs over 10 s: 20,000 ms of CPU time
    return {"name": name, "rep": rep, "mptcp": {"requested": False},
            "host_cpu": {"interval_s": 10.0, "cpus": 2, "psi_cpu_some_us": psi_us,
                         "total": {"busy_ms": 20_000 - idle_ms - 2_000 - steal_ms, "idle_ms": idle_ms,
                                   "softirq_ms": 2_000, "steal_ms": steal_ms}}}


def test_report_states_the_headroom_and_names_cpu_bound_scenarios() -> None:
    from mptcplab.results.read import as_summary
    from mptcplab.results.report import render_report
    from mptcplab.results.tables import host_cpu_frame
    from mptcplab.results.terminal import print_table

    s = as_summary({"lab": "x", "run_id": "r", "complete": True, "aggregates": [], "findings": [],
                    "scenarios": [_rep("small", 1, 400), _rep("small", 2, 1_200), _rep("big", 1, 12_000, 200, None)]})
    hc = {r["scenario"]: r for r in host_cpu_frame(s).to_dict("records")}
    assert hc["small"]["reps"] == 2 and hc["small"]["idle"] == pytest.approx(0.04)   # (2 % + 6 %) / 2
    assert hc["big"]["steal"] == pytest.approx(0.01) and math.isnan(hc["big"]["psi_some"])
    assert hc["small"]["softirq"] == pytest.approx(0.10) and hc["small"]["psi_some"] == pytest.approx(0.05)
    text = render_report(s)
    assert "## Host CPU during the traffic" in text and "**CPU-bound (idle below 10%): small.**" in text
    assert "CPU-BOUND" in print_table(s) and "small" in print_table(s).split("CPU-BOUND")[1]
    # a run whose repetitions did not record it has no such section
    bare = as_summary({"lab": "x", "run_id": "r", "scenarios": [{"name": "a", "mptcp": {"requested": False}}],
                       "aggregates": [], "findings": []})
    assert "Host CPU" not in render_report(bare) and "CPU-BOUND" not in print_table(bare)
