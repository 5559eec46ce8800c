"""tools/ss.py on real `ss -tinM` output (tests/data/ss/, captured here with iproute2
6.1 on kernel 6.18: one MPTCP upload over two tbf-shaped veth paths, 20 and 10 Mbit/s,
plus iperf3's control connection; the second capture after `ip mptcp endpoint change
10.9.2.1 backup`), and the backup_slowest controller on those samples."""

from __future__ import annotations

from pathlib import Path

import pytest

from mptcplab.commands import Cmd
from mptcplab.controllers import ControllerNotFound, View, available, controller_class
from mptcplab.lab.events import ControllerSpec, EndpointFlags
from mptcplab.tools.ss import SS_ARGV, SsSampler, busiest_connection, parse_ss, ss_cmd

DATA = Path(__file__).resolve().parents[1] / "data" / "ss"


def test_parses_every_subflow_and_skips_the_mptcp_sockets() -> None:
    s = parse_ss((DATA / "tinM-two-subflows.txt").read_text(), t=5.0)
    assert len(s) == 4  # two connections (data + iperf3 control) x two subflows
    data = busiest_connection(s)
    assert [(x.local, x.iface, x.join, x.local_id) for x in data] == [
        ("10.9.1.1", None, False, 0), ("10.9.2.1", "tlcap4626x", True, 1)]
    a, b = data
    assert a.token == b.token == "78972413" and a.lport == 54060 and a.peer == "10.9.1.2" and a.pport == 5201
    assert (a.cwnd, a.mss, a.rtt_ms, a.bytes_acked, a.bytes_retrans) == (108, 1448, 22.03, 2309806, 131856)
    assert (b.cwnd, b.rtt_ms, b.delivery_rate_bps) == (20, 15.042, 9560072)
    assert a.send_queue == 987720 and a.t == 5.0 and not a.backup and not b.backup
    # cwnd x mss / rtt: what each window allows
    assert a.est_rate_bps == pytest.approx(108 * 1448 * 8 / 0.02203)


def test_backup_flag_after_endpoint_change() -> None:
    data = busiest_connection(parse_ss((DATA / "tinM-backup.txt").read_text()))
    assert [x.backup for x in data] == [False, True]


def test_without_numeric_flag_and_header() -> None:
    assert len(parse_ss((DATA / "tiM-two-subflows.txt").read_text())) == 4
    body = "\n".join((DATA / "tinM-two-subflows.txt").read_text().splitlines()[1:])
    assert len(parse_ss(body)) == 4
    assert parse_ss("") == [] and busiest_connection([]) == []


def test_sampler_runs_the_command_on_its_node() -> None:
    asked: list[Cmd] = []
    text = (DATA / "tinM-two-subflows.txt").read_text()

    def run(c: Cmd) -> str:
        asked.append(c)
        return text

    s = SsSampler("client", run, clock=lambda: 7.0)
    assert len(s.sample()) == 4 and asked == [ss_cmd("client")]
    assert asked[0].argv == SS_ARGV and asked[0].node == "client"


def spec(**params: object) -> ControllerSpec:
    return ControllerSpec(name="backup_slowest", node="client", params=params)


def test_backup_slowest_waits_for_warmup_then_demotes_the_slower_once() -> None:
    cls = controller_class("backup_slowest")
    c = cls(spec(warmup="1s"))
    data = busiest_connection(parse_ss((DATA / "tinM-two-subflows.txt").read_text()))
    assert c.step(View(0.5, "client", data, data)) == []
    out = c.step(View(1.2, "client", data, data))
    assert len(out) == 1 and isinstance(out[0], EndpointFlags)
    assert (out[0].node, out[0].address, out[0].flags) == ("client", "10.9.2.1", "backup")
    assert c.step(View(1.3, "client", data, data)) == []  # once


def test_backup_slowest_leaves_similar_subflows_alone() -> None:
    c = controller_class("backup_slowest")(spec(warmup=0, max_ratio=0.05))
    data = busiest_connection(parse_ss((DATA / "tinM-two-subflows.txt").read_text()))
    assert c.step(View(2.0, "client", data, data)) == []


def test_registry() -> None:
    assert "backup_slowest" in available() and "base" not in available() and "runner" not in available()
    with pytest.raises(ControllerNotFound, match="no controller 'ghost'"):
        controller_class("ghost")
