"""Campaigns over a pool of hosts (issue 36): one item per host at a time, every host at once,
a lost host's item measured again elsewhere (its attempt kept apart, never merged), a host of
another class refused, Ctrl-C stopping every host's item, and the merge the same as one host's.

The hosts are stand-ins: ansible-playbook is replaced by a small Python program that plays
one item (sleeps, then writes a complete run into the item's results root, or plays an
unreachable host), so these tests check the scheduling, not Ansible (the appliance suite
runs the playbook itself)."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from mptcplab.campaign import executor, pool
from mptcplab.campaign.merge import merge
from mptcplab.campaign.planner import WorkItem, plan
from mptcplab.campaign.schema import load_campaign
from mptcplab.campaign.targets import Ansible
from mptcplab.cli import main
from mptcplab.errors import LabInputError
from mptcplab.lab.loader import load_lab
from mptcplab.record import store
from mptcplab.record.model import MptcpVerdict, Repetition, Subflow
from mptcplab.results.summary import build_summary_model

REPO = Path(__file__).resolve().parents[2]
MTU = REPO / "labs" / "mtu"
HOSTS = ("h1", "h2", "h3")


def _campaign(tmp: Path, rounds: int, target: str) -> tuple[Path, list[WorkItem]]:
    (tmp / "hosts.ini").write_text("".join(f"{h} ansible_connection=ssh\n" for h in HOSTS))
    f = tmp / "c.yml"
    f.write_text(f"""name: pl
labs:
  - lab: {MTU}
    scenarios: [tcp-b]
targets:
{target}
inventory: hosts.ini
repetitions: {rounds}
shuffle: false
""")
    c, base = load_campaign(f)
    items = plan(c, base, str(f))
    executor.write_state(tmp / "out", c, f, 1, False, items, (tmp / "hosts.ini").resolve())
    return f, items


POOL = "  - {name: box, kind: ansible, pool: [h1, h2, h3]}"


def _templates(tmp: Path, kernel: str = "6.18.0") -> Path:
    """summary.json and manifest.json of one complete round of tcp-b (the fake copies them)."""
    d = tmp / f"tpl-{kernel}"
    d.mkdir(exist_ok=True)
    rep = Repetition(name="tcp-b", rep=1, goodput_mbps=90.0, calibration_ok=True, mptcp=MptcpVerdict(requested=False),
                     subflows=[Subflow(path="B", share=1.0, median_seg=1448, max_seg=1448, established=True,
                                       icmp_frag_needed=1, icmp_mtus=[1500])])
    s = build_summary_model("mtu", "RUNID", kernel, True, False, [rep], load_lab(MTU).published, [],
                            {"emulated": False}, [], repetitions_per_scenario=1)
    store.write_json(d / "summary.json", s.to_json())
    store.write_json(d / "manifest.json", {"lab": "mtu", "run_id": "RUNID", "complete": True, "kernel": kernel,
                                           "hostname": "HOST", "cpu_count": 2})
    return d


#: the stand-in for ansible-playbook: argv = out-file template seconds behaviour host results-root
FAKE = r"""
import json, os, sys, time
log, tpl, secs, how, host, root = sys.argv[1:7]
rid = "20261128T%06dZ-%s" % (int(time.time() * 1e6) % 1000000, host)
with open(log, "a") as f:
    f.write(json.dumps({"host": host, "root": root, "start": time.time(), "pid": os.getpid()}) + "\n")
time.sleep(float(secs))
if how == "unreachable":
    print("fatal: [%s]: UNREACHABLE! => {\"msg\": \"container gone\"}" % host)
    print("%s : ok=3 changed=1 unreachable=1 failed=0 skipped=0" % host)
    sys.exit(4)
d = os.path.join(root, "mtu", rid)
os.makedirs(d)
for name in ("summary.json", "manifest.json"):
    text = open(os.path.join(tpl, name)).read().replace("RUNID", rid).replace("HOST", host)
    open(os.path.join(d, name), "w").write(text)
