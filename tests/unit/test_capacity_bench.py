"""bench/capacity_bench.py's arithmetic (the measuring needs root and an idle host): each
sweep moves only its own quantity across today's thresholds, and the thresholds derived
from pass/fail rows."""

from __future__ import annotations

from typing import Any

import pytest
from benchmod import load_bench

from mptcplab.emulation.capacity import DEFAULT_LIMITS


def bench() -> Any:
    return load_bench("capacity_bench")


def test_each_sweep_crosses_its_thresholds_and_holds_the_others_below_theirs() -> None:
    b = bench()
    now = b.current(DEFAULT_LIMITS, 2)
    for q, configs in b.SWEEPS.items():
        values = [c.value for c in configs]
        assert values == sorted(values), q
        fits, beyond = now[q]
        assert values[0] <= fits < values[-1], q  # some pass, some should fail
        for c in configs:
            if q != "held":  # held stays below its fits: it cannot be what fails
                assert c.pps * c.delay_ms / 1e3 <= DEFAULT_LIMITS.held_fits, c
            if q not in ("line_pps", "line_pps_short"):  # each line within its own packets/s
                assert c.pps <= DEFAULT_LIMITS.line_pps_fits, c


def test_thresholds_from_rows() -> None:
    b = bench()
    rows = [{"quantity": "held", "value": v, "ok": ok} for v, ok in ((400, True), (800, True), (1600, False))]
    rows += [{"quantity": "line_pps", "value": v, "ok": ok} for v, ok in ((8000, True), (16000, False),
                                                                         (20000, True))]
    found = b.derive(rows)
    assert (found["held"].fits, found["held"].beyond, found["held"].inconsistent) == (800, 1600, False)
    assert found["line_pps"].inconsistent  # a pass above a failure: noise, not a threshold
    lim = b.suggested_limits(found, cpus=2)
    assert (lim.held_fits, lim.held_beyond) == (800, 1600)
    assert lim.line_pps_fits == DEFAULT_LIMITS.line_pps_fits  # inconsistent: kept
    host = b.derive([{"quantity": "host_pps", "value": 20000.0, "ok": True}])
    assert b.suggested_limits(host, cpus=2).host_pps_fits_per_cpu == pytest.approx(10000.0)
