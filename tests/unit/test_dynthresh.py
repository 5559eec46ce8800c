"""Algorithms 3 and 4 (controllers dynamic_threshold, dynamic_threshold_ext): every
branch of the pure decision logic (controllers/_dynthresh.py) on synthetic rates,
the controllers on real ``ss -tinM`` output (tests/data/ss/), their params, and the
runner writing a decision's numbers into events.csv's ``detail``."""

from __future__ import annotations

import csv
import re
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from mptcplab.controllers import View, available, controller_class
from mptcplab.controllers._dynthresh import DynamicThreshold, SubflowRate, Verdict
from mptcplab.controllers.base import Controller, Decision
from mptcplab.controllers.dynamic_threshold import DynamicThreshold as Alg3
from mptcplab.emulation.nfqueue import NfqueueEmulator
from mptcplab.lab.events import ControllerSpec, EndpointFlags
from mptcplab.lab.loader import load_lab
from mptcplab.lab.network import build_network
from mptcplab.timeline.controller import ControllerThread
from mptcplab.timeline.env import ActionEnv, Resolved
from mptcplab.timeline.record import COLUMNS, write_events
from mptcplab.timeline.scheduler import Outcome, Scheduler
from mptcplab.tools.ss import SubflowSample, busiest_connection, parse_ss

M = 1e6
DATA = Path(__file__).resolve().parents[1] / "data" / "ss"
BASE = Path(__file__).resolve().parents[1] / "data" / "bad-labs" / "_base"
GOOD, BAD = "10.0.1.1", "10.0.2.1"


def rates(good: float | None, bad: float | None, third: float | None = None) -> list[SubflowRate]:
    """The good path's subflow (initial) and the bad path's (join), rates in Mbit/s."""
    out = [SubflowRate(f"{GOOD}:5000", GOOD, None if good is None else good * M),
           SubflowRate(f"{BAD}:6000", BAD, None if bad is None else bad * M)]
    if third is not None:
        out.append(SubflowRate("10.0.3.1:7000", "10.0.3.1", third * M))
    return out


def numbers(detail: str) -> dict[str, str]:
    return dict(re.findall(r"(\S+?)=(\S+)", detail))


# ------------------------------------------------------------------ Algorithm 3
def test_demotes_the_weakest_when_the_sum_falls_below_the_best_single_path() -> None:
    a = DynamicThreshold()
    assert a.step(0.1, rates(40, 2)) == []  # 42 >= 40: the connection beats its best path
    out = a.step(0.2, rates(25, 2))  # 27 < 40 (the good path's recorded maximum)
    assert len(out) == 1
    v = out[0]
    assert (v.verb, v.address, v.subflow, v.flags) == ("demote", BAD, f"{BAD}:6000", "backup")
    assert v.total_bps == pytest.approx(27 * M) and v.threshold_bps == pytest.approx(40 * M)
    assert v.threshold_subflow == f"{GOOD}:5000"
    n = numbers(v.detail())
    assert n["decision"] == "demote" and n["address"] == BAD
    assert float(n["total_mbps"]) == pytest.approx(27) and float(n["threshold_mbps"]) == pytest.approx(40)
    assert float(n[f"m_mbps[{GOOD}:5000]"]) == pytest.approx(25) and float(n[f"m_mbps[{BAD}:6000]"]) == 2
    assert a.demoted == {BAD}


def test_no_demotion_while_the_sum_reaches_the_threshold() -> None:
    a = DynamicThreshold()
    for t, (g, b) in enumerate([(20, 20), (25, 18), (15, 15), (22, 21)]):
        assert a.step(t / 10, rates(g, b)) == [], (g, b)  # sum >= max recorded (25)
    assert a.maxima == {f"{GOOD}:5000": 25 * M, f"{BAD}:6000": 21 * M}


def test_the_strongest_current_subflow_is_never_the_bad_path() -> None:
    a = DynamicThreshold()
    a.step(0.1, rates(2, 40))  # the recorded best is now the *bad* address's subflow
    out = a.step(0.2, rates(3, 20))  # 23 < 40: the weakest now is the good address's
    assert [(v.verb, v.address) for v in out] == [("demote", GOOD)]
    # a single path below its own maximum has nothing to demote (the last one in use stays)
    b = DynamicThreshold()
    b.step(0.1, rates(40, None))
    assert b.step(0.2, rates(10, None)) == []