if how == "late":  # the result came home, then the host went away during the clean-up
    print("fatal: [%s]: FAILED! => {\"msg\": \"mptcplab: host lost while the item ran: %s\"}" % (host, host))
    print("%s : ok=7 changed=3 unreachable=0 failed=1 skipped=0" % host)
    sys.exit(2)
print("%s : ok=9 changed=3 unreachable=0 failed=0 skipped=0" % host)
with open(log, "a") as f:
    f.write(json.dumps({"host": host, "root": root, "end": time.time()}) + "\n")
"""


def _fake_hosts(monkeypatch: pytest.MonkeyPatch, tmp: Path, secs: float = 0.6,
                behaviour: dict[str, list[str]] | None = None, kernels: dict[str, str] | None = None) -> Path:
    """Ansible's argv becomes the stand-in; ``behaviour``: per host, what its successive
    items do ("ok" or "unreachable"; "ok" when the list runs out); ``kernels``: per host."""
    prog = tmp / "fake_item.py"
    prog.write_text(FAKE)
    events = tmp / "events.jsonl"
    plays = {h: list(v) for h, v in (behaviour or {}).items()}
    lock = threading.Lock()

    def argv(self: Ansible, item: WorkItem, item_dir: Path) -> list[str]:
        with lock:
            how = plays.get(item.host, []).pop(0) if plays.get(item.host) else "ok"
        tpl = _templates(tmp, (kernels or {}).get(item.host, "6.18.0"))
        return [sys.executable, str(prog), str(events), str(tpl), str(secs), how, item.host,
                str(item_dir / "results")]

    def stop_argv(self: Ansible, item: WorkItem, item_dir: Path) -> list[str]:
        # the stopped item's clean-up (ansible/campaign-stop.yml): recorded, per host
        line = json.dumps({"clean": item.host, "item": item.id})
        return [sys.executable, "-c", f"open({str(events)!r}, 'a').write({line!r} + '\\n')"]

    monkeypatch.setattr(Ansible, "argv", argv)
    monkeypatch.setattr(Ansible, "stop_argv", stop_argv)
    return events


def _intervals(events: Path) -> list[dict[str, Any]]:
    """Each finished play: host, results root, start and end."""
    rows = [json.loads(x) for x in events.read_text().splitlines()]
    starts = {(r["host"], r["root"]): r["start"] for r in rows if "start" in r}
    return [{"host": r["host"], "root": r["root"], "start": starts[(r["host"], r["root"])], "end": r["end"]}
            for r in rows if "end" in r]


def _most_at_once(iv: list[dict[str, Any]]) -> int:
    points = sorted([(x["start"], 1) for x in iv] + [(x["end"], -1) for x in iv])
    now = best = 0
    for _, d in points:
        now += d
        best = max(best, now)
    return best


def test_nine_items_run_three_at_a_time_one_per_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, items = _campaign(tmp_path, 9, POOL)
    events = _fake_hosts(monkeypatch, tmp_path)
    lines: list[str] = []
    outcomes = pool.execute_pool(tmp_path / "out", items, (tmp_path / "hosts.ini").resolve(), log=lines.append)
    assert [o.status for o in outcomes].count("done") == 9
    iv = _intervals(events)
    assert len(iv) == 9 and _most_at_once(iv) == 3, "three hosts, three items at once"
    for h in HOSTS:
        mine = sorted((x for x in iv if x["host"] == h), key=lambda x: x["start"])
        assert mine, f"{h} ran nothing"
        assert all(a["end"] <= b["start"] for a, b in zip(mine, mine[1:], strict=False)), f"{h} ran two items at once"
    # each item records the host that measured it, and the merge lists it per run
    hosts = {json.loads((executor.item_dir(tmp_path / "out", i) / "item.json").read_text())["host"] for i in items}
    assert hosts == set(HOSTS)
    (col,) = merge(tmp_path / "out", write=False)
    assert col.summary.valid and col.summary.repetitions == 9
    assert {r["hostname"] for r in col.fingerprint["runs"]} == set(HOSTS)


def test_a_lost_hosts_item_completes_on_another_and_is_merged_once(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    _, items = _campaign(tmp_path, 6, POOL)
    events = _fake_hosts(monkeypatch, tmp_path, behaviour={"h2": ["unreachable"]})
    lines: list[str] = []
    outcomes = pool.execute_pool(tmp_path / "out", items, (tmp_path / "hosts.ini").resolve(), log=lines.append)
    assert [o.status for o in outcomes].count("done") == 6
    iv = _intervals(events)
    assert not any(x["host"] == "h2" for x in iv), "h2 finished nothing: it was lost at its first item"
    lost = [i for i in items if (executor.item_dir(tmp_path / "out", i) / "attempts").is_dir()]
    assert len(lost) == 1
    rec = json.loads((executor.item_dir(tmp_path / "out", lost[0]) / "item.json").read_text())
    assert rec["attempts"][0]["host"] == "h2" and "unreachable" in rec["attempts"][0]["lost"]
    assert rec["host"] in ("h1", "h3") and rec["exit"] == 0
    assert any("[h2] lost (unreachable" in x and "goes to another host" in x for x in lines)
    (col,) = merge(tmp_path / "out", write=False)
    assert col.summary.repetitions == 6 and len(col.fingerprint["runs"]) == 6


def test_a_host_lost_after_its_result_came_home_keeps_the_result(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The host dies during the playbook's clean-up, after the complete result was fetched:
    the measurement stands (not measured again), the host takes no more items."""
    _, items = _campaign(tmp_path, 6, POOL)
    events = _fake_hosts(monkeypatch, tmp_path, behaviour={"h2": ["late"]})
    lines: list[str] = []
    outcomes = pool.execute_pool(tmp_path / "out", items, (tmp_path / "hosts.ini").resolve(), log=lines.append)
    assert [o.status for o in outcomes].count("done") == 6
    starts = [json.loads(x) for x in events.read_text().splitlines() if '"start"' in x]
    assert sum(1 for x in starts if x["host"] == "h2") == 1, "h2 ran one item, then no more"
    assert not any((executor.item_dir(tmp_path / "out", i) / "attempts").exists() for i in items)
    assert sum(1 for i in items if json.loads((executor.item_dir(tmp_path / "out", i) / "item.json")
                                              .read_text())["host"] == "h2") == 1
    assert any("[h2] lost (unreachable (lost while the item ran)" in x and "its result stands" in x for x in lines)
    (col,) = merge(tmp_path / "out", write=False)
    assert len(col.fingerprint["runs"]) == 6


