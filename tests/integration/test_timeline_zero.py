"""The timeline's zero at the measured flow's connection (``traffic.timeline_zero: connection``)
against a client that starts slowly, as the Python transfer client does under a software-emulated
CPU (issue 35: in a 6.1 TCG guest an event at +1 s ran 1.67 s before the capture's first packet).

The slow start is made on purpose: the measured client's command is wrapped in
``sh -c 'sleep 1.5; exec "$@"'`` (Traffic.client_cmd patched for this module's run), so its
connection comes 1.5 s after its spawn. A ``sysctl`` event at +0.5 s (a no-op: the value the
engine sets anyway) is the timed action. With the default zero (the spawn) it runs before the
connection's first SYN in the capture (events.csv ``capture_s`` < 0); with the connection's zero
after it, and events.csv's first row and rep.json say where the zero fell.

client:eth1 -- server:eth1, 8 Mbit/s, 1 MB: the transfer lasts about 1 s, outliving the event.
Two scenarios of one quick run, about 15 s.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mptcplab.commands import Cmd
from mptcplab.steps.traffic import Traffic

from .labkit import ran_events as events
from .labkit import rep_record as rep
from .labkit import run_quick, write_lab

pytestmark = pytest.mark.netns

DELAY_S = 1.5
AT_S = 0.5
TOPO = {"nodes": {n: {"kind": "linux", "image": "mptcplab/host:latest"} for n in ("client", "server")},
        "links": [{"endpoints": ["client:eth1", "server:eth1"]}]}
EXP: dict[str, Any] = {
    "paths": {"A": "client:eth1"},
    "nodes": {"client": {"role": "host"}, "server": {"role": "host"}},
    "links": {"client:eth1": {"rate": "8mbit"}},
    "traffic": {
        "flows": {"main": {"kind": "transfer", "client": "client", "server": "server",
                           "server_address": "server:eth1", "bind": "client:eth1", "mptcp": True,
                           "bytes": "1MB", "duration": "10s"}},
        "events": [{"at": AT_S, "action": "sysctl", "node": "client", "key": "net.ipv4.tcp_no_metrics_save",
                    "value": "1"}]},
    "capture": [{"point": "server:eth1"}],
    "calibration": {"enabled": False},
    "quick": {"duration": "10s", "repetitions": 1},
    "scenarios": [
        {"name": "spawn", "description": "the default zero: the client's spawn"},
        {"name": "connection", "description": "the zero at the connection",
         "override": {"traffic": {"timeline_zero": "connection"}}},
    ],
}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tlzero")
    lab = write_lab(root, "tlzero", TOPO, EXP)
    slow = Traffic.client_cmd

    def delayed(self: Traffic, rep: Any, name: str, flow: Any, node: str | None = None) -> Cmd:
        c = slow(self, rep, name, flow, node)
        return Cmd(("sh", "-c", f'sleep {DELAY_S}; exec "$@"', "sh", *c.argv), node=c.node)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Traffic, "client_cmd", delayed)
        rc, _ = run_quick(lab, root / "results")
    run_dir = (root / "results" / "tlzero" / "latest").resolve()
    assert run_dir.is_dir(), f"no run directory (exit {rc})"
    return run_dir



def test_the_wrapper_delays_the_connection(run: Path) -> None:
    """Both runs connected, and the capture's first packet is at least the delay after the spawn:
    without that the two tests below would prove nothing."""
    for name in ("spawn", "connection"):
        r = rep(run, name)
        assert r["mptcp"] and r["flows"][0]["verified"], (name, r["warnings"])
        z = r["timeline_zero"]
        syn_epoch = float(events(run, name)["sysctl"]["epoch_s"]) - float(events(run, name)["sysctl"]["capture_s"])
        assert syn_epoch - z["spawned_epoch"] >= DELAY_S, (name, z, syn_epoch)


def test_with_the_spawn_zero_the_event_runs_before_the_connection(run: Path) -> None:
    ev = events(run, "spawn")
    assert "timeline_zero" not in ev  # events.csv as before: the zero is the spawn
    assert float(ev["sysctl"]["capture_s"]) < 0, ev["sysctl"]  # before the first SYN
    z = rep(run, "spawn")["timeline_zero"]
    assert z["asked"] == z["used"] == "spawn" and z["after_spawn_s"] == 0 and z["polls"] == 0, z


def test_with_the_connection_zero_the_event_runs_after_it(run: Path) -> None:
    ev = events(run, "connection")
    # the event half a second after the connection: after the first SYN, by about AT_S
    assert float(ev["sysctl"]["capture_s"]) >= AT_S - 0.05, ev["sysctl"]
    zero = ev["timeline_zero"]
    assert zero["target"] == "connection" and zero["flow"] == "main", zero
    assert float(zero["capture_s"]) >= 0, zero  # the zero itself is not before the SYN
    assert float(zero["duration_ms"]) >= DELAY_S * 1000, zero
    assert abs(float(ev["sysctl"]["epoch_s"]) - float(zero["epoch_s"]) - AT_S) < 0.05, (ev["sysctl"], zero)
    r = rep(run, "connection")
    z = r["timeline_zero"]
    assert z["asked"] == z["used"] == "connection" and z["after_spawn_s"] >= DELAY_S and not z["problem"], z
    assert z["epoch"] == pytest.approx(float(zero["epoch_s"]), abs=1e-6)
    assert not [w for w in r["warnings"] if w["code"] == "timeline-zero-fallback"], r["warnings"]
