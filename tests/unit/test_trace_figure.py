"""The report's figure of each replayed trace's capacity (results/report.run_traces,
results/figures.plot_trace_capacity)."""

from __future__ import annotations

from pathlib import Path

from mptcplab.emulation.trace import load_trace, traces_dir
from mptcplab.record.model import Manifest
from mptcplab.results.figures import plot_trace_capacity
from mptcplab.results.report import run_traces


def manifest(*refs: str) -> Manifest:
    entries = [{"link": f"l{i}", "ok": True, "configured": {"direction": "a->b", "trace": ref},
                "configured_reverse": {"direction": "b->a"}} for i, ref in enumerate(refs)]
    return Manifest.model_validate({"calibration": {"sc": {"rep1": entries, "rep2": entries}}})


def test_each_trace_once_a_relocated_shipped_one_found_by_name_an_unknown_one_left_out(tmp_path: Path) -> None:
    here = str(traces_dir() / "const-24mbit.trace")
    elsewhere = "/some/other/checkout/traces/verizon-lte-down-60s.trace"  # a record restored elsewhere
    got = run_traces(manifest(here, elsewhere, here, str(tmp_path / "gone.trace")))
    assert [t.name for t in got] == ["const-24mbit", "verizon-lte-down-60s"]


def test_no_trace_no_figure_input() -> None:
    assert run_traces(Manifest.model_validate({"calibration": {}})) == []


def test_one_panel_per_trace_each_on_its_own_scale() -> None:
    traces = [load_trace(traces_dir() / f"{n}.trace") for n in ("verizon-lte-down-60s", "tmobile-umts-down-60s")]
    fig = plot_trace_capacity(traces)
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert len(axes) == 2
    tops = [ax.get_ylim()[1] for ax in axes]
    assert tops[0] > 2 * tops[1]  # LTE's peak is far above UMTS's: not a shared axis
