"""Generated tc commands (exact argv) for tbf and netem."""

from __future__ import annotations

from pathlib import Path

import pytest

from mptcplab.emulation import tc
from mptcplab.emulation.linkmodel import DirectedLink, Endpoint, LinkShape

A, B = Endpoint("client", "eth1"), Endpoint("ra", "eth0")


def dl(mtu: int = 1500, **shape: object) -> DirectedLink:
    return DirectedLink(A, B, LinkShape.parse(**shape), mtu)  # type: ignore[arg-type]


def argvs(cmds: list) -> list[list[str]]:
    return [list(c.argv) for c in cmds]


def test_tbf_rate_burst_limit_default_queue() -> None:
    # 100 Mbit/s: burst = 1 ms = 12500 B; default queue = 50 ms = 625000 B
    cmds = tc.tbf_cmds(dl(rate="100mbit"))
    assert argvs(cmds) == [[
        "tc", "qdisc", "replace", "dev", "eth1", "root", "handle", "1:",
        "tbf", "rate", "100mbit", "burst", "12500", "limit", "625000",
    ]]
    assert cmds[0].node == "client"  # the sender's egress


def test_tbf_queue_as_time_and_bytes() -> None:
    # "80ms" at 8 Mbit/s = 80000 B; burst floor is two full frames (2 x 1514)
    assert argvs(tc.tbf_cmds(dl(rate="8mbit", queue="80ms")))[0][-6:] == [
        "rate", "8mbit", "burst", "3028", "limit", "80000"]
    # 2 s buffer at 2 Mbit/s = 500000 B
    assert argvs(tc.tbf_cmds(dl(rate="2mbit", queue="2s")))[0][-2:] == ["limit", "500000"]
    assert argvs(tc.tbf_cmds(dl(rate="10mbit", queue="150KB")))[0][-2:] == ["limit", "150000"]
    # a queue smaller than two frames is raised to two frames (tbf drops bigger packets)
    assert argvs(tc.tbf_cmds(dl(rate="10mbit", queue="1000")))[0][-2:] == ["limit", "3028"]


def test_tbf_jumbo_mtu_burst() -> None:
    assert argvs(tc.tbf_cmds(dl(mtu=9000, rate="10mbit")))[0][-4:-2] == ["burst", "18028"]


def test_no_rate_no_tbf() -> None:
    assert tc.tbf_cmds(dl(delay="10ms")) == []
    with pytest.raises(ValueError):
        tc.tbf_params(LinkShape(), 1500)


def test_netem_with_tbf_child() -> None:
    d = dl(rate="100mbit", delay="40ms", loss="1%")
    assert argvs(tc.netem_cmds(d)) == [
        ["tc", "qdisc", "replace", "dev", "eth1", "root", "handle", "1:", "netem",
         "limit", str(tc.netem_limit_packets(d)), "delay", "40000us", "loss", "random", "1%"],
        ["tc", "qdisc", "replace", "dev", "eth1", "parent", "1:1", "handle", "10:",
         "tbf", "rate", "100mbit", "burst", "12500", "limit", "625000"],
    ]
    # limit covers packets on the delay and the byte queue in full frames
    assert tc.netem_limit_packets(d) == d.shape.delay_queue_packets(1500) + 625000 // 1514 + 2


def test_netem_jitter_uses_netem_rate_to_keep_order() -> None:
    cmds = argvs(tc.netem_cmds(dl(rate="8mbit", delay="10ms", jitter="2ms")))
    assert len(cmds) == 1
    assert cmds[0][cmds[0].index("delay"):] == ["delay", "10000us", "2000us", "rate", "8mbit"]
    only_jitter = argvs(tc.netem_cmds(dl(delay="10ms", jitter="1ms")))[0]
    assert only_jitter[-2:] == ["rate", "100gbit"]


def test_netem_delay_only_and_rate_only() -> None:
    assert argvs(tc.netem_cmds(dl(delay="2ms")))[0][-2:] == ["delay", "2000us"]
    assert len(tc.netem_cmds(dl(delay="2ms"))) == 1
    # rate only: no netem at all, the plain tbf layout
    assert tc.netem_cmds(dl(rate="50mbit")) == tc.tbf_cmds(dl(rate="50mbit"))


def test_loss_percent_formatting() -> None:
    assert argvs(tc.netem_cmds(dl(loss="0.1%")))[0][-3:] == ["loss", "random", "0.1%"]
    assert argvs(tc.netem_cmds(dl(loss=0.0123)))[0][-1] == "1.23%"


def test_clear() -> None:
    (c,) = tc.clear_cmds(dl(rate="1mbit"))
    assert list(c.argv) == ["tc", "qdisc", "del", "dev", "eth1", "root"]
    assert c.node == "client" and c.check is False


def test_rate_change_tbf_rescales_time_queue() -> None:
    d = dl(rate="8mbit", queue="80ms")
    assert argvs(tc.rate_change_cmds(d, 16_000_000)) == [[
        "tc", "qdisc", "replace", "dev", "eth1", "root", "handle", "1:",
        "tbf", "rate", "16mbit", "burst", "3028", "limit", "160000"]]
    # byte queues stay as configured
    assert argvs(tc.rate_change_cmds(dl(rate="8mbit", queue="100KB"), 4_000_000))[0][-2:] == ["limit", "100000"]
    # a link without a rate gets one
    assert argvs(tc.rate_change_cmds(dl(delay="5ms"), 1_000_000))[0][9:11] == ["rate", "1mbit"]
    with pytest.raises(ValueError):
        tc.rate_change_cmds(d, 0)


def test_rate_change_netem_layouts() -> None:
    child = argvs(tc.rate_change_cmds(dl(rate="100mbit", delay="5ms"), 50_000_000, netem_layout=True))
    assert child == [["tc", "qdisc", "replace", "dev", "eth1", "parent", "1:1", "handle", "10:",
                      "tbf", "rate", "50mbit", "burst", "6250", "limit", "312500"]]
    jit = argvs(tc.rate_change_cmds(dl(rate="10mbit", delay="5ms", jitter="1ms"), 20_000_000, netem_layout=True))
    assert len(jit) == 1 and jit[0][5] == "root" and jit[0][-2:] == ["rate", "20mbit"]
    plain = argvs(tc.rate_change_cmds(dl(rate="10mbit"), 20_000_000, netem_layout=True))
    assert plain[0][5:7] == ["root", "handle"]


def test_netem_emulator_interface(tmp_path: Path) -> None:
    e = tc.NetemEmulator()
    d = dl(rate="100mbit", delay="40ms")
    cmds, daemons = e.link_cmds(d, 1, tmp_path)
    assert daemons == [] and cmds == tc.netem_cmds(d)
    assert e.clear_cmds(d) == tc.clear_cmds(d)
    assert e.name == "netem"
