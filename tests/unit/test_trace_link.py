"""A trace link in the lab format: `trace` / `trace_offset` per link and direction,
exclusive with `rate`; the link model carries the parsed trace; the delay line gets
--trace (absolute) / --trace-offset-ms / --limit-bytes; netem refuses; the reachability
estimate counts the trace at its peak rate."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from mptcplab.backends.netns import NetnsBackend
from mptcplab.emulation import capacity
from mptcplab.emulation.linkmodel import DirectedLink, Endpoint, LinkShape
from mptcplab.emulation.nfqueue import NfqueueEmulator, delayline_daemon
from mptcplab.emulation.tc import NetemEmulator
from mptcplab.emulation.trace import Trace, trace_for, traces_dir
from mptcplab.errors import HostNotReady, LabInputError
from mptcplab.lab.loader import load_lab
from mptcplab.lab.model import Lab
from mptcplab.lab.network import Link, build_network
from mptcplab.net.plan import build_plan

BASE = Path(__file__).resolve().parents[1] / "data" / "bad-labs" / "_base"
CLIENT_ETH1 = Endpoint("client", "eth1")
RA_ETH1 = Endpoint("ra", "eth1")


def make_lab(tmp_path: Path, links: dict[str, Any], events: list[Any] | None = None) -> Lab:
    """The bad-lab suite's valid base with other ``links`` (and events), plus a broken
    trace file ``bad.trace`` beside it."""
    d = tmp_path / "lab"
    shutil.copytree(BASE, d)
    (d / "bad.trace").write_text("1\nx\n")
    exp = yaml.safe_load((d / "experiment.yml").read_text())
    exp["links"] = links
    if events is not None:
        exp["traffic"]["events"] = events
    (d / "experiment.yml").write_text(yaml.safe_dump(exp))
    return load_lab(d)


def link_of(lab: Lab, ep: str = "client:eth1") -> Link:
    return build_network(lab.topology, lab.scenarios[0].body, str(lab.path / "experiment.yml")).link_of(ep)


def test_a_named_trace_is_parsed_into_the_link_model(tmp_path: Path) -> None:
    link = link_of(make_lab(tmp_path, {"client:eth1": {"trace": "outage-2s", "delay": "10ms",
                                                       "trace_offset": "1.5s", "queue": "60KB"}}))
    s = link.shape_from(CLIENT_ETH1)
    assert isinstance(s.trace, Trace) and s.trace.path == traces_dir() / "outage-2s.trace"
    assert s.rate_bps is None and s.trace_offset_s == pytest.approx(1.5) and s.delay_s == pytest.approx(0.01)
    assert s.impaired and link.symmetric
    assert s.queue_bytes(1500) == 60_000


def test_a_path_is_relative_to_the_lab_and_a_direction_may_have_its_own(tmp_path: Path) -> None:
    (tmp_path / "lab-traces").mkdir()
    (tmp_path / "lab-traces" / "mine.trace").write_text("2\n4\n")
    lab_dir_rel = "../lab-traces/mine.trace"
    link = link_of(make_lab(tmp_path, {"client:eth1": {"delay": "5ms", "egress": {"rate": "40mbit"},
                                                       "ingress": {"trace": lab_dir_rel}}}))
    down, up = link.shape_from(RA_ETH1), link.shape_from(CLIENT_ETH1)
    assert down.trace is not None and down.trace.path == (tmp_path / "lab-traces" / "mine.trace").resolve()
    assert up.trace is None and up.rate_bps == 40_000_000


@pytest.mark.parametrize(("links", "field", "problem"), [
    ({"client:eth1": {"rate": "40mbit", "trace": "outage-2s"}}, "links.client:eth1",
     "trace: a trace is the link's rate, it excludes rate"),
    ({"client:eth1": {"rate": "40mbit", "egress": {"trace": "outage-2s"}}}, "links.client:eth1",
     "egress.trace: a trace is the link's rate, it excludes rate"),
    ({"client:eth1": {"trace_offset": "1s"}}, "links.client:eth1", "trace_offset: an offset needs a trace"),
    ({"client:eth1": {"trace": "outage-2s", "trace_offset": "soon"}}, "links.client:eth1.trace_offset", "soon"),
    ({"client:eth1": {"trace": "no-such-trace"}}, "links.client:eth1.trace", "no shipped trace of that name"),
    ({"client:eth1": {"ingress": {"trace": "bad.trace"}}}, "links.client:eth1.ingress.trace",
     "bad.trace:2: 'x' is not a time in ms"),
])
def test_bad_trace_fields_are_one_line_naming_the_field(tmp_path: Path, links: dict[str, Any], field: str,
                                                        problem: str) -> None:
    with pytest.raises(LabInputError) as e:
        make_lab(tmp_path, links)
    assert e.value.field == field and problem in e.value.problem, str(e.value)
    assert e.value.file.endswith("experiment.yml") and "\n" not in str(e.value)


def test_a_rate_change_on_a_trace_link_is_refused(tmp_path: Path) -> None:
    with pytest.raises(LabInputError) as e:
        make_lab(tmp_path, {"client:eth1": {"trace": "outage-2s", "delay": "5ms"}},
                 events=[{"at": "2s", "action": "link_change", "link": "client:eth1", "rate": "10mbit"}])
    assert e.value.field == "traffic.events[0].rate" and "replays trace outage-2s" in e.value.problem


def _dl(shape: LinkShape) -> DirectedLink:
    return DirectedLink(Endpoint("a", "eth1"), Endpoint("b", "eth1"), shape, 1500)


def test_delay_line_argv_carries_the_trace() -> None:
    t = trace_for("outage-2s", ".")
    shape = LinkShape.parse(delay="10ms", trace=t, trace_offset="2.5s", queue="30000")
    argv = delayline_daemon(_dl(shape), 3, Path("/w"), Path("/bin/dl"), env={}).argv
    i = argv.index("--trace")
    assert argv[i + 1] == str(traces_dir() / "outage-2s.trace") and Path(argv[i + 1]).is_absolute()
    assert argv[argv.index("--trace-offset-ms") + 1] == "2500"
    assert argv[argv.index("--limit-bytes") + 1] == "30000"
    assert "--rate-bps" not in argv
    # a trace without delay still gets its delay line (the trace is only there)
    argv0 = delayline_daemon(_dl(LinkShape.parse(trace=t)), 0, Path("/w"), Path("/bin/dl"), env={}).argv
    assert argv0[argv0.index("--delay-us") + 1] == "0" and "--trace" in argv0
    # a queue given as time is at the trace's peak rate (24.064 Mbit/s): 100 ms = 300800 bytes
    assert LinkShape.parse(trace=t, queue="100ms").queue_bytes(1500) == 300_800


def test_nfqueue_plan_has_no_tbf_and_a_fail_closed_rule_for_a_trace_without_delay(tmp_path: Path) -> None:
    lab = make_lab(tmp_path, {"client:eth1": {"egress": {"trace": "const-12mbit"}}})
    be = NetnsBackend(prefix="mplabtrc-")
    plan = build_plan(lab.topology, lab.scenarios[0], NfqueueEmulator(binary=Path("/bin/true")), be, Path("/tmp/x"),
                      str(lab.path / "experiment.yml"))
    lines = [be.render(c) for c in plan.emulation]
    assert not any(" tbf " in ln for ln in lines)
    assert any("mplabtrc-ra iptables -w -t raw -A mptcplab-rx-eth1 -j NFQUEUE --queue-num" in ln for ln in lines)
    assert not any("--queue-bypass" in ln for ln in lines)
    (dl,) = [d for d in plan.daemons if "--trace" in d.argv]
    assert dl.node == "ra" and str(traces_dir() / "const-12mbit.trace") in dl.argv


def test_netem_refuses_a_trace_link(tmp_path: Path) -> None:
    lab = make_lab(tmp_path, {"client:eth1": {"trace": "outage-2s", "delay": "5ms"}})
    with pytest.raises(HostNotReady) as e:
        build_plan(lab.topology, lab.scenarios[0], NetemEmulator(), NetnsBackend(prefix="mplabtrc-"),
                   Path("/tmp/x"), str(lab.path / "experiment.yml"))
    assert "netem cannot replay a delivery trace (outage-2s)" in str(e.value) and "\n" not in str(e.value)


def test_run_time_rate_changes_are_refused_by_the_emulator() -> None:
    t = trace_for("outage-2s", ".")
    dl = _dl(LinkShape.parse(delay="10ms", trace=t))
    em = NfqueueEmulator(binary=Path("/bin/true"))
    with pytest.raises(ValueError, match="trace"):
        em.rate_change_cmds(dl, 10_000_000)
    with pytest.raises(ValueError, match="trace"):
        em.change_cmds(dl, LinkShape.parse(delay="10ms", rate="10mbit"))
    # a delay change is still the delay line's control
    assert em.change_cmds(dl, LinkShape.parse(delay="20ms", trace=t))


def test_reachability_counts_a_trace_at_its_peak_rate() -> None:
    t = trace_for("outage-2s", ".")
    d = capacity.estimate_direction(_dl(LinkShape.parse(delay="40ms", trace=t)), "nfqueue")
    assert d.rate_bps == int(t.peak_rate_bps) and d.pps == pytest.approx(t.peak_rate_bps / 8 / 1514, rel=1e-3)
    assert "trace outage-2s at its peak rate" in d.note
    # without delay it is still a delay line to estimate
    assert capacity.estimate_direction(_dl(LinkShape.parse(trace=t)), "nfqueue").pps is not None