def test_algorithm_3_never_restores_and_demotes_once() -> None:
    a = DynamicThreshold()
    a.step(0.1, rates(40, 2))
    assert [v.verb for v in a.step(0.2, rates(20, 2))] == ["demote"]
    for k in range(3, 200):  # even when the bad path would now be worth it
        assert a.step(k / 10, rates(20, 50 if k > 100 else 1)) == []
    assert a.demoted == {BAD}


def test_unmeasured_subflows_take_no_part_and_warmup_only_delays_decisions() -> None:
    a = DynamicThreshold(warmup=1.0)
    assert a.step(0.1, rates(40, None)) == []
    assert a.step(0.5, rates(10, 1)) == []  # 11 < 40, but before the warm-up
    assert a.maxima[f"{GOOD}:5000"] == 40 * M  # recorded all the same
    assert [v.verb for v in a.step(1.0, rates(10, 1))] == ["demote"]
    assert DynamicThreshold().step(0.1, rates(None, None)) == []


def test_threshold_is_over_the_current_subflows() -> None:
    a = DynamicThreshold()
    a.step(0.1, [SubflowRate("10.0.9.9:1", "10.0.9.9", 90 * M), *rates(30, 10)])
    # the 90 Mbit/s subflow is gone: its maximum leaves with it (30 + 10 >= 30)
    assert a.step(0.2, rates(30, 10)) == []


def test_one_demotion_per_step_with_three_paths() -> None:
    a = DynamicThreshold()
    a.step(0.1, rates(60, 5, 3))
    out = a.step(0.2, rates(30, 5, 3))
    assert [(v.verb, v.address) for v in out] == [("demote", "10.0.3.1")]
    out = a.step(0.3, rates(30, 5, 3))  # the sum includes the demoted path's last m (38 < 60)
    assert [(v.verb, v.address) for v in out] == [("demote", BAD)]
    assert a.step(0.4, rates(30, 5, 3)) == [] and a.demoted == {BAD, "10.0.3.1"}


# ------------------------------------------------------------------ Algorithm 4
def ext() -> DynamicThreshold:
    a = DynamicThreshold(reprobe_every=1.0, reprobe_for=0.3)
    a.step(0.0, rates(40, 2))
    assert [v.verb for v in a.step(0.1, rates(20, 2))] == ["demote"]
    return a


def test_reprobe_every_t_for_w_and_restore_when_the_path_is_worth_it() -> None:
    a = ext()
    assert a.step(1.0, rates(20, 2)) == []  # 0.9 s after the demotion
    out = a.step(1.1, rates(20, 2))  # T = 1 s after it
    assert [(v.verb, v.address, v.flags) for v in out] == [("reprobe", BAD, "nobackup")]
    assert a.demoted == set()
    # during W the probed path is not judged, even when the condition holds
    assert a.step(1.2, rates(20, 1)) == [] and a.step(1.3, rates(20, 1)) == []
    out = a.step(1.4, rates(35, 8))  # W over: 43 >= 40
    assert [(v.verb, v.address, v.flags) for v in out] == [("restore", BAD, None)]
    assert float(numbers(out[0].detail())["total_mbps"]) == pytest.approx(43)
    assert a.state == {} and a.step(3.0, rates(35, 8)) == []  # restored: in use, no more probes


def test_reprobe_then_redemote_and_probe_again_t_later() -> None:
    a = ext()
    assert [v.verb for v in a.step(1.1, rates(20, 2))] == ["reprobe"]
    out = a.step(1.4, rates(20, 2))  # W over, 22 < 40 and the probed path is the weakest
    assert [(v.verb, v.address, v.flags) for v in out] == [("redemote", BAD, "backup")]
    assert a.demoted == {BAD}
    assert a.step(2.3, rates(20, 2)) == []
    assert [v.verb for v in a.step(2.4, rates(20, 2))] == ["reprobe"]  # T after the redemotion


