"""The link check replays every trace a direction switches to during the run (lab/shapes.py
trace_shapes, steps/links.py), not only the configured start: labs/mobile's walk (a switch
at 3 s on both directions of rw:eth2) and its LTE downlink restarted 17 s in at 0 s."""

from __future__ import annotations

from pathlib import Path

from mptcplab.lab.events import LinkChange
from mptcplab.lab.loader import load_lab
from mptcplab.lab.model import ScenarioRun
from mptcplab.lab.network import Network
from mptcplab.lab.shapes import changes_direction, trace_shapes
from mptcplab.net.plan import network_for

REPO = Path(__file__).resolve().parents[2]


def _mobile() -> tuple[ScenarioRun, Network]:
    lab = load_lab(REPO / "labs" / "mobile")
    sc = lab.scenarios[0]
    return sc, network_for(lab.topology, sc, "experiment.yml")


def test_each_switch_is_listed_with_its_time_trace_and_offset() -> None:
    sc, net = _mobile()
    events = sc.body.traffic.events
    found = {}
    for link in net.links:
        for dl in link.directions():
            found[f"{dl.src}->{dl.dst}"] = [(at, s.trace.name if s.trace else None, s.trace_offset_s)
                                             for at, s in trace_shapes(events, net, link, dl)]
    # the walk: both directions of the WiFi access link, from the trace's start
    assert found["rw:eth2->rs:eth1"] == [(3.0, "wifi-walk-12s", 0.0)]
    assert found["rs:eth1->rw:eth2"] == [(3.0, "wifi-walk-12s", 0.0)]
    # direction: one on rs:eth2 restarts only that end's egress (the downlink), 17 s in
    assert found["rs:eth2->rc:eth2"] == [(0.0, "verizon-lte-down-60s", 17.0)]
    assert found["rc:eth2->rs:eth2"] == []


def test_a_one_direction_change_takes_the_egress_of_the_end_it_names() -> None:
    sc, net = _mobile()
    ev = next(e for e in sc.body.traffic.events if isinstance(e, LinkChange) and e.direction == "one")
    link = net.link_of(ev.link)
    assert [str(dl.src) for dl in link.directions() if changes_direction(ev, dl)] == [ev.link]


def test_the_dry_run_lists_the_walk_and_the_restarted_downlink_once_each() -> None:
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "mptcplab.cli", "run", str(REPO / "labs" / "mobile"), "--dry-run",
                        "--quick"], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert p.returncode == 0, p.stderr
    replays = {line.split("# ", 1)[1] for line in p.stdout.splitlines() if " replay: " in line}
    assert any("wifi-walk-12s replay: its first 6 s" in r for r in replays)
    assert any("verizon-lte-down-60s replay: 6 s from 17 s in" in r for r in replays)
    # the LTE start from 0 s is replaced by the 0 s restart before any traffic: not replayed
    assert not any("verizon-lte-down-60s replay: its first" in r for r in replays)
    assert len(replays) == 3


def test_the_estimate_counts_each_replay_once_unless_a_past_run_holds_them(tmp_path: Path) -> None:
    """Without a past run the default overhead holds no replay check: the estimate adds each
    distinct check's flood once per run (labs/mobile: const-24mbit 2 s, the walk 13 s, the LTE
    downlink 61 s from 17 s in; 6 s each in a quick run, the 1 s constant trace 2 s)."""
    from mptcplab.walltime import estimate, replay_seconds

    lab = load_lab(REPO / "labs" / "mobile")
    assert replay_seconds(lab, lab.scenarios, quick=False) == 2 + 13 + 61
    assert replay_seconds(lab, lab.scenarios, quick=True) == 2 + 6 + 6
    est = estimate(lab, lab.scenarios, lambda _s: 1, quick=True, results_root=tmp_path)
    assert est.replay_seconds == 14 and "14 s of trace replay checks" in est.line()
    assert estimate(lab, lab.scenarios, lambda _s: 1, quick=True, results_root=tmp_path,
                    calibrate=False).replay_seconds == 0
