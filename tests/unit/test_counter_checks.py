"""Any kernel MIB counter by name in findings (mptcplab/checks/counter.py,
mptcplab/record/counters.py): the check's schema, its verdict per repetition from the nstat
probe's table (or rep.json's summary), and the preflight's check of the names against this
kernel's list (/proc/net/netstat) and of the lab (node, nstat probe)."""

from __future__ import annotations

import csv
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import TypeAdapter, ValidationError

from mptcplab.checks.registry import AnyCheck
from mptcplab.errors import LabInputError
from mptcplab.lab.loader import load_lab
from mptcplab.lab.schema import Published
from mptcplab.preflight import TOOLS, HostFacts, counter_names, counter_problems
from mptcplab.record.counters import TABLE, counter_reading
from mptcplab.record.model import Repetition
from mptcplab.results.findings import check

REPO = Path(__file__).resolve().parents[2]
HOST = HostFacts(euid=0, congestion_controls=None, schedulers=None, sysctls=None, tools=frozenset(TOOLS),
                 counters=frozenset({"MPTcpExtMPJoinSynRx", "MPTcpExtRmAddr", "MPTcpExtRmSubflow",
                                     "TcpExtTCPTimeouts"}), release="6.18.0")
CHECK: TypeAdapter[Any] = TypeAdapter(AnyCheck)


def counter(**kw: Any) -> Any:
    return CHECK.validate_python({"node": "server", "op": "==", "value": 1, **kw})


def rep_with_table(tmp: Path, name: str, n: int, rows: dict[str, dict[str, int]]) -> Repetition:
    """A repetition whose directory holds probes/nstat.csv with ``rows`` (node -> counter -> delta)."""
    d = tmp / f"{name}-{n}"
    (d / "probes").mkdir(parents=True)
    with (d / TABLE).open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["node", "counter", "before", "after", "delta"])
        for node, cs in rows.items():
            for c, v in cs.items():
                w.writerow([node, c, 10, 10 + v, v])
    return Repetition.model_validate({"name": name, "rep": n, "dir": str(d)})


def test_a_counter_check_is_its_own_kind_and_refuses_names_nstat_does_not_print() -> None:
    c = counter(counter="MPTcpExtRmAddr")
    assert type(c).__name__ == "CounterCheck" and c.nodes() == ["server"]
    assert [u.counter for u in c.counter_uses()] == ["MPTcpExtRmAddr"]
    summed = counter(counter="MPTcpExtRmSubflow", node=["client", "server"])
    assert [u.node for u in summed.counter_uses()] == ["client", "server"]
    for bad in ("RmAddr", "MPTcpExt", "IpExtInOctets", "MPTcpExtRm Addr", "TcpExt-x"):
        with pytest.raises(ValidationError, match="MPTcpExt\\* or TcpExt\\*"):
            counter(counter=bad)
    with pytest.raises(ValidationError):
        counter(counter="MPTcpExtRmAddr", value=-1)
    with pytest.raises(ValidationError):  # a metric's field is not a counter check's
        counter(counter="MPTcpExtRmAddr", path="A")


def test_each_repetition_is_judged_and_the_evidence_says_expected_and_got(tmp_path: Path) -> None:
    reps = {"s": [rep_with_table(tmp_path, "s", i, {"server": {"MPTcpExtMPJoinSynRx": v, "MPTcpExtRmAddr": 0,
                                                                "MPTcpExtRmSubflow": 0},
                                                     "client": {"MPTcpExtRmSubflow": 1}})
                  for i, v in enumerate((2, 2, 2), 1)]}
    row, ev = check(counter(counter="MPTcpExtMPJoinSynRx", value=2), "s", reps)
    assert row.verdict == "holds" and row.n == [3]
    assert "expected == 2, got 2, 2, 2" in ev
    assert check(counter(counter="MPTcpExtMPJoinSynRx", value=3), "s", reps)[0].verdict == "does not hold"
    # a counter that exists and did not move is 0, not missing
    assert check(counter(counter="MPTcpExtRmAddr", value=0), "s", reps)[0].verdict == "holds"
    # summed over two nodes (the script's simult removals): 0 + 1
    both = counter(counter="MPTcpExtRmSubflow", node=["server", "client"], op=">=", value=1)
    row, ev = check(both, "s", reps)
    assert row.verdict == "holds" and "on server + client" in ev


def test_repetitions_that_disagree_are_inconclusive(tmp_path: Path) -> None:
    reps = {"s": [rep_with_table(tmp_path, "s", i, {"server": {"MPTcpExtMPJoinSynRx": v}})
                  for i, v in enumerate((1, 2), 1)]}
    row, ev = check(counter(counter="MPTcpExtMPJoinSynRx", value=1), "s", reps)
    assert row.verdict == "inconclusive" and "got 1, 2 (1 of 2 reps)" in ev


def test_a_counter_this_kernel_lacks_or_no_probe_is_not_measurable_never_false(tmp_path: Path) -> None:
    reps = {"s": [rep_with_table(tmp_path, "s", 1, {"server": {"MPTcpExtMPJoinSynRx": 1}})]}
    row, ev = check(counter(counter="MPTcpExtMPJoinRejected", value=0), "s", reps)
    assert row.verdict == "not measurable" and "no counter MPTcpExtMPJoinRejected" in ev
    row, ev = check(counter(counter="MPTcpExtMPJoinSynRx", node="router"), "s", reps)
    assert row.verdict == "not measurable" and "node router has no nstat record" in ev
    bare = {"s": [Repetition.model_validate({"name": "s", "rep": 1})]}
    row, ev = check(counter(counter="MPTcpExtMPJoinSynRx"), "s", bare)
    assert row.verdict == "not measurable" and "nstat" in ev
    assert check(counter(counter="MPTcpExtMPJoinSynRx"), "other", reps)[0].verdict == "not measurable"


