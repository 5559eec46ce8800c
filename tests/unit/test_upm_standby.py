"""Controller upm_standby (issue 35): its decisions on synthetic subflow samples (the
thresholds' hysteresis, the dwell and keep guards, the standby's own RTT left out, a new
connection), its params, the userspace-PM commands its actions resolve to, and the
loader's one-line errors for the flow, node and addresses its params name."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from mptcplab.controllers import View, available, controller_class
from mptcplab.controllers.base import Decision
from mptcplab.controllers.upm_standby import UpmStandby, watched
from mptcplab.emulation.nfqueue import NfqueueEmulator
from mptcplab.errors import LabInputError
from mptcplab.lab.events import ControllerSpec, UpmSubflowCreate, UpmSubflowDestroy
from mptcplab.lab.loader import load_lab
from mptcplab.lab.network import build_network
from mptcplab.timeline.actions import resolve
from mptcplab.timeline.env import ActionEnv
from mptcplab.timeline.upm import TOKEN
from mptcplab.tools.ss import SubflowSample

BASE = Path(__file__).resolve().parents[1] / "data" / "bad-labs" / "_base"
PARAMS: dict[str, Any] = {"flow": "main", "local": "client:eth2", "local_id": 2, "remote": "server:eth1",
                          "rtt_above": "40ms", "rtt_below": "20ms", "dwell": "200ms", "keep": "1s"}


def sample(rtt_ms: float | None, local_id: int = 0, token: str = "247961eb", established: bool = True,
           local: str = "10.0.1.2") -> SubflowSample:
    return SubflowSample(t=0.0, local=local, lport=40000 + local_id, peer="10.0.3.2", pport=5201, iface=None,
                         token=token, local_id=local_id, join=local_id != 0, backup=False, established=established,
                         cwnd=10, mss=1448, rtt_ms=rtt_ms, bytes_acked=10**6, bytes_sent=10**6, bytes_retrans=0,
                         delivery_rate_bps=None, send_queue=0)


def ctl(**params: Any) -> UpmStandby:
    c = controller_class("upm_standby")(ControllerSpec(name="upm_standby", node="client", interval="100ms",
                                                       params={**PARAMS, **params}))
    assert isinstance(c, UpmStandby)
    return c


def run(c: UpmStandby, steps: list[tuple[float, list[SubflowSample]]]) -> list[tuple[float, str]]:
    """Each step's actions as (t, action name)."""
    out: list[tuple[float, str]] = []
    for t, subs in steps:
        for a in c.step(View(t, "client", subs, subs)):
            assert isinstance(a, Decision)
            out.append((t, a.action.action if a.action is not None else "decision"))
    return out


def test_registered_like_the_other_controllers() -> None:
    assert "upm_standby" in available() and controller_class("upm_standby") is UpmStandby


def test_opens_after_hold_above_and_closes_after_hold_below_and_keep() -> None:
    c = ctl()
    slow = [(0.1 * k, [sample(80.0)]) for k in range(1, 6)]  # above 40 ms from 0.1 s
    got = run(c, slow)
    # 0.1 s the condition starts, 0.3 s it has held 200 ms
    assert got == [(pytest.approx(0.3), "upm_subflow_create")]
    assert c.open
    # the standby is up; its own RTT (5 ms) is not watched: only the other path's
    fast = [(0.5 + 0.1 * k, [sample(10.0), sample(5.0, local_id=2, local="10.0.2.2")]) for k in range(1, 20)]
    got = run(c, fast)
    # below 20 ms from 0.6 s, held 200 ms at 0.8 s, but kept 1 s from its opening at 0.3 s: 1.3 s
    assert got == [(pytest.approx(1.3), "upm_subflow_destroy")]
    assert not c.open


def test_hysteresis_between_the_thresholds_changes_nothing() -> None:
    c = ctl()
    assert run(c, [(0.1 * k, [sample(30.0)]) for k in range(1, 30)]) == []  # between 20 and 40: closed stays closed
    run(c, [(3.0 + 0.1 * k, [sample(80.0)]) for k in range(0, 4)])
    assert c.open
    # between the thresholds once open: stays open, however long
    assert run(c, [(4.0 + 0.1 * k, [sample(30.0)]) for k in range(0, 40)]) == []
    assert c.open


def test_a_short_excursion_does_not_act() -> None:
    c = ctl()
    steps = [(0.1, [sample(80.0)]), (0.2, [sample(80.0)]), (0.3, [sample(30.0)]), (0.4, [sample(80.0)]),
             (0.5, [sample(80.0)]), (0.6, [sample(80.0)])]
    # the dwell restarts at 0.4 s: 0.6 s has held 200 ms, not before
    assert run(c, steps) == [(pytest.approx(0.6), "upm_subflow_create")]


def test_the_smallest_rtt_of_the_other_paths_is_watched() -> None:
    w = watched([sample(80.0), sample(15.0, local_id=1, local="10.0.5.2"), sample(3.0, local_id=2),
                 sample(1.0, local_id=3, established=False), sample(None, local_id=4)], local_id=2)
    assert w.rtt_ms == 15.0 and w.subflow == "10.0.5.2:40001" and w.standby_seen
    w = watched([sample(80.0)], local_id=2)
    assert w.rtt_ms == 80.0 and not w.standby_seen
    assert watched([sample(None)], local_id=2).rtt_ms is None