def test_the_merge_equals_the_sequential_campaigns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    _, items_a = _campaign(a, 4, POOL)
    _, items_b = _campaign(b, 4, "  - {name: box, kind: ansible, pool: [h1]}")  # one host: in order
    _fake_hosts(monkeypatch, tmp_path, secs=0.2)
    pool.execute_pool(a / "out", items_a, (a / "hosts.ini").resolve(), log=lambda _: None)
    executor.execute(b / "out", items_b, (b / "hosts.ini").resolve(), log=lambda _: None)
    (ca,), (cb,) = merge(a / "out", write=False), merge(b / "out", write=False)
    assert sorted(i.id for i in items_a) == sorted(i.id for i in items_b), "a pool does not change the items"

    def shape(c: Any) -> Any:
        return (c.summary.valid, c.summary.repetitions,
                [(f.id, f.verdict, [ch.n for ch in f.checks]) for f in c.summary.findings])

    assert shape(ca) == shape(cb)


def test_a_host_of_another_kernel_is_refused_and_its_item_measured_elsewhere(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, items = _campaign(tmp_path, 3, "  - {name: box, kind: ansible, pool: [h1, h2, h3], expect: {kernel: '6.18.*'}}")
    _fake_hosts(monkeypatch, tmp_path, kernels={"h3": "6.1.0"})
    lines: list[str] = []
    outcomes = pool.execute_pool(tmp_path / "out", items, (tmp_path / "hosts.ini").resolve(), log=lines.append)
    assert [o.status for o in outcomes].count("done") == 3
    (col,) = merge(tmp_path / "out", write=False)
    assert col.fingerprint["kernels"] == ["6.18.0"], "the 6.1 result was not merged"
    assert any("[h3] lost (not of the pool's class: kernel 6.1.0 is not '6.18.*')" in x for x in lines)


def test_with_every_host_lost_the_item_is_not_finished_and_says_why(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    _, items = _campaign(tmp_path, 1, "  - {name: box, kind: ansible, pool: [h1, h2]}")
    _fake_hosts(monkeypatch, tmp_path, secs=0.1, behaviour={"h1": ["unreachable"], "h2": ["unreachable"]})
    lines: list[str] = []
    outcomes = pool.execute_pool(tmp_path / "out", items, (tmp_path / "hosts.ini").resolve(), log=lines.append)
    assert [o.status for o in outcomes] == ["incomplete"]
    assert "no other live host of its pool" in lines[-1] or any("no other live host" in x for x in lines)
    assert executor.finished(tmp_path / "out", items[0]) is None


def test_ctrl_c_stops_every_hosts_item_and_a_rerun_finishes_the_rest(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    _, items = _campaign(tmp_path, 6, POOL)
    events = _fake_hosts(monkeypatch, tmp_path, secs=5.0)
    timer = threading.Timer(1.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    t0 = time.monotonic()
    with pytest.raises(executor.Stopped):
        pool.execute_pool(tmp_path / "out", items, (tmp_path / "hosts.ini").resolve(), log=lambda _: None)
    assert time.monotonic() - t0 < 4.5, "the running items were stopped, not waited for"
    assert _intervals(events) == [], "no item finished"
    for line in events.read_text().splitlines():
        pid = json.loads(line).get("pid")
        if pid:
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)  # every host's item process is gone
    assert all(executor.finished(tmp_path / "out", i) is None for i in items)
    # each host that had an item running was cleaned, once, for that item; item.json says so
    cleaned = [json.loads(x) for x in events.read_text().splitlines() if '"clean"' in x]
    assert sorted(c["clean"] for c in cleaned) == list(HOSTS), cleaned
    for c in cleaned:
        stop = json.loads((tmp_path / "out" / "items" / c["item"] / "item.json").read_text())["stop"]
        assert stop["why"] == "SIGINT" and stop["exit"] == 0 and "-c" in stop["argv"], stop
    _fake_hosts(monkeypatch, tmp_path, secs=0.1)
    again = pool.execute_pool(tmp_path / "out", items, (tmp_path / "hosts.ini").resolve(), log=lambda _: None)
    assert [o.status for o in again].count("done") == 6


def test_longest_expected_item_first(tmp_path: Path) -> None:
    _, items = _campaign(tmp_path, 2, POOL)
    st = pool._State([pool._Queued(i, n) for n, i in enumerate(items)], {items[0].key: 10.0}, {"h1": True}, None)
    assert st.pick("h1") is not None and st.pick("h1") is not None and st.pick("h1") is None
    other = items[1]
    st = pool._State([pool._Queued(items[0], 0), pool._Queued(other, 1)], {}, {"h1": True}, None)
    first = st.pick("h1")
    assert first is not None and first.item.id == items[0].id, "equal expectations: campaign order"


def test_slots_local_and_qemu_share_this_machine(tmp_path: Path) -> None:
    _, items = _campaign(tmp_path, 1, POOL + "\n  - {name: here}")
    assert pool.slots(items) == ["h1", "h2", "h3", "this machine"]
    assert pool.parallel(items)


@pytest.mark.parametrize("target, field, problem", [
    ("  - {name: box, kind: ansible, host: h1, pool: [h2]}", "targets.0", "host and pool exclude each other"),
    ("  - {name: box, pool: [h1]}", "targets.0", "pool is for kind ansible"),
    ("  - {name: box, kind: ansible, pool: [h1, h1]}", "targets.0", "h1 given twice"),
    ("  - {name: box, kind: ansible, pool: []}", "targets.0", "an empty pool"),
])
def test_bad_pools_are_one_line_errors(tmp_path: Path, target: str, field: str, problem: str) -> None:
    with pytest.raises(LabInputError) as e:
        _campaign(tmp_path, 1, target)
    assert e.value.field == field and problem in e.value.problem


def test_the_dry_run_names_the_pool(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f, _ = _campaign(tmp_path, 2, POOL)
    assert main(["campaign", str(f), "--dry-run", "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "on 3 hosts at once (h1, h2, h3), longest expected item first" in out
    assert "# pool h1, h2, h3: runs on whichever host is free (the command shown for h1)" in out
    assert "--limit h1" in out
    # the clean-up a stop runs on the item's host, with the item's own variables file
    stop = [x for x in out.splitlines() if x.startswith("# if the campaign is stopped while it runs, then: ")]
    assert len(stop) == 2 and all("ansible/campaign-stop.yml --limit h1 -e @" in x and x.endswith(
        "/ansible-vars.json") for x in stop), stop
    assert (REPO / "ansible" / "campaign-stop.yml").is_file()


def test_provision_runs_the_host_playbook_on_every_host_of_the_pool(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    f, _ = _campaign(tmp_path, 1, POOL)
    assert main(["campaign", str(f), "--dry-run", "--provision", "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "campaign-host.yml" in x)
    assert "--limit h1,h2,h3" in line and "campaign_target=box" in line
    assert (REPO / "ansible" / "campaign-host.yml").is_file()


def test_a_local_inventory_host_shares_this_machines_slot(tmp_path: Path) -> None:
    """An ansible host with ansible_connection=local is this machine: its items never run
    beside a local target's (two labs at once would share the CPUs they measure with)."""
    (tmp_path / "hosts.ini").write_text("box-a ansible_connection=local\nfar ansible_connection=ssh\n")
    local = pool.local_hosts(tmp_path / "hosts.ini")
    assert local == {"box-a"}
    _, items = _campaign(tmp_path, 1, "  - {name: box-a, kind: ansible}\n  - {name: here}")
    assert pool.slots(items, local) == ["this machine"] and not pool.parallel(items, local)
    assert pool.parallel(items), "without the inventory's word they look like two machines"


def test_a_host_gone_under_a_failed_task_is_lost_not_the_items_failure() -> None:
    """A connection that reports a vanished host as a failed task (community.docker.docker
    after `docker kill`): campaign-item.yml's rescue finds the host silent and says so."""
    a = Ansible()
    lost = ('fatal: [h2]: FAILED! => {"changed": false, "msg": "mptcplab: host lost while the item ran: h2 does '
            'not answer (...)"}\nh2 : ok=6 changed=3 unreachable=0 failed=1 skipped=1 rescued=1 ignored=1\n')
    why = a.host_lost(2, lost)
    assert why is not None and why.startswith("unreachable (lost while the item ran): ")
    # a task of the item that failed on a host that answers is the item's own failure
    own = ('fatal: [h2]: FAILED! => {"msg": "rsync: connection unexpectedly closed"}\n'
           'h2 : ok=2 changed=1 unreachable=0 failed=1\n')
    assert a.host_lost(2, own) is None


def test_a_pool_of_one_runs_on_its_host(tmp_path: Path) -> None:
    """One host: the items run one after another (executor.execute) on that host, which
    --limit and item.json name, not the pool's name."""
    _, items = _campaign(tmp_path, 1, "  - {name: p, kind: ansible, pool: [h1]}")
    (item,) = items
    assert item.host == "h1" and not pool.parallel(items)
    argv = Ansible(tmp_path / "hosts.ini").argv(item, tmp_path)
    assert argv[argv.index("--limit") + 1] == "h1"
