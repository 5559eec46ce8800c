"""Path-manager actions during a run (issue 35), verified from the capture and the MIB counters:

    client:eth1 (path A) --\\            /-- server:eth1
                            r (router)
    client:eth2 (path B) --/            \\-- server:eth2

- upm: the client runs the userspace path manager (no endpoint, so the connection starts with
  its initial subflow alone); a ``upm_subflow_create`` at 2 s opens a subflow from client:eth2
  and a ``upm_subflow_destroy`` at 4 s closes it. Its token and, for the destroy, its local
  port are read from ``ss -tinM`` when each event runs. The capture (rep.json's subflows, from
  mptcplab/analysis) shows path B's subflow carrying data from after 2 s to about 4 s only.
- fullmesh: the kernel path manager; the server announces server:eth2, the client has a
  ``subflow`` endpoint on eth2: two joins at the start (eth2 -> server:eth1 from the endpoint,
  eth1 -> server:eth2 for the announced address). At 2 s ``endpoint_flags fullmesh`` on eth2:
  the kernel closes the endpoint's subflow and makes it again as a fullmesh one, a subflow to
  every address of the peer (pm_netlink.c mptcp_pm_nl_fullmesh): two more joins from eth2,
  to server:eth1 and to server:eth2. Counted in the capture (the data connection: 2 + 2) and
  in nstat, which counts iperf3's control connection too (MPTCP under mptcpize, the same
  endpoints, so the same joins): client MPJoinSynTx, server MPJoinSynRx/MPJoinAckRx 8 each.
  The userspace PM acts on one connection only (the flow's busiest, the data connection):
  its counters are 1.

- upm-announce: the server runs the userspace path manager; ``upm_announce`` of server:eth2
  (id 5) at 1.5 s, ``upm_remove`` of id 5 at 3.5 s. The client (kernel path manager, one
  ADD_ADDR accepted) joins the announced address and closes that subflow on the REMOVE_ADDR:
  in the capture a subflow to server:eth2 from after 1.5 s to about 3.5 s; in nstat the
  client's AddAddr and RmAddr 1 each (the data connection only).

One quick run of 6 s per scenario.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .labkit import assert_upm_subflow_window, run_quick, write_lab
from .labkit import ran_events as events
from .labkit import rep_record as rep

pytestmark = pytest.mark.netns

TOPO = {"nodes": {n: {"kind": "linux", "image": f"mptcplab/{'router' if n == 'r' else 'host'}:latest"}
                  for n in ("client", "r", "server")},
        "links": [{"endpoints": ["client:eth1", "r:eth1"]}, {"endpoints": ["client:eth2", "r:eth2"]},
                  {"endpoints": ["r:eth3", "server:eth1"]}, {"endpoints": ["r:eth4", "server:eth2"]}]}
CREATE, DESTROY, CHANGE, ANNOUNCE, REMOVE = 2.0, 4.0, 2.0, 1.5, 3.5


def limits(subflows: int, add_addr: int) -> dict[str, int]:
    return {"subflows": subflows, "add_addr_accepted": add_addr}


EXP: dict[str, Any] = {
    "paths": {"A": "client:eth1", "B": "client:eth2"},
    "nodes": {
        "client": {"role": "host", "mptcp": {"limits": limits(4, 1)}},
        "r": {"role": "router"},
        "server": {"role": "host", "mptcp": {"limits": limits(4, 0)}},
    },
    "links": {"client:eth1": {"rate": "20mbit"}, "client:eth2": {"rate": "20mbit"}},
    "traffic": {"flows": {"main": {"client": "client", "server": "server", "server_address": "server:eth1",
                                   "bind": "client:eth1", "mptcp": True, "duration": "6s", "cc": "cubic"}}},
    "capture": [{"point": "client:eth1"}, {"point": "client:eth2"}],
    "probes": {"nstat": True},
    "calibration": {"enabled": False},
    "quick": {"duration": "6s", "repetitions": 1},
    "scenarios": [
        {"name": "upm", "description": "userspace PM: a subflow from eth2 created at 2 s, destroyed at 4 s",
         "override": {
             "nodes": {"client": {"mptcp": {"path_manager": "userspace"}}},
             "traffic": {"events": [
                 {"at": CREATE, "action": "upm_subflow_create", "node": "client", "flow": "main",
                  "local": "client:eth2", "local_id": 2, "remote": "server:eth1"},
                 {"at": DESTROY, "action": "upm_subflow_destroy", "node": "client", "flow": "main",
                  "local": "client:eth2", "remote": "server:eth1"}]}}},
        {"name": "upm-announce",
         "description": "userspace PM server: announce server:eth2 at 1.5 s, remove it at 3.5 s",
         "override": {
             "nodes": {"server": {"mptcp": {"path_manager": "userspace"}}},
             "traffic": {"events": [
                 {"at": ANNOUNCE, "action": "upm_announce", "node": "server", "flow": "main",
                  "address": "server:eth2", "id": 5},
                 {"at": REMOVE, "action": "upm_remove", "node": "server", "flow": "main", "id": 5}]}}},
        {"name": "fullmesh", "description": "eth2's subflow endpoint turned fullmesh at 2 s",
         "override": {
             "nodes": {"client": {"mptcp": {"endpoints": [{"address": "client:eth2", "flags": ["subflow"],
                                                           "id": 2}]}},
                       "server": {"mptcp": {"endpoints": [{"address": "server:eth2", "flags": ["signal"],
                                                           "id": 5}]}}},
             "traffic": {"events": [{"at": CHANGE, "action": "endpoint_flags", "node": "client",
                                     "address": "client:eth2", "flags": "fullmesh"}]}}},
    ],
}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pmevents")
    lab = write_lab(root, "pmevents", TOPO, EXP)
    rc, _ = run_quick(lab, root / "results")
    run_dir = (root / "results" / "pmevents" / "latest").resolve()
    assert run_dir.is_dir(), f"no run directory (exit {rc})"
    return run_dir



def joins(r: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in r["subflows"] if s["initial"] is False]


#: addressing's default pool: link i is 10.0.i.0/24 (the first /24 kept free), hosts take .2
ADDR = {"client:eth1": "10.0.1.2", "client:eth2": "10.0.2.2", "server:eth1": "10.0.3.2", "server:eth2": "10.0.4.2"}


def test_userspace_pm_subflow_lives_from_2_to_4_s(run: Path) -> None:
    ev = events(run, "upm")
    created, destroyed = float(ev["upm_subflow_create"]["capture_s"]), float(ev["upm_subflow_destroy"]["capture_s"])
    # the token was read at run time and filled in (the dry run shows {token})
    assert "--token" in ev["upm_subflow_create"]["commands"] and "{token}" not in ev["upm_subflow_create"]["commands"]
    assert "{token}=" in ev["upm_subflow_create"]["result"] and "{lport}=" in ev["upm_subflow_destroy"]["result"]
    # its data starts after the create and ends by the destroy: an event's time is when its
    # lookup starts; the tool's own start (events.csv duration_ms: ~0.1 s here) and what
    # the 50 ms tbf queue still holds come after it; the initial subflow carries the
    # connection before and after
    done = destroyed + float(ev["upm_subflow_destroy"]["duration_ms"]) / 1000
    assert_upm_subflow_window(rep(run, "upm"), created, destroyed, done, min_bytes=100_000, first_within=0.6,
                              a_until=destroyed + 1.0)


def test_fullmesh_change_adds_a_join_to_every_server_address(run: Path) -> None:
    at = float(events(run, "fullmesh")["endpoint_flags"]["capture_s"])
    r = rep(run, "fullmesh")
    eth2 = ADDR["client:eth2"]
    servers = {ADDR["server:eth1"], ADDR["server:eth2"]}
    before = [s for s in joins(r) if s["first_data_t"] is not None and s["first_data_t"] < at]
    after = [s for s in joins(r) if s["first_data_t"] is not None and s["first_data_t"] > at]
    assert len(before) == 2, joins(r)
    assert {(s["src"], s["dst"]) for s in before} == {(eth2, ADDR["server:eth1"]),
                                                        (ADDR["client:eth1"], ADDR["server:eth2"])}
    assert len(after) == 2 and {s["src"] for s in after} == {eth2} and {s["dst"] for s in after} == servers, joins(r)
    assert all(s["established"] and (s["bytes"] or 0) > 0 for s in after), after
    # eth2's first subflow ended when the change closed it
    old = [s for s in before if s["src"] == eth2]
    assert old[0]["last_data_t"] < at + 0.5, old
    # the counters: both of iperf3's connections (data and control) took the same 4 joins
    mib = r["probes"]["nstat"]
    assert mib["client"].get("MPTcpExtMPJoinSynTx") == 2 * 4, mib["client"]
    assert mib["server"].get("MPTcpExtMPJoinSynRx") == mib["server"].get("MPTcpExtMPJoinAckRx") == 2 * 4, mib
    assert mib["server"].get("MPTcpExtAddAddrTx") == 2, mib["server"]


def test_userspace_pm_announce_and_remove(run: Path) -> None:
    ev = events(run, "upm-announce")
    announced, removed = float(ev["upm_announce"]["capture_s"]), float(ev["upm_remove"]["capture_s"])
    r = rep(run, "upm-announce")
    to_eth2 = [s for s in joins(r) if s["dst"] == ADDR["server:eth2"]]
    assert len(to_eth2) == 1 and to_eth2[0]["established"] and (to_eth2[0]["bytes"] or 0) > 0, r["subflows"]
    sub = to_eth2[0]
    done = removed + float(ev["upm_remove"]["duration_ms"]) / 1000
    assert announced < sub["first_data_t"] < announced + 0.6, (announced, sub)
    assert removed - 0.5 < sub["last_data_t"] < done + 0.3, (removed, done, sub)
    mib = r["probes"]["nstat"]
    assert mib["client"].get("MPTcpExtAddAddr") == 1 and mib["client"].get("MPTcpExtRmAddr") == 1, mib["client"]
    assert mib["server"].get("MPTcpExtMPJoinAckRx") == 1, mib["server"]
