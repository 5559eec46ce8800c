"""Mobility: the timeline's link_change ``trace`` / ``trace_offset`` switches a trace
direction's trace at run time. The schema (one-line errors naming the field), the trace
loaded with the lab, the command the delay line's control gets (mptcplab-delayline-ctl
with a trace), refusals (netem, a direction without a trace), and the control file as
the C side reads it (native/delayline/dlcontrol.h) through the built client."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import TypeAdapter, ValidationError

from mptcplab.emulation.linkmodel import DirectedLink, Endpoint, LinkShape
from mptcplab.emulation.nfqueue import NfqueueEmulator, ctl_binary
from mptcplab.emulation.tc import NetemEmulator
from mptcplab.emulation.trace import trace_for, traces_dir
from mptcplab.errors import LabInputError
from mptcplab.lab.events import Event, LinkChange
from mptcplab.lab.loader import load_lab
from mptcplab.lab.model import Lab
from mptcplab.lab.network import build_network
from mptcplab.timeline.actions import check_timelines, resolve_timeline
from mptcplab.timeline.env import ActionEnv

BASE = Path(__file__).resolve().parents[1] / "data" / "bad-labs" / "_base"
EVENT: TypeAdapter[Any] = TypeAdapter(Event)
WIFI = {"trace": "const-24mbit", "delay": "5ms"}


def ev(**kw: Any) -> Any:
    return EVENT.validate_python({"at": kw.pop("at", 1), "action": "link_change", "link": "client:eth1", **kw})


def make_lab(tmp_path: Path, links: dict[str, Any], events: list[Any]) -> Lab:
    d = tmp_path / "lab"
    shutil.copytree(BASE, d)
    (d / "bad.trace").write_text("3\n1\n")
    (d / "mine.trace").write_text("1\n2\n")
    exp = yaml.safe_load((d / "experiment.yml").read_text())
    exp["links"] = links
    exp["traffic"]["events"] = events
    (d / "experiment.yml").write_text(yaml.safe_dump(exp))
    return load_lab(d)


def env_of(lab: Lab, emulator: Any = None) -> ActionEnv:
    body = lab.scenarios[0].body
    return ActionEnv(build_network(lab.topology, body, str(lab.path / "experiment.yml")),
                     emulator or NfqueueEmulator(binary=Path("/opt/dl/mptcplab-delayline")), body=body)


# ------------------------------------------------------------------ schema
def test_the_schema_takes_a_trace_and_an_offset() -> None:
    e = ev(trace="wifi-walk-12s", trace_offset="2s")
    assert isinstance(e, LinkChange) and e.switches_trace and e.trace == "wifi-walk-12s"
    assert ev(trace_offset="500ms").switches_trace
    assert not ev(delay="10ms").switches_trace
    # a delay may change with the switch; rate and queue may not (the trace is the capacity)
    assert ev(trace="const-24mbit", delay="30ms").delay == "30ms"


@pytest.mark.parametrize(("fields", "problem"), [
    ({"trace": "wifi-walk-12s", "rate": "10mbit"}, "exclude rate and queue"),
    ({"trace_offset": "1s", "queue": "50KB"}, "exclude rate and queue"),
    ({"trace": "wifi-walk-12s", "trace_offset": "soon"}, "soon"),
    ({"trace": " "}, "a trace is a shipped trace's name or a path"),
    ({}, "at least one of rate, delay, loss, queue, trace, trace_offset"),
])
def test_bad_switches_are_refused(fields: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        ev(**fields)


@pytest.mark.parametrize(("links", "event", "field", "problem"), [
    ({"client:eth1": WIFI}, {"trace": "no-such-trace"}, "traffic.events[0].trace", "no shipped trace of that name"),
    ({"client:eth1": WIFI}, {"trace": "bad.trace"}, "traffic.events[0].trace",
     "bad.trace:2: 1 ms is before the previous line's 3 ms"),
    ({"client:eth1": {"rate": "20mbit", "delay": "5ms"}}, {"trace": "wifi-walk-12s"}, "traffic.events[0].trace",
     "replays no trace from the start"),
    # both directions by default: the fixed-rate egress cannot switch
    ({"client:eth1": {"delay": "5ms", "egress": {"rate": "5mbit"}, "ingress": {"trace": "const-24mbit"}}},
     {"trace_offset": "1s"}, "traffic.events[0].trace_offset", "client:eth1->ra:eth1 replays no trace"),
])
def test_bad_lab_switches_are_one_line_naming_the_field(tmp_path: Path, links: dict[str, Any],
                                                        event: dict[str, Any], field: str, problem: str) -> None:
    with pytest.raises(LabInputError) as e:
        make_lab(tmp_path, links, [{"at": "2s", "action": "link_change", "link": "client:eth1", **event}])
    assert e.value.field == field and problem in e.value.problem, str(e.value)
    assert "\n" not in str(e.value)


# ------------------------------------------------------------------ commands
def test_a_switch_is_the_delay_lines_control_with_the_trace(tmp_path: Path) -> None:
    lab = make_lab(tmp_path, {"client:eth1": WIFI}, [
        {"at": "2s", "action": "link_change", "link": "client:eth1", "trace": "wifi-walk-12s"},
        {"at": "3s", "action": "link_change", "link": "client:eth1", "trace": "mine.trace", "trace_offset": "1.5s",
         "delay": "8ms"},
        {"at": "4s", "action": "link_change", "link": "client:eth1", "trace_offset": "0s"},
    ])
    env = env_of(lab)
    first, second, third = resolve_timeline(env, list(lab.scenarios[0].body.traffic.events))
    ctl = str(Path("/opt/dl/mptcplab-delayline-ctl"))
    walk = str(traces_dir() / "wifi-walk-12s.trace")
    # both directions, each its receiver's delay line: ra receives client:eth1's egress
    assert [(c.node, c.argv) for c in first.cmds] == [
        ("ra", (ctl, "<control file>", "5000", "0", walk, "0")),
        ("client", (ctl, "<control file>", "5000", "0", walk, "0")),
    ]
    mine = str((lab.path / "mine.trace").resolve())
    # a delay with the switch: per direction the delay change, then the switch carrying the new delay
    assert [c.argv[2:] for c in second.cmds] == [("8000", "0"), ("8000", "0", mine, "1500")] * 2
    # an offset alone restarts the current trace (mine.trace) there, delay kept
    assert [c.argv[2:] for c in third.cmds] == [("8000", "0", mine, "0")] * 2
    assert "trace -> wifi-walk-12s from 0 s" in (first.cmds[0].why or "")
    # the shapes follow: the link now replays mine.trace from 0
    shape = env.shapes[("client:eth1", "ra:eth1")]
    assert shape.trace is not None and shape.trace.name == "mine" and shape.trace_offset_s == 0


def test_one_direction_switches_only_that_egress(tmp_path: Path) -> None:
    lab = make_lab(tmp_path, {"client:eth1": {"delay": "5ms", "egress": {"rate": "5mbit"},
                                              "ingress": {"trace": "const-24mbit"}}},
                   [{"at": "2s", "action": "link_change", "link": "ra:eth1", "direction": "one",
                     "trace": "wifi-walk-12s"}])
    (r,) = resolve_timeline(env_of(lab), list(lab.scenarios[0].body.traffic.events))
    assert [c.node for c in r.cmds] == ["client"] and r.cmds[0].argv[-2] == str(traces_dir() / "wifi-walk-12s.trace")


def test_netem_and_a_direction_without_a_trace_refuse() -> None:
    t = trace_for("const-24mbit", ".")
    dl = DirectedLink(Endpoint("a", "eth1"), Endpoint("b", "eth1"), LinkShape.parse(delay="5ms", trace=t), 1500)
    walk = LinkShape.parse(delay="5ms", trace=trace_for("wifi-walk-12s", "."))
    with pytest.raises(ValueError, match="netem replays no delivery trace"):
        NetemEmulator().trace_switch_cmds(dl, walk)
    fixed = DirectedLink(dl.src, dl.dst, LinkShape.parse(delay="5ms", rate="10mbit"), 1500)
    with pytest.raises(ValueError, match="replays no trace"):
        NfqueueEmulator(binary=Path("/bin/true")).trace_switch_cmds(fixed, walk)


def test_check_timelines_accepts_a_switch_with_the_nfqueue_emulator(tmp_path: Path) -> None:
    lab = make_lab(tmp_path, {"client:eth1": WIFI},
                   [{"at": "2s", "action": "link_change", "link": "client:eth1", "trace": "wifi-walk-12s"}])
    check_timelines(lab.topology, lab.scenarios, NfqueueEmulator(binary=Path("/bin/true")),
                    str(lab.path / "experiment.yml"))


# ------------------------------------------------------------------ the C client
def _ctl() -> Path:
    p = ctl_binary()
    if not (p.is_file() and os.access(p, os.X_OK)):
        pytest.skip("mptcplab-delayline-ctl not built (make -C native)")
    return p


def test_the_client_writes_the_trace_line_and_refuses_a_bad_trace(tmp_path: Path) -> None:
    ctl = _ctl()
    control = tmp_path / "x.ctl"
    walk = traces_dir() / "wifi-walk-12s.trace"
    bad = tmp_path / "bad.trace"
    bad.write_text("5\n2\n")
    # a stand-in "delay line" whose command line names the control file (the client checks
    # that before it signals); SIGUSR1 ends it, which is all the client does to it
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", "--control", str(control)])
    try:
        control.write_text(f"{holder.pid} 5000 0\n")
        r = subprocess.run([str(ctl), str(control), "5000", "0", str(bad), "0"], capture_output=True, text=True)
        assert r.returncode == 1 and "bad.trace:2: 2 ms is before" in r.stderr, r.stderr
        assert control.read_text() == f"{holder.pid} 5000 0\n"  # untouched, nobody signalled
        assert holder.poll() is None
        r = subprocess.run([str(ctl), str(control), "6000", "0", str(walk), "1500"], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert control.read_text() == f"{holder.pid} 6000 0\ntrace 1500 {walk}\n"
        assert "trace -> " in r.stdout
        assert holder.wait(timeout=10) != 0  # it got the signal
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    # the pid check refuses a process that is not the delay line of that file
    r = subprocess.run([str(ctl), str(control), "5000", "0", str(walk), "1500"], capture_output=True, text=True)
    assert r.returncode == 1 and ("is not the delay line" in r.stderr or "cannot read" in r.stderr), r.stderr
