"""The cases view of a lab on record (mptcplab/reproductions/cases.py) and compare's findings
cells for counter checks: labs/selftests' cases on two kernels from records, the newer kernel
failing one count, the older lacking counters (skipped, not failed); the lab doc's cases
markers filled, reproductions.md in the same view, --check agreeing."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from mptcplab.campaign.compare import write_compare
from mptcplab.campaign.records import pack_items
from mptcplab.cli import main
from mptcplab.lab.loader import load_lab
from mptcplab.record import store
from mptcplab.record.counters import TABLE
from mptcplab.record.model import MptcpVerdict, Repetition
from mptcplab.reproductions.docs import CASES_BEGIN, CASES_END
from mptcplab.results.summary import build_summary_model

REPO = Path(__file__).resolve().parents[2]
LABS = REPO / "labs"
CASES = ("single-subflow", "signal-address")
#: what 6.1 lacks of the counters the two cases read (Debian's 6.1.0-56-amd64, read in a guest)
NOT_ON_61 = {"MPTcpExtMPJoinSynTx", "MPTcpExtMPJoinSynTxCreatSkErr", "MPTcpExtMPJoinSynTxBindErr",
             "MPTcpExtMPJoinSynTxConnectErr", "MPTcpExtMPJoinRejected"}


def _counters(case: str, kernel: str) -> dict[str, dict[str, int]]:
    """Every counter either case reads, per node: what the script expects (joins 1 1 1, one
    ADD_ADDR in signal-address), 0 otherwise; on 6.18 signal-address's server saw no join ack."""
    pub = load_lab(LABS / "selftests").published
    assert pub is not None
    nodes: dict[str, dict[str, int]] = {"server": {}, "client": {}}
    for f in pub.findings:
        for _, c in f.located():
            for u in c.counter_uses():
                nodes[u.node].setdefault(u.counter, 0)
    for node, name in (("server", "MPTcpExtMPJoinSynRx"), ("client", "MPTcpExtMPJoinSynAckRx"),
                       ("server", "MPTcpExtMPJoinAckRx"), ("client", "MPTcpExtMPJoinSynTx")):
        nodes[node][name] = 1
    if case == "signal-address":
        nodes["client"]["MPTcpExtAddAddr"] = nodes["server"]["MPTcpExtEchoAdd"] = 1
        if kernel.startswith("6.18"):
            nodes["server"]["MPTcpExtMPJoinAckRx"] = 0
    if kernel.startswith("6.1."):
        for cs in nodes.values():
            for name in NOT_ON_61:
                cs.pop(name, None)
    return nodes


def _campaign(out: Path) -> None:
    pub = load_lab(LABS / "selftests").published
    items: dict[str, dict[str, object]] = {}
    for target, kind, kernel in (("host", "local", "6.18.44"), ("k6.1", "qemu", "6.1.0-56-amd64")):
        iid = f"selftests__{target}__r1__0000bee{len(items)}"
        run_id = f"20261129T0400{len(items):02d}Z-beef"
        items[iid] = {"target": target, "kind": kind, "host": None, "lab": "selftests",
                      "lab_dir": str(LABS / "selftests"), "round": 1, "scenarios": list(CASES), "run": {}}
        d = out / "items" / iid / "results" / "selftests" / run_id
        reps = []
        for case in CASES:
            rd = d / "scenarios" / case / "rep1"
            (rd / "probes").mkdir(parents=True)
            with (rd / TABLE).open("w", newline="") as f:
                w = csv.writer(f)
                w.writerow(["node", "counter", "before", "after", "delta"])
                for node, cs in _counters(case, kernel).items():
                    w.writerows([node, c, 0, v, v] for c, v in sorted(cs.items()))
            sha = "41" * 32  # the transfer arrived intact (the cases' transfer_intact check)
            flow = {"name": "main", "kind": "transfer", "role": "measured", "goodput_mbps": 3.9,
                    "transfer": {"bytes": 2000000, "received_bytes": 2000000, "size": 2000000, "stopped": False,
                                 "sent_sha256": sha, "received_sha256": sha, "verdict": "equal",
                                 "differing_bytes": 0, "differences": [], "foreign_bytes": 0}}
            reps.append(Repetition.model_validate({"name": case, "rep": 1, "dir": f"scenarios/{case}/rep1",
                                                  "goodput_mbps": 3.9, "calibration_ok": True, "flows": [flow],
                                                  "mptcp": MptcpVerdict(requested=True).model_dump()}))
        s = build_summary_model("selftests", run_id, kernel, True, True, reps, pub, [], {"emulated": False}, [],
                                repetitions_per_scenario=1, run_dir=d)
        store.write_json(d / "summary.json", s.to_json())
        store.write_json(d / "manifest.json", {"lab": "selftests", "run_id": run_id, "complete": True,
                                               "kernel": kernel, "hostname": "h", "wall_seconds": 60.0})
    store.write_json(out / "campaign.json", {"name": "kc", "targets": {"host": {"kind": "local"},
                                                                       "k6.1": {"kind": "qemu"}},
                                             "items": items})


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    _campaign(tmp_path / "camp")
    pack_items(tmp_path / "camp", tmp_path / "campaigns" / "records" / "kc", "kc", log=lambda _: None)
    # the campaign file beside the records says which target is a guest
    (tmp_path / "campaigns" / "kc.yml").write_text(
        "name: kc\nrepetitions: 1\ntargets:\n  - {name: host}\n  - {name: k6.1, kind: qemu}\n")
    (tmp_path / "docs" / "labs").mkdir(parents=True)
    (tmp_path / "docs" / "labs" / "selftests.md").write_text(
        f"# selftests\n\nhand text\n\n{CASES_BEGIN}\nold\n{CASES_END}\n\nmore\n")
    return tmp_path