def test_after_a_probe_the_good_path_can_be_the_bad_one() -> None:
    """The probed path restored because the *other* one is now the weakest: Algorithm 3's
    rule then demotes that one (the paper's condition, read as written)."""
    a = ext()
    a.step(1.1, rates(20, 2))
    out = a.step(1.4, rates(5, 20))
    assert [(v.verb, v.address) for v in out] == [("restore", BAD), ("demote", GOOD)]


def test_reprobe_needs_both_times() -> None:
    with pytest.raises(ValueError, match="go together"):
        DynamicThreshold(reprobe_every=1.0)


# ------------------------------------------------------------------ the controllers
def spec(name: str = "dynamic_threshold", **params: Any) -> ControllerSpec:
    return ControllerSpec(name=name, node="client", interval="100ms", params=params)


def two_subflows() -> list[SubflowSample]:
    return busiest_connection(parse_ss((DATA / "tinM-two-subflows.txt").read_text()))


def test_registered_names() -> None:
    names = available()
    assert {"dynamic_threshold", "dynamic_threshold_ext"} <= set(names) and "_dynthresh" not in names
    assert controller_class("dynamic_threshold_ext").Params.model_fields["reprobe_every"].default == "2s"


def test_controller_on_real_ss_output_demotes_the_joins_endpoint() -> None:
    c = controller_class("dynamic_threshold")(spec())
    data = two_subflows()  # 10.9.1.1: 108 x 1448 / 22.03 ms = 56.8 Mbit/s; 10.9.2.1: 15.4 Mbit/s
    assert c.step(View(0.1, "client", data, data)) == []
    worse = [replace(data[0], cwnd=54), data[1]]  # the first path's window halves: 28.4 + 15.4 < 56.8
    out = c.step(View(0.2, "client", worse, worse))
    assert len(out) == 1 and isinstance(out[0], Decision) and isinstance(out[0].action, EndpointFlags)
    act = out[0].action
    assert (act.node, act.address, act.flags) == ("client", "10.9.2.1", "backup")
    n = numbers(out[0].detail)
    assert n["decision"] == "demote" and float(n["threshold_mbps"]) == pytest.approx(56.79, abs=0.01)
    assert float(n["total_mbps"]) == pytest.approx(28.40 + 15.40, abs=0.02)


def test_controller_ignores_a_connection_that_moved_almost_nothing() -> None:
    """iperf3's control connection (cwnd 13 over a 0.088 ms RTT: 1.7 Gbit/s 'allowed')
    must not set the threshold."""
    s = parse_ss((DATA / "tinM-two-subflows.txt").read_text())
    control = [x for x in s if x.token == "8bb46bdd"]
    c = Alg3(spec())
    assert c.step(View(0.1, "client", control, s)) == []
    assert c.algo is None
    c2 = Alg3(spec(min_bytes=0))
    c2.step(View(0.1, "client", control, s))
    assert c2.algo is not None and max(c2.algo.maxima.values()) > 1e9


def test_controller_gives_back_the_endpoints_when_the_connection_changes() -> None:
    c = controller_class("dynamic_threshold")(spec())
    data = two_subflows()
    c.step(View(0.1, "client", data, data))
    c.step(View(0.2, "client", [replace(data[0], cwnd=54), data[1]], data))
    other = [replace(x, token="feedbeef") for x in data]
    out = c.step(View(0.3, "client", other, other))
    assert isinstance(out[0], Decision) and isinstance(out[0].action, EndpointFlags)
    assert out[0].action.flags == "nobackup" and out[0].action.address == "10.9.2.1"
    assert "decision=reset" in out[0].detail


