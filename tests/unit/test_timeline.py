"""The timeline without a network: event schema, the commands each action becomes,
time order, the scheduler's ordering and records, events.csv."""

from __future__ import annotations

import csv
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from eventkit import BASE, ev
from pydantic import ValidationError

from mptcplab.emulation.nfqueue import NfqueueEmulator
from mptcplab.emulation.tc import NetemEmulator
from mptcplab.errors import LabInputError
from mptcplab.lab.events import FlowStart, LinkChange, LinkDown
from mptcplab.lab.loader import load_lab
from mptcplab.lab.network import build_network
from mptcplab.record.model import Event as Recorded
from mptcplab.timeline.actions import check_timelines, resolve, resolve_timeline
from mptcplab.timeline.env import ActionEnv, Resolved
from mptcplab.timeline.record import add_capture_time, write_events
from mptcplab.timeline.scheduler import Outcome, Scheduler


@pytest.fixture(scope="module")
def lab() -> Any:
    return load_lab(BASE)


def env(lab: Any, emulator: Any = None) -> ActionEnv:
    sc = lab.scenarios[0]
    return ActionEnv(build_network(lab.topology, sc.body), emulator or NfqueueEmulator(binary=Path("/bin/true")))


def argvs(r: Resolved) -> list[tuple[str | None, str]]:
    return [(c.node, " ".join(c.argv)) for c in r.cmds]


# ------------------------------------------------------------------ schema
def test_each_action_has_only_its_fields() -> None:
    assert isinstance(ev(action="link_down", link="client:eth2"), LinkDown)
    assert isinstance(ev(action="flow_start", flow="bg"), FlowStart)
    with pytest.raises(ValidationError, match="rate"):
        ev(action="link_down", link="client:eth2", rate="1mbit")
    with pytest.raises(ValidationError, match="flow"):
        ev(action="link_down", link="client:eth2", flow="bg")
    with pytest.raises(ValidationError, match="at least one"):
        ev(action="link_change", link="client:eth2")
    with pytest.raises(ValidationError, match="how: drop"):
        ev(action="link_up", link="client:eth2", direction="one")
    with pytest.raises(ValidationError, match="udp_flood_start"):
        ev(action="udp_flood_start")
    with pytest.raises(ValidationError, match="link_up.at"):
        ev(action="link_up", link="client:eth2", at="-2s")
    assert ev(action="link_down", link="client:eth2", at="1500ms").at_s == 1.5


# ------------------------------------------------------------------ commands
def test_link_down_ip_link_takes_both_ends_and_up_restores_the_routes(lab: Any) -> None:
    e = env(lab)
    down = argvs(resolve(e, ev(action="link_down", link="client:eth2")))
    assert down == [("client", "ip link set dev eth2 down"), ("rb", "ip link set dev eth1 down")]
    up = argvs(resolve(e, ev(action="link_up", link="client:eth2")))
    assert up[:2] == [("client", "ip link set dev eth2 up"), ("rb", "ip link set dev eth1 up")]
    routes = [a for n, a in up[2:]]
    # the client's per-source table of path B (its default route) comes back
    assert any(a.startswith("ip route replace default via 10.0.2.1 dev eth2 table ") for a in routes), routes
    assert all(" dev eth2" in a or " dev eth1" in a for a in routes)


def test_link_down_drop_one_direction_filters_only_that_egress(lab: Any) -> None:
    e = env(lab)
    down = argvs(resolve(e, ev(action="link_down", link="rb:eth1", how="drop", direction="one")))
    assert {n for n, _ in down} == {"rb"}
    assert down[-1][1] == 'nft add rule inet mptcplab_ev down_eth1 oifname "eth1" counter drop'
    both = argvs(resolve(e, ev(action="link_down", link="rb:eth1", how="drop")))
    assert {n for n, _ in both} == {"rb", "client"}
    up = argvs(resolve(e, ev(action="link_up", link="rb:eth1", how="drop", direction="one")))
    assert up == [("rb", "nft flush chain inet mptcplab_ev down_eth1"),
                  ("rb", "nft delete chain inet mptcplab_ev down_eth1")]


