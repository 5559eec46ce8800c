"""A flow's fallback warning names the kernel's MPTCP black-hole detection when the client's
MIB counters show it turned MPTCP off (labs/http at scale 0.03: 106 plain-TCP connections
after 6 MP_CAPABLE SYNs went unanswered in a full queue)."""

from __future__ import annotations

import json
from pathlib import Path

from mptcplab.traffic.analyse import blackhole_cause


def _nstat(d: Path, node: str, phase: str, **counters: int) -> None:
    (d / "probes").mkdir(parents=True, exist_ok=True)
    (d / "probes" / f"nstat-{node}-{phase}.json").write_text(json.dumps({"kernel": counters}))


def test_the_cause_is_named_when_the_counters_moved(tmp_path: Path) -> None:
    _nstat(tmp_path, "client", "before", MPTcpExtBlackhole=0, MPTcpExtMPCapableSYNTXDisabled=0)
    _nstat(tmp_path, "client", "after", MPTcpExtBlackhole=6, MPTcpExtMPCapableSYNTXDisabled=106)
    why = blackhole_cause(tmp_path, "client")
    assert "started 106 connection(s) without MP_CAPABLE" in why and "6 unanswered" in why
    assert blackhole_cause(tmp_path, "server") == ""              # another node's counters


def test_nothing_is_said_without_the_counters_or_when_they_stayed(tmp_path: Path) -> None:
    assert blackhole_cause(tmp_path, "client") == ""               # no nstat probe ran
    _nstat(tmp_path, "client", "before", MPTcpExtMPCapableSYNTXDisabled=3)
    _nstat(tmp_path, "client", "after", MPTcpExtMPCapableSYNTXDisabled=3)
    assert blackhole_cause(tmp_path, "client") == ""
