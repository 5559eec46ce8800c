"""Every `ip mptcp endpoint` operation as a timeline event (issue 35): flags changed to
fullmesh/nofullmesh as well as backup/nobackup, delete by id with its address (id 0, the
initial subflow's address, only so), flush; the commands the run executes, the lab errors
before anything runs, and the paths a deletion or a flush retires."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from mptcplab.analysis.labspec import retired_paths
from mptcplab.emulation.nfqueue import NfqueueEmulator
from mptcplab.lab.events import ACTIONS_OF_CONTROLLERS
from mptcplab.lab.events import Event as LabEvent
from mptcplab.lab.loader import load_lab
from mptcplab.lab.network import build_network
from mptcplab.record.model import Event
from mptcplab.timeline.actions import resolve, subject
from mptcplab.timeline.env import ActionEnv

REPO = Path(__file__).resolve().parents[2]
BASE = REPO / "tests" / "data" / "bad-labs" / "_base"
LAB_EVENT: TypeAdapter[Any] = TypeAdapter(LabEvent)


@pytest.fixture(scope="module")
def env() -> ActionEnv:
    lab = load_lab(BASE)
    return ActionEnv(build_network(lab.topology, lab.scenarios[0].body), NfqueueEmulator(binary=Path("/bin/true")))


def argv(env: ActionEnv, ev: dict[str, Any]) -> list[tuple[str, ...]]:
    return [c.argv for c in resolve(env, LAB_EVENT.validate_python({"at": 1, **ev})).cmds]


def test_each_operation_is_the_command_the_kernel_takes(env: ActionEnv) -> None:
    eth1 = str(env.net.address("client:eth1"))
    eth2 = str(env.net.address("client:eth2"))
    assert argv(env, {"action": "endpoint_flags", "node": "client", "address": "client:eth2", "flags": "fullmesh"}) \
        == [("ip", "mptcp", "endpoint", "change", eth2, "fullmesh")]
    assert argv(env, {"action": "endpoint_flags", "node": "client", "address": "client:eth2",
                      "flags": "nofullmesh"}) == [("ip", "mptcp", "endpoint", "change", eth2, "nofullmesh")]
    assert argv(env, {"action": "endpoint_delete", "node": "client", "id": 2}) \
        == [("ip", "mptcp", "endpoint", "delete", "id", "2")]
    assert argv(env, {"action": "endpoint_delete", "node": "client", "id": 0, "address": "client:eth1"}) \
        == [("ip", "mptcp", "endpoint", "delete", "id", "0", eth1)]
    assert argv(env, {"action": "endpoint_flush", "node": "client"}) == [("ip", "mptcp", "endpoint", "flush")]
    assert "endpoint_flush" in ACTIONS_OF_CONTROLLERS


def test_id_0_needs_its_address_and_flags_are_the_kernels() -> None:
    with pytest.raises(ValidationError, match="id 0"):
        LAB_EVENT.validate_python({"at": 1, "action": "endpoint_delete", "node": "client", "id": 0})
    with pytest.raises(ValidationError):
        LAB_EVENT.validate_python({"at": 1, "action": "endpoint_flags", "node": "client", "address": "client:eth2",
                                   "flags": "signal"})  # not a flag `endpoint change` takes


def test_the_typed_columns_name_what_was_deleted(env: ActionEnv) -> None:
    ev = LAB_EVENT.validate_python({"at": 1, "action": "endpoint_delete", "node": "client", "id": 0,
                                    "address": "client:eth1"})
    assert subject(ev) == {"node": "client", "endpoint_id": 0, "address": "client:eth1"}
    assert subject(LAB_EVENT.validate_python({"at": 1, "action": "endpoint_flush", "node": "client"})) \
        == {"node": "client"}


def _done(epoch: float, **kw: Any) -> Event:
    return Event.model_validate({"planned_s": 1.0, "actual_s": 1.0, "target": "", "rc": 0, "epoch_s": epoch,
                                 "source": "timeline", **kw})


def test_a_delete_by_address_and_a_flush_retire_the_paths() -> None:
    lab = load_lab(REPO / "labs" / "asym")
    sc = next(s for s in lab.scenarios if s.name == "s3-epdel")
    body, net = sc.body, build_network(lab.topology, sc.body)
    flow = body.traffic.flows["main"]
    got, why = retired_paths(body, net, flow, [_done(100.0, action="endpoint_delete", node="client",
                                                     endpoint_id=9, address="client:eth2")])
    assert got == {"link02": 100.0} and "endpoint deleted" in why["link02"]
    got, why = retired_paths(body, net, flow, [_done(50.0, action="endpoint_flush", node="client")])
    assert set(got) == {"link01", "link02"} and all("flushed" in w for w in why.values())
