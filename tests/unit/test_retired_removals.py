"""Paths removed on purpose are retired, not missing (analysis/labspec.retired_paths): the
userspace path manager's subflow destroy (either end) and REMOVE_ADDR (upm_remove, id 0
included), and the server's endpoint_delete/flush of an address it announced or of its first
address. Cases of labs/selftests (mptcp_join.sh), whose subflows the script removes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mptcplab.analysis.labspec import retired_paths
from mptcplab.lab.loader import load_lab
from mptcplab.lab.model import Lab
from mptcplab.lab.network import build_network
from mptcplab.record.model import Event

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def lab() -> Lab:
    return load_lab(REPO / "labs" / "selftests")


def retired(lab: Lab, scenario: str, *events: Event) -> tuple[dict[str, float], dict[str, str]]:
    sc = next(s for s in lab.scenarios if s.name == scenario)
    return retired_paths(sc.body, build_network(lab.topology, sc.body), sc.body.traffic.flows["main"], events)


def ev(epoch: float, action: str, node: str, **kw: Any) -> Event:
    return Event.model_validate({"planned_s": 1.0, "actual_s": 1.0, "rc": 0, "epoch_s": epoch, "source": "timeline",
                                 "action": action, "node": node, "flow": "main", **kw})


def sf(epoch: float, action: str, node: str, local: str, remote: str, **kw: Any) -> Event:
    return ev(epoch, action, node, address=local, target=f"{node} flow main {local} -> {remote}", **kw)


def test_a_destroyed_subflow_retires_its_path_and_a_new_one_gives_it_back(lab: Lab) -> None:
    made = sf(100.0, "upm_subflow_create", "client", "client:eth3", "server:eth1", endpoint_id=20)
    gone = sf(101.0, "upm_subflow_destroy", "client", "client:eth3", "server:eth1")
    got, why = retired(lab, "userspace-pm-create-destroy-subflow", made, gone)
    assert got == {"C": 101.0} and "userspace PM" in why["C"] and "client" in why["C"]
    again = sf(102.0, "upm_subflow_create", "client", "client:eth3", "server:eth1", endpoint_id=20)
    assert retired(lab, "userspace-pm-create-destroy-subflow", made, gone, again)[0] == {}


def test_destroying_the_initial_subflow_retires_the_bound_path(lab: Lab) -> None:
    got, _ = retired(lab, "userspace-pm-remove-initial-subflow",
                     sf(100.0, "upm_subflow_create", "client", "client:eth3", "server:eth1", endpoint_id=20),
                     sf(101.0, "upm_subflow_destroy", "client", "client:eth1", "server:eth1"))
    assert got == {"A": 101.0}


def test_a_server_side_destroy_names_the_client_end(lab: Lab) -> None:
    got, _ = retired(lab, "userspace-pm-send-rm-addr-for-id-0",
                     sf(101.0, "upm_subflow_destroy", "server", "server:eth2", "client:eth2"))
    assert got == {"B": 101.0}


def test_remove_addr_id_0_retires_the_first_address_path_and_an_announced_id_its_own(lab: Lab) -> None:
    ann = ev(100.0, "upm_announce", "server", address="server:eth2", endpoint_id=10)
    got, why = retired(lab, "userspace-pm-send-rm-addr-for-id-0", ann, ev(101.0, "upm_remove", "server", endpoint_id=0))
    assert got == {"A": 101.0} and "address id 0" in why["A"]
    # id 10 was server:eth2's, on path B's link
    assert retired(lab, "userspace-pm-send-rm-addr-for-id-0", ann,
                   ev(101.0, "upm_remove", "server", endpoint_id=10))[0] == {"B": 101.0}
    # an id nobody announced names no address: nothing retired
    assert retired(lab, "userspace-pm-send-rm-addr-for-id-0", ann,
                   ev(101.0, "upm_remove", "server", endpoint_id=7))[0] == {}
    # announced again after its removal: in use to the end
    back = ev(102.0, "upm_announce", "server", address="server:eth2", endpoint_id=10)
    assert retired(lab, "userspace-pm-send-rm-addr-for-id-0", ann, ev(101.0, "upm_remove", "server", endpoint_id=10),
                   back)[0] == {}


def test_the_servers_endpoint_removals_retire_the_paths_to_the_address(lab: Lab) -> None:
    got, why = retired(lab, "remove-id-0-address",
                       ev(100.0, "endpoint_delete", "server", endpoint_id=0, address="server:eth1"))
    assert got == {"A": 100.0} and "server address removed" in why["A"]
    # the announced server:eth2 is reached over path B's link
    assert retired(lab, "remove-single-address", ev(100.0, "endpoint_flush", "server"))[0] == {"B": 100.0}
    # a client's event on the same address is not the server's removal
    assert retired(lab, "remove-single-address", ev(100.0, "endpoint_flush", "client"))[0] == {}