def test_ext_controller_reprobe_and_restore_are_recorded() -> None:
    c = controller_class("dynamic_threshold_ext")(spec("dynamic_threshold_ext", reprobe_every="1s",
                                                       reprobe_for="200ms"))
    data = two_subflows()
    worse = [replace(data[0], cwnd=54), data[1]]
    c.step(View(0.1, "client", data, data))
    assert [d.action.flags for d in c.step(View(0.2, "client", worse, worse))  # type: ignore[union-attr]
            if isinstance(d, Decision)] == ["backup"]
    demoted = [worse[0], replace(worse[1], backup=True)]  # ss shows the flag the command set
    assert c.step(View(0.3, "client", demoted, demoted)) == []
    out = c.step(View(1.2, "client", demoted, demoted))
    assert len(out) == 1 and isinstance(out[0], Decision) and isinstance(out[0].action, EndpointFlags)
    assert out[0].action.flags == "nobackup" and "decision=reprobe" in out[0].detail
    out = c.step(View(1.4, "client", data, data))  # back to 72 Mbit/s: restored, nothing to run
    assert isinstance(out[0], Decision) and out[0].action is None
    assert out[0].target == "client 10.9.2.1" and "decision=restore" in out[0].detail


def test_a_subflow_in_its_handshake_takes_no_part() -> None:
    """Measured on 6.18: an endpoint change while the join was in its handshake was lost."""
    c = Alg3(spec())
    data = two_subflows()
    c.step(View(0.1, "client", data, data))
    joining = [replace(data[0], cwnd=54), replace(data[1], established=False)]
    assert c.step(View(0.2, "client", joining, joining)) == []  # alone, path 1 has nothing to demote
    assert c.algo is not None and c.algo.maxima  # its own numbers were still recorded


def test_a_flag_the_kernel_did_not_apply_is_set_again_a_few_times() -> None:
    c = Alg3(spec())
    data = two_subflows()
    worse = [replace(data[0], cwnd=54), data[1]]
    c.step(View(0.1, "client", data, data))
    assert len(c.step(View(0.2, "client", worse, worse))) == 1  # demote
    again = [c.step(View(0.3 + k / 10, "client", worse, worse)) for k in range(5)]  # b never shows
    assert [len(x) for x in again] == [1, 1, 1, 0, 0]
    first = again[0][0]
    assert isinstance(first, Decision) and isinstance(first.action, EndpointFlags)
    assert first.action.flags == "backup" and first.detail.startswith("decision=reassert address=10.9.2.1")
    shown = [worse[0], replace(worse[1], backup=True)]
    c2 = Alg3(spec())
    c2.step(View(0.1, "client", data, data))
    c2.step(View(0.2, "client", worse, worse))
    assert c2.step(View(0.3, "client", shown, shown)) == []  # applied: nothing to repeat