def test_link_change_starts_from_the_current_shape(lab: Any) -> None:
    e = env(lab)
    first = argvs(resolve(e, ev(action="link_change", link="client:eth1", rate="20mbit", direction="one")))
    assert first == [("client", "tc qdisc replace dev eth1 root handle 1: tbf rate 20mbit burst 18028 limit 125000")]
    # the queue of 80 ms is kept in time and rescaled to the new rate; the second change
    # of client:eth2 starts from the first
    resolve(e, ev(action="link_change", link="client:eth2", rate="10mbit", direction="one"))
    again = argvs(resolve(e, ev(action="link_change", link="client:eth2", loss="1%", direction="one")))
    assert [a for _, a in again] == [
        "iptables -w -t raw -N mptcplab-rx-eth1", "iptables -w -t raw -A mptcplab-rx-eth1 -m statistic --mode random "
        "--probability 0.01 -j DROP", "iptables -w -t raw -A PREROUTING -i eth1 -j mptcplab-rx-eth1",
        "ip6tables -w -t raw -N mptcplab-rx-eth1", "ip6tables -w -t raw -A mptcplab-rx-eth1 -m statistic --mode random "
        "--probability 0.01 -j DROP", "ip6tables -w -t raw -A PREROUTING -i eth1 -j mptcplab-rx-eth1"]
    assert e.shapes[("client:eth2", "rb:eth1")].rate_bps == 10_000_000


def test_loss_change_on_a_delayed_link_replaces_the_first_rule(lab: Any) -> None:
    e = env(lab)
    r = argvs(resolve(e, ev(action="link_change", link="rb:eth2", loss="2%", direction="one")))
    # rb:eth2 has 10 ms of delay: its chain exists, without a loss rule: one is inserted first
    assert [a for _, a in r][0] == ("iptables -w -t raw -I mptcplab-rx-eth3 1 -m statistic --mode random "
                                    "--probability 0.02 -j DROP")
    r = argvs(resolve(e, ev(action="link_change", link="rb:eth2", loss="3%", direction="one")))
    assert [a for _, a in r][0].startswith("iptables -w -t raw -R mptcplab-rx-eth3 1 ")
    r = argvs(resolve(e, ev(action="link_change", link="rb:eth2", loss=0, direction="one")))
    assert [a for _, a in r][0] == "iptables -w -t raw -D mptcplab-rx-eth3 1"


def test_netem_emulator_changes_delay_in_place(lab: Any) -> None:
    e = env(lab, NetemEmulator())
    r = argvs(resolve(e, ev(action="link_change", link="rb:eth2", delay="50ms", direction="one")))
    assert r[0][0] == "rb" and r[0][1].startswith("tc qdisc replace dev eth2 root handle 1: netem ")
    assert "delay 50000us" in r[0][1]


def test_nfqueue_delay_change_goes_to_the_running_delay_line(lab: Any, tmp_path: Path) -> None:
    emu = NfqueueEmulator(binary=Path("/opt/dl/mptcplab-delayline"))
    e = env(lab, emu)
    link = e.net.link_of("rb:eth2")
    toward_ra = next(d for d in link.directions() if str(d.src) == "rb:eth2")
    _, daemons = emu.link_cmds(toward_ra, 3, tmp_path)  # the plan records the delay line's control file
    ctl = emu.controls[("rb:eth2", "ra:eth3")]
    assert daemons and str(ctl) in daemons[0].argv
    r = argvs(resolve(e, ev(action="link_change", link="rb:eth2", delay="50ms", direction="one")))
    assert r == [("ra", f"/opt/dl/mptcplab-delayline-ctl {ctl} 50000 0")]


def test_a_change_the_emulator_cannot_make_is_a_lab_error_before_the_run(lab: Any) -> None:
    body = lab.scenarios[0].body
    events = [ev(action="link_change", link="client:eth1", delay="50ms")]  # no delay line there
    sc = type(lab.scenarios[0])(lab.scenarios[0].name, "", body.model_copy(
        update={"traffic": body.traffic.model_copy(update={"events": events})}), {})
    with pytest.raises(LabInputError, match=r"traffic.events\[0\].*has one from the start"):
        check_timelines(lab.topology, [sc], NfqueueEmulator(binary=Path("/bin/true")))
    check_timelines(lab.topology, [sc], NetemEmulator())


