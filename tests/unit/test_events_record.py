"""events.csv as one typed record (record.model.Event): what the timeline and the
controllers write, read back by results/read.read_events, and the files written before
the typed columns (2026-11-23 and earlier), whose typed fields are derived from the text."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter

from mptcplab.emulation.nfqueue import NfqueueEmulator
from mptcplab.lab.events import Event as LabEvent
from mptcplab.lab.loader import load_lab
from mptcplab.lab.network import build_network
from mptcplab.record.events import read_events
from mptcplab.record.model import EVENT_COLUMNS, EVENT_TYPED_COLUMNS, Event, ResultsFormatError
from mptcplab.timeline.actions import resolve
from mptcplab.timeline.env import ActionEnv, Resolved
from mptcplab.timeline.record import record, write_events

BASE = Path(__file__).resolve().parents[1] / "data" / "bad-labs" / "_base"
LAB_EVENT: TypeAdapter[Any] = TypeAdapter(LabEvent)

#: one of each action, as a lab's timeline (or a controller) names them
ACTIONS: list[dict[str, Any]] = [
    {"action": "link_down", "link": "client:eth2"},
    {"action": "link_up", "link": "client:eth2", "how": "drop", "direction": "one"},
    {"action": "link_change", "link": "client:eth1", "rate": "5mbit"},
    {"action": "endpoint_delete", "node": "client", "id": 2},
    {"action": "endpoint_add", "node": "client", "address": "client:eth2", "id": 2, "flags": ["subflow", "backup"]},
    {"action": "endpoint_add", "node": "client", "address": "client:eth2"},
    {"action": "endpoint_flags", "node": "client", "address": "client:eth2", "flags": "backup"},
    {"action": "endpoint_flags", "node": "client", "address": "client:eth2", "flags": "nobackup"},
    {"action": "sysctl", "node": "client", "key": "net.mptcp.enabled", "value": "1"},
    {"action": "flow_start", "flow": "bg"},
    {"action": "endpoint_flags", "node": "client", "address": "client:eth2", "flags": "fullmesh"},
    {"action": "endpoint_delete", "node": "client", "id": 0, "address": "client:eth1"},
    {"action": "endpoint_flush", "node": "client"},
]

#: events.csv as a run of 2026-11-23 wrote it (labs/asym s3-dt), capture_s added by the analysis
OLD_FILE = """\
planned_s,actual_s,action,target,commands,rc,duration_ms,result,source,epoch_s,detail,capture_s
0.9,0.900012,endpoint_flags,client 10.0.2.2,ip netns exec asym-client ip mptcp endpoint change 10.0.2.2 backup,0,\
4.1,,controller:dynamic_threshold,1700000000.9,decision=demote total_mbps=61.2,0.893
5.0,5.000004,link_down,client:eth2 (both),ip netns exec asym-client ip link set dev eth2 down ; \
ip netns exec asym-r2 ip link set dev eth1 down,0,7.5,,timeline,1700000005.0,,4.993
6.0,6.1,endpoint_delete,client id 2,ip netns exec asym-client ip mptcp endpoint delete id 2,2,3.0,\
Error: no such endpoint,timeline,1700000006.1,,6.093
7.0,7.0,endpoint_add,client client:eth2,ip netns exec asym-client ip mptcp endpoint add 10.0.2.2 dev eth2 id 4 \
subflow backup,0,2.0,,timeline,1700000007.0,,6.993
8.0,,sysctl,client net.ipv4.tcp_rmem,,,,not run: the traffic ended first,timeline,,,
1.0,1.0,decision,client x,,0,0.1,,controller:dynamic_threshold,1700000001.0,decision=restore,0.993
"""


@pytest.fixture(scope="module")
def env() -> ActionEnv:
    lab = load_lab(BASE)
    return ActionEnv(build_network(lab.topology, lab.scenarios[0].body), NfqueueEmulator(binary=Path("/bin/true")))


def ran(item: Resolved, t: float) -> Event:
    return record(item, actual_s=t, commands=" ; ".join(" ".join(c.argv) for c in item.cmds), rc=0,
                  duration_ms=1.0, epoch_s=1000.0 + t)


def written(env: ActionEnv, tmp_path: Path) -> tuple[list[Event], Path]:
    records = [ran(resolve(env, LAB_EVENT.validate_python({"at": i, **a})), float(i)) for i, a in enumerate(ACTIONS)]
    records.append(record(Resolved(20.0, "decision", "client x", source="controller:c", detail="decision=restore")))
    write_events(tmp_path / "events.csv", records)
    return records, tmp_path / "events.csv"


def test_the_writers_typed_columns_are_read_back(env: ActionEnv, tmp_path: Path) -> None:
    records, path = written(env, tmp_path)
    with path.open() as f:
        assert next(csv.reader(f)) == EVENT_COLUMNS
    assert read_events(path) == records
    by = {(e.action, e.planned_s): e for e in records}
    down = by["link_down", 0.0]
    assert (down.node, down.link, down.direction, down.address) == ("client", "client:eth2", "both", None)
    assert by["link_up", 1.0].direction == "one"
    assert (by["endpoint_delete", 3.0].node, by["endpoint_delete", 3.0].endpoint_id) == ("client", 2)
    add = by["endpoint_add", 4.0]
    assert (add.address, add.endpoint_id, add.flags) == ("client:eth2", 2, "subflow backup")
    assert by["endpoint_flags", 7.0].flags == "nobackup" and by["endpoint_flags", 6.0].done
    assert by["sysctl", 8.0].node == "client" and by["flow_start", 9.0].flow == "bg"
    assert by["endpoint_flags", 10.0].flags == "fullmesh"
    gone = by["endpoint_delete", 11.0]
    assert (gone.endpoint_id, gone.address) == (0, "client:eth1")
    assert by["endpoint_flush", 12.0].node == "client"
    not_run = by["decision", 20.0]
    assert not not_run.done and not_run.node is None and not_run.detail == "decision=restore"


def test_an_old_file_gets_the_same_typed_fields_from_its_text(env: ActionEnv, tmp_path: Path) -> None:
    # the same events written without the typed columns, as runs before them did
    records, path = written(env, tmp_path)
    # the actions that existed before the typed columns (delete by address and flush came after)
    then = [i for i, e in enumerate(records) if not (e.action == "endpoint_flush"
                                                     or (e.action == "endpoint_delete" and e.address))]
    records = [records[i] for i in then]
    rows = [r for i, r in enumerate(csv.DictReader(path.open())) if i in then]
    old = tmp_path / "old.csv"
    keep = [c for c in EVENT_COLUMNS if c not in EVENT_TYPED_COLUMNS]
    with old.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keep, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    assert read_events(old) == records


def test_an_old_file_from_a_run_on_disk(tmp_path: Path) -> None:
    path = tmp_path / "events.csv"
    path.write_text(OLD_FILE)
    demote, down, delete, add, sysctl, decision = read_events(path)
    assert (demote.node, demote.address, demote.flags, demote.done) == ("client", "10.0.2.2", "backup", True)
    assert demote.capture_s == 0.893 and demote.detail.startswith("decision=demote")
    assert (down.node, down.link, down.direction) == ("client", "client:eth2", "both")
    assert (delete.endpoint_id, delete.rc, delete.done) == (2, 2, False)
    assert (add.address, add.endpoint_id, add.flags) == ("client:eth2", 4, "subflow backup")
    assert sysctl.actual_s is None and sysctl.rc is None and sysctl.capture_s is None and not sysctl.done
    assert decision.node is None and decision.link is None


def test_no_file_no_events_and_a_broken_row_is_named(tmp_path: Path) -> None:
    assert read_events(tmp_path / "events.csv") == []
    bad = tmp_path / "events.csv"
    bad.write_text("planned_s,action,rc\n1.0,link_down,x\n")
    with pytest.raises(ResultsFormatError, match="row 1.*rc"):
        read_events(bad)


def test_load_events_frames_old_and_new_files_alike(env: ActionEnv, tmp_path: Path) -> None:
    from mptcplab.record.model import Repetition, Summary
    from mptcplab.results.read import load_events

    reps = []
    for name in ("new", "old", "none"):
        d = tmp_path / "scenarios" / name / "rep1"
        d.mkdir(parents=True)
        reps.append(Repetition.model_validate({"name": name, "rep": 1, "dir": f"scenarios/{name}/rep1"}))
    written(env, tmp_path / "scenarios" / "new" / "rep1")
    (tmp_path / "scenarios" / "old" / "rep1" / "events.csv").write_text(OLD_FILE)
    df = load_events(tmp_path, Summary(lab="x", run_id="t", scenarios=reps))
    assert list(df.columns) == ["scenario", "rep", *EVENT_COLUMNS, "capture_s"] and df.attrs["missing"] == []
    assert len(df[df["scenario"] == "new"]) == len(ACTIONS) + 1 and len(df[df["scenario"] == "old"]) == 6
    old = df[df["scenario"] == "old"].set_index("action")
    assert old.loc["link_down", "link"] == "client:eth2" and old.loc["link_down", "capture_s"] == 4.993
    assert old.loc["endpoint_flags", "flags"] == "backup"