def test_unknown_rtt_and_warmup_reset_the_hold() -> None:
    c = ctl(warmup="1s")
    assert run(c, [(0.1 * k, [sample(80.0)]) for k in range(1, 10)]) == []  # before the warm-up
    c = ctl()
    steps = [(0.1, [sample(80.0)]), (0.2, [sample(None)]), (0.3, [sample(80.0)]), (0.4, [sample(80.0)])]
    assert run(c, steps) == []  # the unknown sample at 0.2 s restarted the dwell at 0.3 s


def test_a_new_connection_starts_afresh() -> None:
    c = ctl()
    run(c, [(0.1 * k, [sample(80.0)]) for k in range(1, 5)])
    assert c.open
    got = c.step(View(1.0, "client", [sample(10.0, token="aaaa0001")], []))
    assert len(got) == 1 and isinstance(got[0], Decision) and got[0].action is None
    assert got[0].detail.startswith("decision=reset connection=247961eb->aaaa0001 open=True")
    assert not c.open


def test_the_decision_detail_has_the_numbers() -> None:
    c = ctl()
    out = [a for k in range(1, 5) for a in c.step(View(0.1 * k, "client", [sample(80.0)], []))]
    assert len(out) == 1 and isinstance(out[0], Decision)
    d = out[0]
    assert d.detail == ("decision=create rtt_ms=80 rtt_above_ms=40 rtt_below_ms=20 for_s=0.200 "
                        "subflow=10.0.1.2:40000")
    assert isinstance(d.action, UpmSubflowCreate)
    assert (d.action.node, d.action.flow, d.action.local, d.action.local_id, d.action.remote) == \
        ("client", "main", "client:eth2", 2, "server:eth1")
    row = c.trace()[-1]
    assert row["open"] is True and row["rtt_ms"] == 80.0 and row["standby_seen"] is False


@pytest.mark.parametrize("params,field", [
    ({"rtt_above": "10ms", "rtt_below": "20ms"}, ""),
    ({"dwell": "soon"}, "dwell"),
    ({"local_id": 0}, "local_id"),
    ({"local": "not an address"}, "local"),
    ({"flow": "Main!"}, "flow"),
    ({"delta": 1}, "delta"),
])
def test_bad_params_are_one_line_errors(params: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as e:
        controller_class("upm_standby").Params.model_validate({**PARAMS, **params})
    err = e.value.errors()[0]
    assert ".".join(str(x) for x in err["loc"]) == field and "\n" not in err["msg"], err


def lab(tmp_path: Path, params: dict[str, Any], pm: str | None = "userspace") -> Path:
    """The bad-lab suite's valid base with the client on the userspace PM and the controller."""
    d = tmp_path / "upmstandby"
    shutil.copytree(BASE, d)
    exp = yaml.safe_load((d / "experiment.yml").read_text())
    if pm is not None:
        exp["nodes"]["client"]["mptcp"]["path_manager"] = pm
    exp["controllers"] = [{"name": "upm_standby", "node": "client", "params": {**PARAMS, **params}}]
    (d / "experiment.yml").write_text(yaml.safe_dump(exp, sort_keys=False))
    return d


def test_its_actions_resolve_to_the_userspace_pm_commands(tmp_path: Path) -> None:
    loaded = load_lab(lab(tmp_path, {}))
    body = loaded.scenarios[0].body
    env = ActionEnv(build_network(loaded.topology, body), NfqueueEmulator(binary=Path("/bin/true")), body=body)
    create, destroy = UpmStandby.planned_actions(body.controllers[0])
    assert isinstance(create, UpmSubflowCreate) and isinstance(destroy, UpmSubflowDestroy)
    rc = resolve(env, create, source="controller:upm_standby", planned_s=1.0)
    argv = rc.cmds[0].argv
    assert argv[argv.index("subflow-create") + 1:] == ("--token", TOKEN, "--local", "10.0.2.2", "--local-id", "2",
                                                       "--remote", "10.0.4.2", "--remote-port", "5201")
    assert rc.lookup is not None and rc.source == "controller:upm_standby"
    rd = resolve(env, destroy, source="controller:upm_standby", planned_s=2.0)
    assert "subflow-destroy" in rd.cmds[0].argv and "{lport}" in rd.cmds[0].argv


@pytest.mark.parametrize("params,pm,field,problem", [
    ({"flow": "nope"}, "userspace", "controllers[0].params.flow", "no flow 'nope'"),
    ({}, None, "controllers[0].node", "does not select the userspace path manager"),
    ({"remote": "client:eth1"}, "userspace", "controllers[0].params.remote", "not an interface of server"),
    ({"local": "server:eth1"}, "userspace", "controllers[0].params.local", "not an interface of client"),
])
def test_the_loader_checks_what_its_params_name(tmp_path: Path, params: dict[str, Any], pm: str | None,
                                                field: str, problem: str) -> None:
    with pytest.raises(LabInputError) as e:
        load_lab(lab(tmp_path, params, pm))
    assert "\n" not in str(e.value)
    assert e.value.field == field and problem in e.value.problem, (e.value.field, e.value.problem)

