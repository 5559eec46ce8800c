"""labs/rcvbuf's own numbers, checked against the paper's testbeds: the buffer in every swept
scenario's name is the sysctl it runs with (x0.1 in the scaled Fig 6b family), the TB-EMU1/2
paths have the paper's rates, delays and queues, and the buffer formula gives the paper's
375 KB with them. A typo in a hand-written sweep value fails here, not in a 7-hour run."""

from __future__ import annotations

from pathlib import Path

import pytest

from mptcplab.emulation.linkmodel import QueueLimit
from mptcplab.lab.loader import load_lab
from mptcplab.lab.model import ScenarioRun
from mptcplab.results.buffersweep import buffer_formula, parse_label
from mptcplab.units import parse_rate, parse_time

LAB = load_lab(Path(__file__).resolve().parents[2] / "labs" / "rcvbuf")


def scenario(name: str) -> ScenarioRun:
    return next(s for s in LAB.scenarios if s.name == name)


def rmem(s: ScenarioRun) -> list[int]:
    return [int(x) for x in str(s.body.nodes["server"].sysctls["net.ipv4.tcp_rmem"]).split()]


def test_every_swept_name_is_its_buffer() -> None:
    swept = [(s, p) for s in LAB.scenarios if (p := parse_label(s.name)) is not None]
    assert len(swept) >= 3 * 8 + 8  # Fig 4's three configurations and TB-EMU2 at least
    for s, (family, _label, b) in swept:
        lo, default, high = rmem(s)
        factor = 0.1 if family.startswith("fig6b-x0.1") else 1.0
        assert high == round(b * factor), s.name
        assert lo == 4096 and lo <= default <= high, s.name  # autotuning from default up to the swept max


def test_fig4_sweep_covers_the_papers_buffers() -> None:
    b = sorted(p[2] for s in LAB.scenarios if (p := parse_label(s.name)) and p[0] == "emu1-mptcp")
    for kb in (50, 100, 200, 370, 400, 500, 1000, 2000):
        assert kb * 1000 in b


def shape(s: ScenarioRun, link: str) -> tuple[float, float, float]:
    """(rate bit/s, base RTT s, queue in seconds at the rate) of a link, both directions alike."""
    spec = s.body.links[link]
    assert spec.rate is not None and spec.queue is not None
    rate = float(parse_rate(spec.rate))
    queue = QueueLimit.parse(spec.queue).to_bytes(int(rate))
    assert queue is not None
    delay = parse_time(spec.delay) if spec.delay is not None else 0.0  # Fig 6b: no added delay
    return rate, 2 * delay, queue * 8 / rate


@pytest.mark.parametrize(("name", "wifi", "g3"), [
    ("emu1-mptcp-rmem200k", (8e6, 0.020, 0.080), (2e6, 0.150, 2.0)),
    ("emu2-mptcp-rmem200k", (8e6, 0.020, 0.080), (50e3, 0.150, 2.0)),
])
def test_testbeds(name: str, wifi: tuple[float, float, float], g3: tuple[float, float, float]) -> None:
    s = scenario(name)
    assert shape(s, "rw:eth2") == pytest.approx(wifi)
    assert shape(s, "r3:eth2") == pytest.approx(g3)


def test_the_papers_375kb_from_the_lab() -> None:
    s = scenario("emu1-mptcp-rmem370k")
    (w_rate, w_rtt, _), (g_rate, g_rtt, _) = shape(s, "rw:eth2"), shape(s, "r3:eth2")
    assert buffer_formula([w_rate, g_rate], max(w_rtt, g_rtt)) == pytest.approx(375_000)


def test_fig6b_is_the_paper_scaled_by_a_tenth() -> None:
    s = scenario("fig6b-x0.1-mptcp-b250k")
    assert shape(s, "rw:eth2")[0] == 0.1 * 1e9 and shape(s, "r3:eth2")[0] == 0.1 * 100e6