@pytest.mark.parametrize("name,params,field", [
    ("dynamic_threshold", {"warmup": "1 parsec"}, "warmup"),
    ("dynamic_threshold", {"min_bytes": "lots"}, "min_bytes"),
    ("dynamic_threshold", {"delta": "100ms"}, "delta"),
    ("dynamic_threshold_ext", {"reprobe_every": "1ms"}, "reprobe_every"),
    ("dynamic_threshold_ext", {"reprobe_for": "soon"}, "reprobe_for"),
])
def test_bad_params_are_one_line_errors(name: str, params: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as e:
        controller_class(name).Params.model_validate(params)
    err = e.value.errors()[0]
    assert ".".join(str(x) for x in err["loc"]) == field and "\n" not in err["msg"], err


# ------------------------------------------------------------------ runner -> events.csv
class _Scripted(Controller):
    def step(self, view: View) -> list[Any]:
        if getattr(self, "done", False):
            return []
        self.done = True
        flag = EndpointFlags(action="endpoint_flags", at=0, node="client", address="client:eth2", flags="backup")
        return [Decision("decision=demote total_mbps=1.0", flag), Decision("decision=restore", None, "client x")]


def test_runner_writes_the_decision_numbers_to_events_csv(tmp_path: Path) -> None:
    lab = load_lab(BASE)
    env = ActionEnv(build_network(lab.topology, lab.scenarios[0].body), NfqueueEmulator(binary=Path("/bin/true")))
    ran: list[Resolved] = []

    def execute(item: Resolved) -> Outcome:
        ran.append(item)
        return Outcome(0, "", " ; ".join(" ".join(c.argv) for c in item.cmds))

    class Sampler:
        node = "client"

        def sample(self) -> list[SubflowSample]:
            return []

    sched = Scheduler(execute, rt_prio=0)
    zero = threading.Event()
    t0 = time.time()
    ct = ControllerThread(_Scripted(ControllerSpec(name="scripted", node="client", interval="10ms")),
                          Sampler(), env, sched, zero, lambda: t0)  # type: ignore[arg-type]
    ct.start()
    zero.set()
    deadline = time.time() + 5
    while len(ran) < 2 and time.time() < deadline:
        time.sleep(0.01)
    ct.stop()
    records = sched.stop()
    write_events(tmp_path / "events.csv", records)
    rows = list(csv.DictReader((tmp_path / "events.csv").open()))
    assert list(rows[0]) == COLUMNS and "detail" in COLUMNS
    assert [(r["action"], r["detail"], r["source"]) for r in rows] == [
        ("endpoint_flags", "decision=demote total_mbps=1.0", "controller:scripted"),
        ("decision", "decision=restore", "controller:scripted")]
    assert "ip mptcp endpoint change 10.0.2.2 backup" in rows[0]["commands"] and rows[1]["commands"] == ""
    assert rows[1]["target"] == "client x" and rows[1]["rc"] == "0"


def test_verdict_without_a_subflow_names_the_address() -> None:
    v = Verdict("restore", 1.0, BAD, "-", (), 0.0, 0.0, "-")
    assert v.flags is None and "address=10.0.2.1" in v.detail()


def test_figures_label_a_decision_by_what_it_decided() -> None:
    from mptcplab.results.figures import event_label

    assert event_label({"action": "link_down", "source": "timeline", "detail": ""}) == "link_down"
    assert event_label({"action": "endpoint_flags", "source": "controller:dynamic_threshold_ext",
                        "detail": "decision=reprobe address=10.0.2.2"}) == "reprobe (dynamic_threshold_ext)"
    # an older events.csv (no detail column) or a controller without details: the action
    assert event_label({"action": "endpoint_flags", "source": "controller:backup_slowest",
                        "detail": float("nan")}) == "endpoint_flags (backup_slowest)"


def test_ss_flag_e_is_parsed_as_fully_established() -> None:
    s = parse_ss((DATA / "tinM-backup.txt").read_text())
    assert s and all(x.established for x in s)  # flags Mmec / Jjbec
    assert not parse_ss((DATA / "tinM-backup.txt").read_text().replace("flags:Jjbec", "flags:Jjbc"))[2].established


def test_trace_has_a_row_per_subflow_and_step_with_the_condition(tmp_path: Path) -> None:
    from mptcplab.timeline.record import add_capture_time, trace_file, write_trace

    c = Alg3(spec())
    data = two_subflows()
    worse = [replace(data[0], cwnd=54, t=101.0), replace(data[1], t=101.0)]
    c.step(View(0.1, "client", data, data))
    c.step(View(0.2, "client", worse, worse))
    rows = c.trace()
    assert len(rows) == 4 and [r["t"] for r in rows] == [0.1, 0.1, 0.2, 0.2]
    last = {r["address"]: r for r in rows[2:]}
    assert last["10.9.2.1"]["role"] == "demoted" and last["10.9.1.1"]["role"] == "in_use"
    assert last["10.9.1.1"]["max_mbps"] == pytest.approx(56.79, abs=0.01)
    assert last["10.9.1.1"]["threshold_mbps"] == pytest.approx(56.79, abs=0.01)
    assert last["10.9.1.1"]["total_mbps"] == pytest.approx(43.8, abs=0.05)
    path = tmp_path / trace_file(spec())
    assert path.name == "controller-dynamic_threshold-client.csv"
    write_trace(path, rows)
    add_capture_time(path, 100.0)
    back = list(csv.DictReader(path.open()))
    assert list(back[0])[-1] == "capture_s" and back[2]["capture_s"] == "1.000000"
    assert back[2]["subflow"] == rows[2]["subflow"]
    write_trace(tmp_path / "none.csv", [])
    assert not (tmp_path / "none.csv").exists()  # a controller without a trace writes nothing
