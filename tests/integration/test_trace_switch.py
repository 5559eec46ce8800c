"""A trace switch at run time, end to end: a lab whose client -> router direction replays
traces/const-24mbit (24.064 Mbit/s) switches it to const-12mbit (12.032 Mbit/s) with a
timeline link_change at 3 s. In the server's capture (one hop behind the delay line) the
bytes per 100 ms of the flow's data fall from about 24 to about 12 Mbit/s at the time
events.csv gives for the switch, and the delay line's stats count one switch.
"""

from __future__ import annotations

import csv
import math
import statistics
from pathlib import Path
from typing import Any

import pytest

from mptcplab import tracecheck

from .labkit import LINE_TOPOLOGY, assert_status, by_name, run_quick, write_lab

pytestmark = pytest.mark.netns

TOPOLOGY = LINE_TOPOLOGY
SWITCH_AT_S = 3.0


def experiment() -> dict[str, Any]:
    return {
        "nodes": {"client": {"role": "host", "mptcp": {"limits": {"subflows": 1}}},
                  "server": {"role": "host", "mptcp": {"limits": {"subflows": 1}}},
                  "router": {"role": "router"}},
        "links": {"client:eth1": {"egress": {"trace": "const-24mbit", "delay": "10ms", "queue": "150KB"}}},
        "traffic": {
            "flows": {"main": {"client": "client", "server": "server", "server_address": "server:eth1",
                               "mptcp": True, "duration": "6s", "cc": "cubic"}},
            "events": [{"at": f"{SWITCH_AT_S}s", "action": "link_change", "link": "client:eth1",
                        "direction": "one", "trace": "const-12mbit"}],
        },
        "capture": [{"point": "server:eth1"}],
        "calibration": {"enabled": False},
        "quick": {"duration": "6s", "repetitions": 1},
        "scenarios": [{"name": "main"}],
    }


def test_the_delivery_rate_follows_the_switch(tmp_path: Path) -> None:
    lab = write_lab(tmp_path, "traceswitch", TOPOLOGY, experiment())
    rc, summary = run_quick(lab, tmp_path / "results")
    assert_status(rc, summary)
    rec = by_name(summary)["main"]
    (stage,) = [s["trace"] for s in (rec.get("delay_line_stats") or {}).values() if s and s.get("trace")]
    assert stage["switches"] == 1 and stage["current_file"].endswith("const-12mbit.trace"), stage
    rep = sorted((tmp_path / "results" / "traceswitch").glob("2*/summary.json"))[-1].parent / "scenarios/main/rep1"
    (row,) = [r for r in csv.DictReader((rep / "events.csv").open()) if r["action"] == "link_change"]
    assert row["rc"] == "0", row
    t_switch = float(row["epoch_s"])
    packets = tracecheck.captured_packets(rep / "capture-server-eth1.pcap", "tcp.len > 0 && tcp.dstport == 5201",
                                          "tcp.len")
    assert len(packets) > 1000, len(packets)

    def mbps(lo: float, hi: float) -> list[float]:
        """Payload Mbit/s per 100 ms window from t_switch + lo to t_switch + hi."""
        n = round((hi - lo) * 10)
        bins = [0] * n
        for t, length in packets:
            k = math.floor((t - t_switch - lo) * 10)
            if 0 <= k < n:
                bins[k] += length
        return [b * 8 / 0.1 / 1e6 for b in bins]

    before, after = mbps(-2.0, 0.0), mbps(0.5, 2.5)
    print(f"before {statistics.median(before):.1f} Mbit/s, after {statistics.median(after):.1f} Mbit/s")
    # TCP payload under 24.064 / 12.032 Mbit/s of IP packets + 4 bytes (about 3.5 % headers)
    assert 20 <= statistics.median(before) <= 24.1, before
    assert 10 <= statistics.median(after) <= 12.1, after
    # the change is at the switch: the command (tens of ms: `ip netns exec`) and the queue left
    # (150 KB at 24 Mbit/s: 50 ms) are over within 0.2 s (measured: the rate halves at +70 ms)
    first = mbps(0.2, 0.5)
    assert max(first) <= 12.5, first
    assert min(mbps(-1.0, 0.0)) >= 20, "the rate fell before the switch"

