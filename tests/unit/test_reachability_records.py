"""The reachability estimate (emulation/capacity.py) agrees with what was measured on this
machine and kept in bench/records/scale-20261128/: calibrate's verdict per line, and a lab
run's own link checks at the papers' rates. A change of the thresholds that says "beyond"
where a kept measurement kept time, or "fits" where one did not, fails here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from benchmod import load_bench

from mptcplab.emulation.capacity import DEFAULT_LIMITS, FITS, estimate
from mptcplab.emulation.linkmodel import DirectedLink, Endpoint, LinkShape
from mptcplab.lab.loader import load_lab
from mptcplab.lab.machinefit import scenario_estimate
from mptcplab.lab.scale import apply_scale
from mptcplab.record import archive
from mptcplab.results.read import load_summary

REPO = Path(__file__).resolve().parents[2]
RECORDS = REPO / "bench" / "records" / "scale-20261128"


def _line(rate: str, delay: str) -> str:
    a, b = Endpoint("a", "eth0"), Endpoint("b", "eth0")
    s = LinkShape.parse(rate=rate, delay=delay)
    return estimate([("line", DirectedLink(a, b, s, 1500), DirectedLink(b, a, s, 1500))], "nfqueue", 2).verdict


@pytest.mark.parametrize("row", json.loads((RECORDS / "reachability.json").read_text()),
                         ids=lambda r: f"{r['rate']}-{r['delay']}")
def test_a_line_calibrate_measured_is_estimated_as_measured(row: dict[str, object]) -> None:
    verdict = _line(str(row["rate"]), str(row["delay"]))
    assert (verdict == FITS) == bool(row["within"]), (row, verdict)


def test_each_swept_configuration_is_on_its_side_of_the_thresholds() -> None:
    """bench/capacity_bench.py's rows: what kept time is within ``fits``, what did not is past it."""
    now = load_bench("capacity_bench").current(DEFAULT_LIMITS, 2)
    rows = json.loads((RECORDS / "capacity.json").read_text())
    assert {r["quantity"] for r in rows} == set(now)
    for r in rows:
        fits, beyond = now[r["quantity"]]
        if r["ok"]:
            assert r["value"] <= fits + 1e-6, r
        else:
            assert r["value"] > fits and r["value"] >= beyond - 1e-6, r


def test_the_asym_scenarios_that_kept_time_at_full_rate_are_estimated_to_fit(tmp_path: Path) -> None:
    run, _ = archive.restore(RECORDS / "asym__20261128T181737Z-727c.tar.xz", tmp_path)
    s = load_summary(run)
    assert s.valid and {r.name for r in s.scenarios} == {"tcp", "s1", "s3", "s5", "flood-default"}
    assert all(r.calibration_ok for r in s.scenarios)  # every link check passed
    lab = apply_scale(load_lab(REPO / "labs" / "asym"), 1.0, "command line")
    for sc in lab.scenarios:
        if sc.name in {r.name for r in s.scenarios}:
            assert scenario_estimate(lab, sc, "nfqueue", 2).verdict == FITS, sc.name
