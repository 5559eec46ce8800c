"""The scale factor (lab/scale.py), the reachability estimate (emulation/capacity.py,
lab/machinefit.py, preflight.reachability) and how scaled runs are reported."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from mptcplab.emulation.capacity import BEYOND, FITS, MARGINAL, NOT_ESTIMATED, estimate
from mptcplab.emulation.linkmodel import DirectedLink, Endpoint, LinkShape
from mptcplab.errors import LabInputError
from mptcplab.lab.loader import load_lab
from mptcplab.lab.machinefit import BEYOND_CODE, paper_estimates
from mptcplab.lab.model import Lab
from mptcplab.lab.network import build_network
from mptcplab.lab.scale import apply_scale, nice_factor_at_most, parse_scale_arg
from mptcplab.lab.schema import Expectation, Finding, Published, PublishedSource, PublishedValue
from mptcplab.metrics import paper_target
from mptcplab.preflight import reachability
from mptcplab.record.model import Repetition, Summary
from mptcplab.results import findings
from mptcplab.results.policy import collect_warnings
from mptcplab.results.summary import build_summary_model
from mptcplab.results.tables import published_table, scenario_table
from mptcplab.results.terminal import print_table
from mptcplab.units import rate_unit

BASE = Path(__file__).resolve().parents[1] / "data" / "bad-labs" / "_base"
A, B = Endpoint("a", "eth0"), Endpoint("b", "eth0")


def make_lab(tmp_path: Path, links: dict[str, Any], **top: Any) -> Lab:
    d = tmp_path / "lab"
    shutil.copytree(BASE, d)
    exp = yaml.safe_load((d / "experiment.yml").read_text())
    exp["links"] = links
    exp.update(top)
    (d / "experiment.yml").write_text(yaml.safe_dump(exp))
    return load_lab(d)


def line(rate: str, delay: str) -> tuple[str, DirectedLink, DirectedLink]:
    s = LinkShape.parse(rate=rate, delay=delay)
    return (f"{rate} {delay}", DirectedLink(A, B, s, 1500), DirectedLink(B, A, s, 1500))


# --------------------------------------------------------------------------- scaling
PAPER_LINKS = {"client:eth1": {"rate": "400mbit", "delay": "2ms", "queue": "1MB"},
               "client:eth2": {"rate": "4mbit", "delay": "100ms", "queue": "80ms", "egress": {"rate": "40mbit"}}}


def test_scale_keeps_delays_and_ratios_and_queue_time(tmp_path: Path) -> None:
    lab = apply_scale(make_lab(tmp_path, PAPER_LINKS), 0.1, "command line")
    net = build_network(lab.topology, lab.scenarios[0].body)
    a, b = net.link_of("client:eth1"), net.link_of("client:eth2")
    assert a.shape_ab.rate_bps == 40_000_000 and a.shape_ab.delay_s == pytest.approx(0.002)
    assert a.shape_ab.queue is not None and a.shape_ab.queue.bytes == 100_000  # bytes scale with the rate
    assert b.shape_from(Endpoint("client", "eth2")).rate_bps == 4_000_000  # per-direction rates scale too
    assert b.shape_from(Endpoint("rb", "eth1")).rate_bps == 400_000
    assert b.shape_ab.queue is not None and b.shape_ab.queue.seconds == pytest.approx(0.080)  # time: unchanged
    assert b.shape_ab.delay_s == pytest.approx(0.100)
    assert lab.scale == 0.1 and lab.scale_source == "command line"


def test_rescaling_starts_from_the_lab_files(tmp_path: Path) -> None:
    # the lab's own factor applies at load time
    lab = make_lab(tmp_path, PAPER_LINKS, scale=0.5, scale_reason="a measurement named here for the test's sake")
    assert (lab.scale, lab.scale_source) == (0.5, "lab")
    assert build_network(lab.topology, lab.scenarios[0].body).link_of("client:eth1").shape_ab.rate_bps == 200_000_000
    again = apply_scale(lab, 0.1, "command line")  # x0.1 of the lab's 400, not of 200
    assert build_network(again.topology, again.scenarios[0].body).link_of("client:eth1").shape_ab.rate_bps \
        == 40_000_000
    assert apply_scale(again, 1.0, "none").scenarios == lab.base_scenarios()


def test_a_scale_that_makes_a_rate_too_slow_for_tbf_is_refused(tmp_path: Path) -> None:
    lab = make_lab(tmp_path, {"client:eth1": {"rate": "5kbit"}})
    with pytest.raises(LabInputError) as e:
        apply_scale(lab, 0.01, "command line")
    assert e.value.field == "links.client:eth1.rate" and "scaled ×0.01" in e.value.problem


def test_scale_argument() -> None:
    assert parse_scale_arg("auto") is None and parse_scale_arg("0.25") == 0.25
    for bad in ("0", "1.5", "fast"):
        with pytest.raises(LabInputError):
            parse_scale_arg(bad)
    assert nice_factor_at_most(0.37) == 0.25 and nice_factor_at_most(1.0) == 1.0 and nice_factor_at_most(0.1) == 0.1
    assert rate_unit(1.0) == "Mbit/s" and rate_unit(0.1) == "Mbit/s (scaled ×0.1)"
    assert paper_target(95, "goodput_mbps", 0.1) == pytest.approx(9.5)
    assert paper_target(0.6, "subflow_share", 0.1) == 0.6  # a share does not scale


# --------------------------------------------------------------------------- reachability model
def test_capacity_verdicts_follow_the_measured_configurations() -> None:
    # measured to keep time on a quiet host (bench/records/scale-20261128/)
    for rate, delay in (("100mbit", "40ms"), ("400mbit", "2ms"), ("400mbit", "100ms"), ("400mbit", "200ms"),
                        ("1gbit", "1ms"), ("1gbit", "20ms")):
        assert estimate([line(rate, delay)], "nfqueue", cpus=2).verdict == FITS, (rate, delay)
    assert estimate([line("400mbit", "2ms"), line("400mbit", "2ms")], "nfqueue", cpus=2).host_verdict == FITS
    assert estimate([line("1500mbit", "20ms")], "nfqueue", cpus=2).verdict == FITS
    # between what kept time and what did not: marginal; past the latter: beyond
    assert estimate([line("1800mbit", "20ms")], "nfqueue", cpus=2).links[0].verdict == MARGINAL
    assert estimate([line("2500mbit", "20ms")], "nfqueue", cpus=2).verdict == BEYOND
    # past the largest measured (400 Mbit/s x 400 ms) and nothing measured out: marginal
    assert estimate([line("400mbit", "500ms")], "nfqueue", cpus=2).verdict == MARGINAL
    assert estimate([line("800mbit", "40ms")] * 2, "nfqueue", cpus=2).host_verdict != FITS
    assert estimate([line("1gbit", "20ms")] * 3, "nfqueue", cpus=2).host_verdict == BEYOND
    # netem and tbf-only links have no measured limit: not estimated, never "fits" by default
    assert estimate([line("400mbit", "100ms")], "netem", cpus=2).verdict == NOT_ESTIMATED
    tbf = LinkShape.parse(rate="1gbit")
    assert estimate([("x", DirectedLink(A, B, tbf, 1500), DirectedLink(B, A, tbf, 1500))], "nfqueue",
                    cpus=2).verdict == NOT_ESTIMATED


def test_the_papers_configurations_fit_and_a_suggested_factor_makes_a_larger_one_fit() -> None:
    for label, e in paper_estimates("nfqueue", cpus=2):
        assert e.verdict == FITS and e.fit_factor == 1, label  # measured: they keep time here
    e = estimate([line("2500mbit", "20ms")], "nfqueue", cpus=2)
    f = nice_factor_at_most(e.fit_factor)
    assert e.verdict != FITS and f < 1
    scaled = LinkShape.parse(rate=round(2_500_000_000 * f), delay="20ms")
    again = estimate([("s", DirectedLink(A, B, scaled, 1500), DirectedLink(B, A, scaled, 1500))], "nfqueue", cpus=2)
    assert again.verdict == FITS, f


def test_preflight_auto_scales_and_warns_only_when_it_does_not_fit(tmp_path: Path) -> None:
    # client:eth2 has MTU 1500 (client:eth1's 9000 would carry the rate in a sixth of the packets)
    lab = make_lab(tmp_path, {"client:eth2": {"rate": "2500mbit", "delay": "20ms"}})
    plain = reachability(lab, None, "nfqueue", None, cpus=2)
    assert plain.lab.scale == 1 and plain.record["verdict"] == BEYOND
    assert [w["code"] for w in plain.warnings] == [BEYOND_CODE] * len(plain.warnings) and plain.warnings
    assert any("--scale" in ln for ln in plain.lines)
    auto = reachability(lab, None, "nfqueue", "auto", cpus=2)
    assert auto.lab.scale == plain.record["suggested_factor"] and auto.lab.scale_source == "auto"
    assert auto.record["verdict"] == FITS and auto.warnings == []
    assert auto.lines[0].startswith(f"scale {auto.lab.scale:g} (auto)")


# --------------------------------------------------------------------------- reporting a scaled run
PUB = Published(
    source=PublishedSource(id="p", title="t", authors=["a"], year=2020, document="d", kernel="k", testbed="t"),
    values=[PublishedValue(id="g", scenario="s", metric="goodput_mbps", value=380, unit="Mbit/s", where="w"),
            PublishedValue(id="sh", scenario="s", metric="subflow_share", path="A", value=0.9, unit="", where="w")],
    findings=[Finding(id="fast", scenario="s", statement="near line rate", where="w",
                      expect=Expectation(metric="goodput_mbps", op=">", value=300))])


def _summary(goodput: float, scale: float, warnings: list[dict[str, str]] | None = None) -> Summary:
    rep = Repetition.model_validate({"name": "s", "rep": 1, "goodput_mbps": goodput, "calibration_ok": True})
    cpu = {"virtualization": "kvm", "software_emulated_cpu": False, "source": "test"}
    return build_summary_model("lab", "r", "6.18", True, False, [rep], PUB, [], cpu, scale=scale,
                               run_warnings=warnings or [])


def test_findings_compare_absolute_rates_with_the_papers_times_the_factor() -> None:
    s = _summary(38.0, 0.1)
    # one repetition: inconclusive, on the claim's side (38 > 300 x 0.1)
    assert s.findings[0].verdict == "inconclusive" and s.findings[0].checks[0].leans is True
    assert "compared scaled ×0.1: > 30" in s.findings[0].evidence
    assert _summary(38.0, 1.0).findings[0].checks[0].leans is False
    ratio = Expectation(metric="goodput_mbps", op=">", value=0.5, than={"scenario": "s"}, by="ratio")  # type: ignore[arg-type]
    assert findings.check(ratio, "s", {"s": s.scenarios}, 0.1)[0].leans is True  # a ratio is not scaled (1 > 0.5)


def test_scaled_numbers_are_labelled_in_report_tables_and_terminal() -> None:
    s = _summary(38.0, 0.1)
    rows = {p.id: p for p in s.published}
    assert rows["g"].paper_value_scaled == pytest.approx(38.0) and rows["sh"].paper_value_scaled is None
    assert "goodput Mbit/s (scaled ×0.1) (mean ± std)" in scenario_table(s).columns
    paper = published_table(s)
    assert "compared scaled ×0.1: 38 Mbit/s" in paper.iloc[0]["paper"]
    assert "compared scaled" not in paper.iloc[1]["paper"]
    out = print_table(s)
    assert "goodput Mbit/s (scaled ×0.1)" in out and "SCALED RUN" in out
    plain = print_table(_summary(38.0, 1.0))
    assert "scaled" not in plain.lower()


def test_reachability_warnings_reach_the_report() -> None:
    s = _summary(38.0, 1.0, [{"code": BEYOND_CODE, "message": "scenario(s) s: beyond"}])
    again = Summary.model_validate(s.to_json())  # written and read by the same model
    assert [w.code for w in collect_warnings(again)] == [BEYOND_CODE]
