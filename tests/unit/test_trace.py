"""Delivery traces as data (mptcplab/emulation/trace.py): the reader's one-line errors,
the rates, the capacity series (looped and offset as the delay line replays it), the
lookup of shipped traces by name, and the shipped files themselves."""

from __future__ import annotations

from pathlib import Path

import pytest

from mptcplab.emulation.trace import (
    OPPORTUNITY_BYTES,
    Trace,
    TraceError,
    load_trace,
    parse_trace,
    resolve_trace,
    trace_for,
    traces_dir,
)

OPP = OPPORTUNITY_BYTES


def _trace(tmp_path: Path, text: str, name: str = "t.trace") -> Trace:
    p = tmp_path / name
    p.write_text(text)
    return load_trace(p)


@pytest.mark.parametrize(("text", "line", "problem"), [
    ("1\n\n2\n", 2, "empty line"),
    ("1\n2x\n", 2, "'2x' is not a time in ms"),
    ("1\n-3\n", 2, "'-3' is not a time in ms"),
    ("1\n 2\n", 2, "' 2' is not a time in ms"),
    ("1.5\n", 1, "'1.5' is not a time in ms"),
    ("5\n3\n", 2, "3 ms is before the previous line's 5 ms"),
    ("0\n0\n", 2, "the last time is 0 ms: a trace must last"),
    ("1\n2\n\n", 3, "empty line"),
    ("99999999999\n", 1, "too large"),
])
def test_a_bad_trace_is_one_line_naming_file_line_and_problem(tmp_path: Path, text: str, line: int,
                                                              problem: str) -> None:
    with pytest.raises(TraceError) as e:
        _trace(tmp_path, text)
    msg = str(e.value)
    assert e.value.line == line and problem in msg
    assert msg.startswith(f"{tmp_path / 't.trace'}:{line}: ") and "\n" not in msg


def test_an_empty_or_missing_trace(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match=r"t\.trace: no delivery opportunities \(empty trace\)$"):
        _trace(tmp_path, "")
    with pytest.raises(TraceError, match="nope.trace: "):
        load_trace(tmp_path / "nope.trace")
    (tmp_path / "bin.trace").write_bytes(b"1\n\xff\n")
    with pytest.raises(TraceError, match="not a text file"):
        load_trace(tmp_path / "bin.trace")


def test_crlf_and_no_final_newline_are_read(tmp_path: Path) -> None:
    assert parse_trace("1\r\n1\r\n3", "x") == (1, 1, 3)


def test_rates_of_a_simple_trace(tmp_path: Path) -> None:
    # two opportunities at 1 ms, one at 2, 3, 4 (period 4 ms): 5 x 1504 bytes per 4 ms
    t = _trace(tmp_path, "1\n1\n2\n3\n4\n")
    assert (t.opportunities, t.period_ms) == (5, 4)
    assert t.mean_rate_bps == pytest.approx(5 * OPP * 8 / 0.004)
    one_per_ms = _trace(tmp_path, "1\n", "c.trace")
    assert one_per_ms.mean_rate_bps == pytest.approx(12.032e6)
    assert one_per_ms.peak_rate_bps == pytest.approx(12.032e6)


def test_capacity_series_counts_opportunities_in_each_window_looped(tmp_path: Path) -> None:
    # 10 opportunities in the first 50 ms, none in the next 50 (period 100 ms)
    t = _trace(tmp_path, "".join(f"{ms}\n" for ms in (5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 100)))
    assert t.capacity_series(0.3, window_s=0.05) == (10 * OPP, 1 * OPP, 10 * OPP, 1 * OPP, 10 * OPP, 1 * OPP)
    # windows are (a, b]: the opportunity at 50 ms is in the first window, the 100 ms one in the second
    assert t.capacity_series(0.1, window_s=0.05)[1] == OPP
    # an offset shifts the windows into the trace: 25 ms in, (25, 75] holds 30..50
    assert t.capacity_series(0.05, window_s=0.05, offset_s=0.025) == (5 * OPP,)
    # offsets and durations beyond the period loop
    assert t.capacity_series(0.05, window_s=0.05, offset_s=1.025) == (5 * OPP,)
    assert sum(t.capacity_series(10.0, window_s=0.1)) == 100 * 11 * OPP
    assert t.peak_rate_bps == pytest.approx(11 * OPP * 8 / 0.1)


def test_capacity_series_of_the_outage_trace() -> None:
    t = trace_for("outage-2s", ".")
    s = t.capacity_series(8.0)
    assert len(s) == 80
    assert set(s[:20]) == {100 * OPP}   # 12 Mbit/s: one per ms
    assert set(s[20:40]) == {200 * OPP}  # 24 Mbit/s
    assert set(s[40:60]) == {0}         # the outage
    assert set(s[60:80]) == {50 * OPP}  # 6 Mbit/s: one per 2 ms
    assert t.period_ms == 8000 and t.peak_rate_bps == pytest.approx(24.064e6)
    assert t.capacity_series(0.1, offset_s=3.95) == (100 * OPP,)  # 3950..4000 ms at 2 per ms, then the outage
    with pytest.raises(ValueError):
        t.capacity_series(1.0, window_s=0)


def test_equal_traces_compare_by_file_and_content(tmp_path: Path) -> None:
    a = _trace(tmp_path, "1\n2\n")
    assert a == load_trace(tmp_path / "t.trace")
    b = _trace(tmp_path, "1\n3\n", "u.trace")
    assert a != b and a.name == "t"


def test_a_changed_file_is_read_again(tmp_path: Path) -> None:
    a = _trace(tmp_path, "1\n2\n")
    p = tmp_path / "t.trace"
    p.write_text("1\n2\n3\n4\n")
    import os
    os.utime(p, ns=(1, 1))
    assert load_trace(p).opportunities == 4 != a.opportunities


def test_names_are_shipped_traces_and_paths_are_relative_to_the_lab(tmp_path: Path) -> None:
    assert resolve_trace("outage-2s", tmp_path) == traces_dir() / "outage-2s.trace"
    assert resolve_trace("my.trace", tmp_path) == tmp_path / "my.trace"
    assert resolve_trace("sub/x", tmp_path) == tmp_path / "sub" / "x"
    assert resolve_trace("/abs/x.down", tmp_path) == Path("/abs/x.down")
    with pytest.raises(TraceError, match=r"no shipped trace of that name .*known: .*outage-2s"):
        resolve_trace("no-such-trace", tmp_path)


@pytest.mark.parametrize("name", ["const-12mbit", "steps-6-12-24mbit", "outage-2s", "tmobile-umts-down-60s",
                                  "verizon-lte-down-60s"])
def test_every_shipped_trace_reads_and_is_described(name: str) -> None:
    t = trace_for(name, ".")
    assert t.period_ms <= 60_000 and t.opportunities > 0
    assert name in (traces_dir() / "README.md").read_text()
    assert t.describe().startswith(f"trace {name}: ")


def test_the_synthetic_traces_are_what_the_script_writes(tmp_path: Path) -> None:
    import runpy

    mod = runpy.run_path(str(traces_dir() / "make_synthetic.py"))
    assert mod["main"](["make_synthetic.py", str(tmp_path)]) == 0
    for name in mod["TRACES"]:
        assert (tmp_path / f"{name}.trace").read_text() == (traces_dir() / f"{name}.trace").read_text(), name
