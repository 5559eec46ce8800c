"""Emulator selection, the delay-line binary lookup, and the ping parser."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from mptcplab.emulation.base import delayline_binary, repo_root
from mptcplab.emulation.select import select_emulator
from mptcplab.emulation.testline import parse_ping
from mptcplab.errors import HostNotReady


def test_select_auto_and_forced() -> None:
    assert select_emulator(None, netem_available=True).name == "netem"
    assert select_emulator(None, netem_available=False).name == "nfqueue"
    assert select_emulator("nfqueue", netem_available=True).name == "nfqueue"
    assert select_emulator("netem", netem_available=True).name == "netem"
    with pytest.raises(HostNotReady, match="sch_netem"):
        select_emulator("netem", netem_available=False)
    with pytest.raises(ValueError, match="unknown link emulator"):
        select_emulator("tbf", netem_available=True)


def test_delayline_binary_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exe = tmp_path / "dl"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("MPTCPLAB_DELAYLINE", str(exe))
    assert delayline_binary() == exe
    monkeypatch.setenv("MPTCPLAB_DELAYLINE", str(tmp_path / "missing"))
    with pytest.raises(HostNotReady, match="make -C"):
        delayline_binary()
    assert delayline_binary(must_exist=False) == tmp_path / "missing"


def test_delayline_binary_default_location(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MPTCPLAB_DELAYLINE", raising=False)
    assert delayline_binary(must_exist=False) == repo_root() / "native" / "build" / "mptcplab-delayline"


def test_parse_ping() -> None:
    text = (
        "--- 10.77.0.2 ping statistics ---\n"
        "20 packets transmitted, 19 received, 5% packet loss, time 1003ms\n"
        "rtt min/avg/max/mdev = 40.161/40.302/41.002/0.150 ms\n"
    )
    r = parse_ping(text)
    assert (r.sent, r.received, r.min_ms, r.avg_ms, r.max_ms) == (20, 19, 40.161, 40.302, 41.002)
    none = parse_ping("3 packets transmitted, 0 received, 100% packet loss, time 2040ms\n")
    assert none.received == 0
    with pytest.raises(ValueError):
        parse_ping("ping: connect: Network is unreachable")
