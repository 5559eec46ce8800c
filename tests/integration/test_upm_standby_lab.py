"""Controller upm_standby on real namespaces (issue 35): a controller drives the userspace
path manager, and the capture shows the subflow it opened, when it opened and closed it.

    client:eth1 (path A) --\\            /-- server:eth1
                            r (router)
    client:eth2 (path B) --/            \\-- server:eth2

The client runs the userspace path manager with no endpoint: the upload starts on its
initial subflow over A alone (20 Mbit/s, 1 ms, a 10 ms queue, so its RTT stays far below
the thresholds). A timeline ``link_change`` sets A's delay to 100 ms at 1.5 s and back to
1 ms at 3.5 s. The controller (100 ms steps) opens a subflow from client:eth2 to
server:eth1 once A's smoothed RTT has been above 60 ms for 200 ms, and closes it once it
has been below 30 ms for 200 ms (the dwell; and the subflow is 1 s old). Checked: events.csv has one
create and one destroy from ``controller:upm_standby``, each in the second after its
delay change, with the RTT behind it in ``detail``; the capture (rep.json's subflows) has
exactly one subflow on B, a join carrying data from after the create to the destroy; the
MIB counts one join; the controller's trace saw the standby subflow in ss.

One quick run of 6 s.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any

import pytest

from .labkit import assert_upm_subflow_window, rep_record, run_quick, write_lab

pytestmark = pytest.mark.netns

TOPO = {"nodes": {n: {"kind": "linux", "image": f"mptcplab/{'router' if n == 'r' else 'host'}:latest"}
                  for n in ("client", "r", "server")},
        "links": [{"endpoints": ["client:eth1", "r:eth1"]}, {"endpoints": ["client:eth2", "r:eth2"]},
                  {"endpoints": ["r:eth3", "server:eth1"]}, {"endpoints": ["r:eth4", "server:eth2"]}]}
SLOW, FAST = 1.5, 3.5  # the timeline's delay changes on A
ABOVE_MS, BELOW_MS, DWELL, KEEP = 60, 30, 0.2, 1.0

EXP: dict[str, Any] = {
    "paths": {"A": "client:eth1", "B": "client:eth2"},
    "nodes": {
        "client": {"role": "host", "mptcp": {"path_manager": "userspace",
                                             "limits": {"subflows": 2, "add_addr_accepted": 0}}},
        "r": {"role": "router"},
        "server": {"role": "host", "mptcp": {"limits": {"subflows": 2, "add_addr_accepted": 0}}},
    },
    "links": {"client:eth1": {"rate": "20mbit", "delay": "1ms", "queue": "10ms"},
              "client:eth2": {"rate": "20mbit"}},
    "traffic": {
        "flows": {"main": {"client": "client", "server": "server", "server_address": "server:eth1",
                           "bind": "client:eth1", "mptcp": True, "duration": "6s", "cc": "cubic"}},
        "events": [{"at": SLOW, "action": "link_change", "link": "client:eth1", "delay": "100ms"},
                   {"at": FAST, "action": "link_change", "link": "client:eth1", "delay": "1ms"}]},
    "controllers": [{"name": "upm_standby", "node": "client", "interval": "100ms", "params": {
        "flow": "main", "local": "client:eth2", "local_id": 2, "remote": "server:eth1",
        "rtt_above": f"{ABOVE_MS}ms", "rtt_below": f"{BELOW_MS}ms", "dwell": f"{DWELL}s", "keep": f"{KEEP}s"}}],
    "capture": [{"point": "client:eth1"}, {"point": "client:eth2"}],
    "probes": {"nstat": True},
    "calibration": {"enabled": False},
    "quick": {"duration": "6s", "repetitions": 1},
    "scenarios": [{"name": "standby", "description": "A slow from 1.5 s to 3.5 s; the controller opens B meanwhile"}],
}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("upmstandby")
    lab = write_lab(root, "upmstandby", TOPO, EXP)
    rc, _ = run_quick(lab, root / "results")  # asserts no namespace was left behind
    run_dir = (root / "results" / "upmstandby" / "latest").resolve()
    assert run_dir.is_dir(), f"no run directory (exit {rc})"
    return run_dir


def rows(run_dir: Path) -> list[dict[str, str]]:
    with (run_dir / "scenarios" / "standby" / "rep1" / "events.csv").open() as f:
        return list(csv.DictReader(f))


def numbers(row: dict[str, str]) -> dict[str, str]:
    return dict(re.findall(r"(\S+?)=(\S+)", row["detail"]))


def test_the_controller_opens_and_closes_the_standby_subflow(run: Path) -> None:
    ev = rows(run)
    changes = [r for r in ev if r["action"] == "link_change"]
    assert len(changes) == 2 and all(r["rc"] == "0" and r["capture_s"] for r in changes), changes
    slow, fast = (float(r["capture_s"]) for r in changes)
    ours = [r for r in ev if r["source"] == "controller:upm_standby"]
    assert [r["action"] for r in ours] == ["upm_subflow_create", "upm_subflow_destroy"], ours
    for r in ours:
        assert r["rc"] == "0" and r["capture_s"], r  # the lookup found the token, the kernel took it
        assert "{token}" not in r["commands"] and "{token}=" in r["result"], r
    create, destroy = (float(r["capture_s"]) for r in ours)
    # each after its change by at least the dwell, within a second (RTT samples, steps, dwell)
    assert slow + DWELL < create < slow + 1.0, (slow, create)
    assert fast + DWELL < destroy < fast + 1.0, (fast, destroy)
    c, d = numbers(ours[0]), numbers(ours[1])
    assert c["decision"] == "create" and float(c["rtt_ms"]) > ABOVE_MS and float(c["for_s"]) >= DWELL - 1e-3, c
    assert d["decision"] == "destroy" and float(d["rtt_ms"]) < BELOW_MS, d
    assert not [r for r in ev if r["action"] == "controller_error"], ev

    rec = rep_record(run, "standby")
    # its data starts after the create's lookup began and ends by the destroy's command; A
    # carries the connection before the standby and after it is gone
    done = destroy + float(ours[1]["duration_ms"]) / 1000
    assert_upm_subflow_window(rec, create, destroy, done, min_bytes=50_000, first_within=0.8, a_until=done + 0.5)


def test_the_trace_saw_the_standby_subflow_while_open(run: Path) -> None:
    with (run / "scenarios" / "standby" / "rep1" / "controller-upm_standby-client.csv").open() as f:
        trace = list(csv.DictReader(f))
    assert trace, "no trace rows"
    opened = [t for t in trace if t["open"] == "True"]
    assert opened and any(t["standby_seen"] == "True" for t in opened), opened
    assert all(t["capture_s"] for t in trace), trace[0]  # on the capture's axis, as events.csv
    # before the delay change: A's RTT well under the threshold, nothing open
    early = [t for t in trace if float(t["t"]) < SLOW and t["rtt_ms"]]
    assert early and all(float(t["rtt_ms"]) < BELOW_MS and t["open"] == "False" for t in early), early
