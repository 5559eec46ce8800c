"""A lab with delayed links end to end: on a kernel without netem the NFQUEUE delay
line carries the delay, the manifest carries the links' calibration, and the
MPTCP result is verified from the capture."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mptcplab.cli import main

from .labkit import assert_status

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.netns


def test_sndbuf_paper_scenario_quick(tmp_path: Path) -> None:
    rc = main(["run", str(REPO / "labs/sndbuf"), "--quick", "--scenario", "mptcp-paper", "--results", str(tmp_path)])
    run = (tmp_path / "sndbuf" / "latest").resolve()
    summary = json.loads((run / "summary.json").read_text())
    manifest = json.loads((run / "manifest.json").read_text())
    assert_status(rc, summary)
    s = summary["scenarios"][0]
    assert s["mptcp"]["verified"], s["warnings"]
    assert {x["path"] for x in s["subflows"] if x["bytes"] > 0} == {"A", "B"}
    # the 40 ms one-way link was measured at 80 ms RTT, within tolerance
    cal = {c["link"]: c for c in manifest["calibration"]["mptcp-paper"]["rep1"]}
    delayed = next(c for c in cal.values() if c["configured"]["delay_s"] == pytest.approx(0.04))
    rtt = next(ch for ch in delayed["checks"] if ch["quantity"] == "rtt_min_ms")
    assert rtt["ok"] and 79.5 < rtt["measured"] < 82
    if manifest["link_emulation"] == "nfqueue":
        stats = s["delay_line_stats"]
        assert len(stats) == 2 and all(st["packets"] > 0 for st in stats.values())
    # the sender's buffer is what the paper set, as read back from the node
    assert manifest["sysctls"]["mptcp-paper"]["client"]["net.ipv4.tcp_wmem"] == "1048576 1048576 1048576"
