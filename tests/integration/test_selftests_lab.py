"""labs/selftests (mptcp_join.sh's cases) through the engine: two of its cases, each judged
by counter checks (any MPTcpExt* counter by name, mptcplab/checks/counter.py) that the
nstat probe's table answers, and the capture showing the same event the counters count.

- signal-address-with-port: the server announces 10.0.2.1 port 10100; the script expects one
  join (MPJoinSynRx 1 on the server), one ADD_ADDR with a port (PortAdd 1 on the client) and
  the join on that port (MPJoinPortSynRx 1): the capture has an established subflow to
  10.0.2.1:10100.
- remove-single-subflow: the client's backup subflow endpoint deleted 1 s in (a timeline
  event): RmAddrTx 1 on the client, RmAddr 1 on the server, RmSubflow 1 on the client.

One quick run of the two scenarios (about 15 s of traffic).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from .labkit import by_name, run_repo_lab

pytestmark = pytest.mark.netns

CASES = ("signal-address-with-port", "remove-single-subflow")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_repo_lab("selftests", tmp_path_factory.mktemp("results"), 2, len(CASES), *CASES)


def _summary(run: Path) -> dict[str, Any]:
    return json.loads((run / "summary.json").read_text())


def _deltas(run: Path, scenario: str) -> dict[tuple[str, str], int]:
    rep = by_name(_summary(run))[scenario]
    with (run / rep["dir"] / "probes" / "nstat.csv").open() as f:
        return {(r["node"], r["counter"]): int(r["delta"]) for r in csv.DictReader(f)}


def test_every_case_holds_by_the_scripts_counters(run: Path) -> None:
    findings = {f["id"]: f for f in _summary(run)["findings"]}
    for case in CASES:
        f = findings[case]
        assert f["verdict"] == "holds", f["evidence"]
        # every check decided from this run (counter checks and the transfer's integrity)
        assert all(c["verdict"] == "holds" for c in f["checks"]), f["evidence"]
        assert "expected == 1, got 1" in f["evidence"]


def test_the_port_join_is_in_the_counters_and_in_the_capture(run: Path) -> None:
    d = _deltas(run, "signal-address-with-port")
    assert d[("server", "MPTcpExtMPJoinPortSynRx")] == 1 and d[("client", "MPTcpExtPortAdd")] == 1
    rec = by_name(_summary(run))["signal-address-with-port"]
    joined = [s for s in rec["subflows"] if s["dst"] == "10.0.2.1" and s["dport"] == 10100]
    assert len(joined) == 1 and joined[0]["established"] and not joined[0]["initial"]


def test_the_removed_subflow_is_counted_on_both_ends(run: Path) -> None:
    d = _deltas(run, "remove-single-subflow")
    assert (d[("client", "MPTcpExtRmAddrTx")], d[("server", "MPTcpExtRmAddr")],
            d[("client", "MPTcpExtRmSubflow")]) == (1, 1, 1)
    rec = by_name(_summary(run))["remove-single-subflow"]
    # the backup subflow from client:eth3 was made (then removed by the event)
    assert any(s["src"] == "10.0.3.2" and s["established"] for s in rec["subflows"])
