"""A run names the kernel's MPTCP black-hole detection, as its own coded warning, when a
node's MIB counters show it turned MPTCP off (labs/http at scale 0.03: 106 plain-TCP
connections after 6 MP_CAPABLE SYNs went unanswered in a full queue)."""

from __future__ import annotations

import json
from pathlib import Path

from mptcplab.probes.nstat import BlackHole, NstatProbe, blackholes
from mptcplab.run.record import MPTCP_BLACKHOLE, blackhole_warnings


def _nstat(d: Path, node: str, phase: str, **counters: int) -> None:
    (d / "probes").mkdir(parents=True, exist_ok=True)
    (d / "probes" / f"nstat-{node}-{phase}.json").write_text(json.dumps({"kernel": counters}))


def test_the_node_whose_counters_moved_is_named(tmp_path: Path) -> None:
    _nstat(tmp_path, "client", "before", MPTcpExtBlackhole=0, MPTcpExtMPCapableSYNTXDisabled=0)
    _nstat(tmp_path, "client", "after", MPTcpExtBlackhole=6, MPTcpExtMPCapableSYNTXDisabled=106)
    _nstat(tmp_path, "server", "before", MPTcpExtBlackhole=0, MPTcpExtMPCapableSYNTXDisabled=0)
    _nstat(tmp_path, "server", "after", MPTcpExtBlackhole=1, MPTcpExtMPCapableSYNTXDisabled=0)
    # a detection that disabled nothing changed no connection: not a cause
    assert blackholes(NstatProbe.analyze(tmp_path)) == [BlackHole("client", 6, 106)]
    (w,) = blackhole_warnings(tmp_path)
    assert w["code"] == MPTCP_BLACKHOLE
    assert w["message"].startswith("client's kernel started 106 connection(s) without MP_CAPABLE")
    assert "6 unanswered" in w["message"] and "net.mptcp.blackhole_timeout" in w["message"]


def test_nothing_is_said_without_the_counters_or_when_they_stayed(tmp_path: Path) -> None:
    assert blackhole_warnings(tmp_path) == []                      # no nstat probe ran
    _nstat(tmp_path, "client", "before", MPTcpExtMPCapableSYNTXDisabled=3)
    _nstat(tmp_path, "client", "after", MPTcpExtMPCapableSYNTXDisabled=3)
    assert blackhole_warnings(tmp_path) == []                      # disabled before the traffic
    _nstat(tmp_path, "client", "after", MPTcpExtMPCapableSYNTXDisabled=3, TcpExtTCPTimeouts=9)
    assert blackholes(NstatProbe.analyze(tmp_path)) == []