def test_endpoint_sysctl_and_flow_actions(lab: Any) -> None:
    e = env(lab)
    assert argvs(resolve(e, ev(action="endpoint_flags", node="client", address="client:eth2", flags="backup"))) == [
        ("client", "ip mptcp endpoint change 10.0.2.2 backup")]
    assert argvs(resolve(e, ev(action="endpoint_add", node="client", address="client:eth2", id=7,
                               flags=["subflow", "backup"]))) == [
        ("client", "ip mptcp endpoint add 10.0.2.2 dev eth2 id 7 subflow backup")]
    assert argvs(resolve(e, ev(action="endpoint_delete", node="client", id=7))) == [
        ("client", "ip mptcp endpoint delete id 7")]
    assert argvs(resolve(e, ev(action="sysctl", node="client", key="net.ipv4.tcp_mtu_probing", value=1))) == [
        ("client", "sysctl -q -w net.ipv4.tcp_mtu_probing=1")]
    flow = resolve(e, ev(action="flow_start", flow="bg"))
    assert flow.cmds == () and flow.call is not None
    with pytest.raises(RuntimeError, match="no traffic"):
        flow.call()  # no FlowControl: nothing is running
    calls: list[tuple[str, str]] = []

    class Fc:
        def start(self, name: str) -> None:
            calls.append(("start", name))

        def stop(self, name: str) -> None:
            calls.append(("stop", name))

    fc = Fc()
    e.flow_control = lambda: fc
    resolve(e, ev(action="flow_stop", flow="bg")).call()  # type: ignore[misc]
    assert calls == [("stop", "bg")]


def test_timeline_runs_in_time_order_ties_in_file_order(lab: Any) -> None:
    events = [ev(action="sysctl", node="client", key="net.a", value=1, at="2s"),
              ev(action="sysctl", node="client", key="net.b", value=1, at="1s"),
              ev(action="sysctl", node="client", key="net.c", value=1, at="2s")]
    order = [r.target for r in resolve_timeline(env(lab), events)]
    assert order == ["client net.b", "client net.a", "client net.c"]


# ------------------------------------------------------------------ scheduler
def test_scheduler_runs_in_order_at_its_times_and_records_what_did_not_run() -> None:
    ran: list[tuple[str, float]] = []

    def execute(item: Resolved) -> Outcome:
        ran.append((item.target, time.time()))
        return Outcome(0 if item.target != "bad" else 2, "boom" if item.target == "bad" else "", item.target)

    s = Scheduler(execute)
    items = [Resolved(0.10, "sysctl", "b"), Resolved(0.05, "sysctl", "a"), Resolved(0.15, "sysctl", "bad"),
             Resolved(30.0, "sysctl", "late")]
    zero = threading.Event()
    s.start(items, zero, lambda: t0)
    time.sleep(0.05)
    assert ran == []  # nothing before the zero
    t0 = time.time()
    zero.set()
    time.sleep(0.4)
    records = s.stop()
    assert [t for t, _ in ran] == ["a", "b", "bad"]
    for (_, at), planned in zip(ran, (0.05, 0.10, 0.15), strict=True):
        assert at >= t0 + planned  # never early
    by = {r.target: r for r in records}
    assert by["bad"].rc == 2 and by["bad"].result == "boom"
    assert by["late"].actual_s is None and "not run" in by["late"].result
    assert by["a"].actual_s is not None and by["a"].epoch_s is not None


def test_events_csv_gets_the_capture_axis(tmp_path: Path) -> None:
    path = tmp_path / "events.csv"
    write_events(path, [Recorded(planned_s=2.0, actual_s=2.001, action="link_down", target="x", commands="cmd",
                                 rc=0, duration_ms=3.0, source="timeline", epoch_s=1000.5),
                        Recorded(planned_s=9.0, action="link_up", target="x", result="not run")])
    add_capture_time(path, 999.0)
    rows = list(csv.DictReader(path.open()))
    assert [r["capture_s"] for r in rows] == ["1.500000", ""]
    assert rows[0]["source"] == "timeline" and rows[0]["planned_s"] == "2.0"


def test_link_change_event_model() -> None:
    e = ev(action="link_change", link="client:eth1", rate="5mbit", queue="20ms")
    assert isinstance(e, LinkChange) and e.direction == "both"
