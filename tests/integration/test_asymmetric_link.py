"""An asymmetric link end to end on the netns backend: 4 Mbit/s and 5 ms one way, 40 Mbit/s
and 15 ms the other. The link check measures each direction's rate against its own shape
and the round trip against the sum of the two delays; iperf3 up and down shows the flow
gets each direction's rate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .labkit import assert_status, by_name, run_quick, write_lab

pytestmark = pytest.mark.netns

TOPOLOGY = {
    "nodes": {"client": {"kind": "linux", "image": "mptcplab/host:latest"},
              "server": {"kind": "linux", "image": "mptcplab/host:latest"}},
    "links": [{"endpoints": ["client:eth1", "server:eth1"], "mtu": 1500}],
}


def experiment() -> dict[str, object]:
    flow = {"client": "client", "server": "server", "server_address": "server:eth1", "mptcp": False,
            "duration": "3s", "cc": "cubic"}
    return {
        "nodes": {"client": {"role": "host"}, "server": {"role": "host"}},
        # keyed by the client's end: egress is client -> server (the upload), ingress the download
        "links": {"client:eth1": {"rate": "40mbit", "delay": "15ms", "queue": "50ms",
                                  "egress": {"rate": "4mbit", "delay": "5ms"}}},
        "traffic": {"flows": {"main": flow}},
        "capture": [{"point": "client:eth1"}],
        "calibration": {"rate_seconds": "2s"},
        "quick": {"duration": "3s", "repetitions": 1},
        "scenarios": [{"name": "up"},
                      {"name": "down", "override": {"traffic": {"flows": {"main": {"direction": "download"}}}}}],
    }


def test_each_direction_measures_its_own_shape(tmp_path: Path) -> None:
    lab = write_lab(tmp_path, "asym", TOPOLOGY, experiment())
    rc, summary = run_quick(lab, tmp_path / "results")
    assert summary["complete"], summary
    run = sorted((tmp_path / "results" / "asym").glob("2*/manifest.json"))[-1]
    manifest = json.loads(run.read_text())
    entry = manifest["calibration"]["up"]["rep1"][0]
    assert entry["configured"]["direction"] == "client:eth1->server:eth1"
    assert entry["configured"]["rate_bps"] == 4_000_000 and entry["configured_reverse"]["rate_bps"] == 40_000_000
    rates = {c["direction"]: c for c in entry["checks"] if c["quantity"] == "goodput_mbps"}
    up, down = rates["client:eth1->server:eth1"], rates["server:eth1->client:eth1"]
    assert (up["configured"], down["configured"]) == (4.0, 40.0)
    # each direction near its own rate and far from the other's: a tbf ceiling cannot be beaten
    # whatever the load, a floor at half the rate is what a loaded host still gives (the 93 %
    # tolerance is the run's own timing verdict: `ok` must agree with it, not be true)
    assert 2.0 < up["measured"] <= 4.4, up
    assert 20.0 < down["measured"] <= 42.0, down
    for c in (up, down):
        assert c["ok"] == (c["measured"] >= 0.93 * c["configured"]), c
    rtt = next(c for c in entry["checks"] if c["quantity"] == "rtt_min_ms")
    assert rtt["direction"] == "both" and rtt["ok"], rtt  # 5 + 15 ms, plus two serializations
    assert 20.0 < rtt["measured"] < 21.5
    # the flow itself: uploads get the 4 Mbit/s direction, downloads the 40 Mbit/s one
    recs = by_name(summary)
    assert recs["up"]["goodput_mbps"] < 4.4
    assert recs["down"]["goodput_mbps"] > 20.0, recs["down"]
    assert_status(rc, summary)


def test_a_scaled_run_shapes_scaled_rates_and_says_so(tmp_path: Path) -> None:
    lab = write_lab(tmp_path, "asym", TOPOLOGY, experiment())
    rc, summary = run_quick(lab, tmp_path / "results", "--scale", "0.5", "--scenario", "down")
    assert summary["complete"] and summary["scale"] == 0.5
    run = sorted((tmp_path / "results" / "asym").glob("2*/"))[-1]
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["scale"]["factor"] == 0.5 and manifest["scale"]["source"] == "command line"
    entry = manifest["calibration"]["down"]["rep1"][0]
    rates = {c["direction"]: c for c in entry["checks"] if c["quantity"] == "goodput_mbps"}
    # 4 and 40 Mbit/s at x0.5, delays unchanged; each measured near its scaled rate (bounds as above)
    down, up = rates["server:eth1->client:eth1"], rates["client:eth1->server:eth1"]
    assert down["configured"] == 20.0 and 10.0 < down["measured"] <= 21.0, down
    assert up["configured"] == 2.0 and 1.0 < up["measured"] <= 2.2, up
    assert entry["configured_reverse"]["delay_s"] == pytest.approx(0.015)
    assert 10.0 < by_name(summary)["down"]["goodput_mbps"] < 21.0
    report = (run / "report.md").read_text()
    assert "goodput Mbit/s (scaled ×0.5)" in report and "every link rate ×0.5" in report
    assert_status(rc, summary)