def test_without_the_table_rep_json_summary_answers_mptcp_counters_only() -> None:
    r = Repetition.model_validate({"name": "s", "rep": 1, "probes": {"nstat": {"server": {"MPTcpExtRmAddr": 3}}}})
    assert counter_reading(r, "server", "MPTcpExtRmAddr").value == 3
    assert counter_reading(r, "server", "MPTcpExtRmSubflow").value == 0  # the summary lists those that moved
    got = counter_reading(r, "server", "TcpExtTCPTimeouts")
    assert got.value is None and got.missing is not None and "MPTcpExt only" in got.missing


def test_counter_names_read_from_proc_net_netstat(tmp_path: Path) -> None:
    p = tmp_path / "netstat"
    p.write_text("TcpExt: SyncookiesSent TCPTimeouts\nTcpExt: 0 7\n"
                 "MPTcpExt: MPJoinSynRx RmAddr\nMPTcpExt: 1 2\n")
    assert counter_names(p) == {"TcpExtSyncookiesSent", "TcpExtTCPTimeouts", "MPTcpExtMPJoinSynRx",
                                "MPTcpExtRmAddr"}
    assert counter_names(tmp_path / "absent") is None


def _lab(tmp_path: Path, expect: list[dict[str, Any]], *, nstat: bool = True, requires: Any = None) -> Path:
    """labs/setup copied, with one finding of ``expect`` and the nstat probe on or off."""
    d = tmp_path / "lab"
    d.mkdir(parents=True)
    for f in ("topology.clab.yml", "experiment.yml"):
        (d / f).write_text((REPO / "labs/setup" / f).read_text())
    exp = yaml.safe_load((d / "experiment.yml").read_text())
    if nstat:
        exp["probes"] = {"nstat": True}
    (d / "experiment.yml").write_text(yaml.safe_dump(exp, sort_keys=False))
    finding: dict[str, Any] = {"id": "f", "scenario": "setup-mptcp-held0", "statement": "s", "where": "w",
                               "fails_if": "x", "expect": expect}
    if requires:
        finding["requires"] = requires
    pub = {"source": {"id": "x", "title": "t", "authors": ["a"], "year": 2025, "document": "d",
                      "kernel": "k", "testbed": "t"},
           "findings": [finding]}
    Published.model_validate(pub)
    (d / "published.yml").write_text(yaml.safe_dump(pub, sort_keys=False))
    return d


def _ok(counter_: str, node: str = "srv") -> dict[str, Any]:
    return {"counter": counter_, "node": node, "op": "==", "value": 0, "source": "paper: x"}


def test_preflight_refuses_a_counter_this_kernel_lacks_in_one_line(tmp_path: Path) -> None:
    d = _lab(tmp_path, [_ok("MPTcpExtRmAddr"), _ok("MPTcpExtNoSuchThing")])
    lab = load_lab(d)
    problems = counter_problems(lab, lab.scenarios, HOST)
    assert len(problems) == 1 and isinstance(problems[0], LabInputError)
    p = problems[0]
    assert (p.file, p.field) == (str(d / "published.yml"), "findings[0].expect[1].counter")
    assert "has no counter MPTcpExtNoSuchThing" in p.problem and "\n" not in str(p)
    # a host whose list could not be read checks nothing
    assert counter_problems(lab, lab.scenarios, replace(HOST, counters=None)) == []


def test_preflight_names_an_unknown_node_and_a_scenario_without_nstat(tmp_path: Path) -> None:
    d = _lab(tmp_path / "a", [_ok("MPTcpExtRmAddr", node="server")])
    lab = load_lab(d)
    (p,) = counter_problems(lab, lab.scenarios, HOST)
    assert p.field == "findings[0].expect[0].node" and "no node 'server'" in p.problem and "cli, srv" in p.problem
    d = _lab(tmp_path / "b", [_ok("TcpExtTCPTimeouts")], nstat=False)
    lab = load_lab(d)
    (p,) = counter_problems(lab, lab.scenarios, HOST)
    assert p.field == "findings[0].expect[0].counter" and "probes: {nstat: true}" in p.problem
    # only the scenarios that run count: without setup-mptcp-held0 nothing is read
    assert counter_problems(lab, [s for s in lab.scenarios if s.name != "setup-mptcp-held0"], HOST) == []


def test_a_finding_for_another_kernel_range_is_not_held_to_this_kernels_counters(tmp_path: Path) -> None:
    d = _lab(tmp_path, [_ok("MPTcpExtNoSuchThing")], requires={"kernel": ">=7.0"})
    lab = load_lab(d)
    assert counter_problems(lab, lab.scenarios, HOST) == []
    assert len(counter_problems(lab, lab.scenarios, replace(HOST, release="7.1.0"))) == 1


def test_the_selftests_lab_names_only_counters_this_kernel_has() -> None:
    """labs/selftests against the running kernel's own list (when it can be read): the lab
    must run here, every counter of every case known."""
    lab = load_lab(REPO / "labs/selftests")
    names = counter_names(Path("/proc/net/netstat"))
    if names is None:
        pytest.skip("/proc/net/netstat not readable")
    assert counter_problems(lab, lab.scenarios, replace(HOST, counters=names)) == []
    assert lab.published is not None and len(lab.published.findings) >= 40