def _run(*extra: str) -> int:
    return main(["reproductions", "--records", "campaigns/records", "--out", "docs/reproductions.md",
                 "--labs", str(LABS), *extra])


def _row(md: str, case: str) -> str:
    return next(line for line in md.splitlines() if line.startswith(f"| {case} |"))


def test_case_by_kernel_from_records(site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run() == 0
    doc = (site / "docs" / "labs" / "selftests.md").read_text()
    assert doc.startswith(f"# selftests\n\nhand text\n\n{CASES_BEGIN}\n") and doc.endswith(f"{CASES_END}\n\nmore\n")
    assert "\nold\n" not in doc
    # the columns oldest kernel first; 6.1 passes on the counters it has, skipping those it lacks
    assert "| case | k6.1 (6.1.0-56-amd64) | host (6.18.44) |" in doc
    assert _row(doc, "single subflow") == "| single subflow | pass (5 skipped) | pass |"
    assert (_row(doc, "signal address")
            == "| signal address | pass (5 skipped) | **fail**: MPJoinAckRx@server 1→0 |")
    assert "- k6.1 (6.1.0-56-amd64): 10 check(s) in 2 finding(s) skipped, not on this kernel: MPJoinRejected, " \
           "MPJoinSynTx, MPJoinSynTxBindErr, MPJoinSynTxConnectErr, MPJoinSynTxCreatSkErr" in doc
    # a case neither run measured has no row; the counts are of those run
    assert "| no JOIN |" not in doc
    assert ("| **in all** | 2 pass, 0 fail, 0 inconclusive, 0 n/a, 0 skip "
            "| 1 pass, 1 fail, 0 inconclusive, 0 n/a, 0 skip |") in doc
    # one line per case on the native kernel: the failing check first, in bold
    lines = [x for x in doc.splitlines() if x.startswith("| signal address | `chk_join_nr 1 1 1; chk_add_nr 1 1` |")]
    assert lines == ["| signal address | `chk_join_nr 1 1 1; chk_add_nr 1 1` | **fail** | **MPJoinAckRx@server 1→0**, "
                     "MPJoinSynRx@server 1→1, MPJoinSynAckRx@client 1→1, MPJoinSynTx@client 1→1, "
                     "AddAddr@client >=1→1, EchoAdd@server 1→1 |"]
    rep = (site / "docs" / "reproductions.md").read_text()
    assert "| signal address | pass (5 skipped) | **fail**: MPJoinAckRx@server 1→0 |" in rep
    assert "### labs/selftests on" not in rep, "the cases view replaces the per-run sections"
    capsys.readouterr()
    assert _run("--check") == 0


def test_compare_names_the_failing_counter_and_counts_the_skipped(site: Path) -> None:
    md = write_compare([site / "camp"], site / "cmp", figures=False).read_text()
    row = next(x for x in md.splitlines() if "signal-address" in x and x.startswith("| "))
    assert "holds (5 skipped: not on this kernel)" in row
    assert "does not hold: MPJoinAckRx@server 1→0" in row and "[" not in row.split("|")[2]
    assert "- k6.1 (6.1.0-56-amd64): 10 check(s) in 2 finding(s) skipped, not on this kernel: MPJoinRejected" in md
