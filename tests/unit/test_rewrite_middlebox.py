"""The rewriting middleboxes (middlebox/rewrite.py): schema, argv, queue rule, where the
plan puts them, and what their counters say."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from pydantic import ValidationError

from mptcplab.lab.loader import load_lab
from mptcplab.lab.schema import ExperimentBody, ModifyPayload, NodeSpec
from mptcplab.middlebox import rewrite
from mptcplab.net.config import middlebox_cmds
from mptcplab.record.model import Repetition
from mptcplab.run import daemon_problems
from mptcplab.steps.base import Rep
from mptcplab.steps.daemons import StopDaemons
from mptcplab.supervise import Daemon, Supervisor

EXE = Path("/x/mptcplab-mbox")
MTU = load_lab(Path(__file__).resolve().parents[2] / "labs" / "mtu")


def body_with(node: str, spec: dict[str, Any]) -> ExperimentBody:
    """The mtu lab's first scenario with ``node`` replaced by ``spec``."""
    body = MTU.scenarios[0].body
    return body.model_copy(update={"nodes": {**body.nodes, node: NodeSpec.model_validate(spec)}})


def test_isn_box_argv_rule_and_daemon(tmp_path: Path) -> None:
    body = body_with("rb1", {"role": "router", "middlebox": [{"kind": "rewrite-isn", "offset": 1000}]})
    cmds, daemons = rewrite.plan(body, 5, tmp_path, EXE)
    (d,) = daemons
    assert d.node == "rb1" and d.ready_marker == "ready"
    assert d.argv == (str(EXE), "--queue", "5", "--stats", str(tmp_path / "mbox-rb1-q5.json"), "isn-offset", "1000")
    assert d.stats_path == str(tmp_path / "mbox-rb1-q5.json")
    (rule,) = cmds
    assert rule.node == "rb1"
    # no --queue-bypass: a box that is not running drops, never passes untouched
    assert rule.argv == ("iptables", "-w", "-t", "mangle", "-A", "FORWARD", "-p", "tcp",
                         "-j", "NFQUEUE", "--queue-num", "5")
    # the nft middlebox table is not made for a rewriting box alone
    assert middlebox_cmds(body, "rb1") == []


def test_payload_box_parameters_and_interface(tmp_path: Path) -> None:
    body = body_with("rb1", {"role": "router", "middlebox": [
        {"kind": "drop-mp-join"},
        {"kind": "modify-payload", "iface": "eth1", "after": 7, "every": 3, "byte_offset": 9}]})
    cmds, (d,) = rewrite.plan(body, 0, tmp_path, EXE)
    assert d.argv[-7:] == ("--after", "7", "--every", "3", "--byte-offset", "9", "payload-flip")
    assert cmds[0].argv[6:8] == ("-i", "eth1")
    assert len(middlebox_cmds(body, "rb1")) == 3  # table, chain, the drop rule: unchanged


def test_defaults_and_no_box(tmp_path: Path) -> None:
    assert rewrite.mode_argv(ModifyPayload(kind="modify-payload")) == (
        "--after", "200", "--every", "50", "--byte-offset", "100", "payload-flip")
    body = body_with("rb1", {"role": "router"})
    assert rewrite.plan(body, 0, tmp_path, EXE) == ([], [])


def test_split_and_coalesce_boxes_argv(tmp_path: Path) -> None:
    body = body_with("rb1", {"role": "router", "middlebox": [{"kind": "split-segments", "after": 5}]})
    _, (d,) = rewrite.plan(body, 2, tmp_path, EXE)
    assert d.argv[-5:] == ("--after", "5", "--every", "1", "split")
    assert middlebox_cmds(body, "rb1") == []  # no nft table for a rewriting box alone
    body = body_with("rb1", {"role": "router", "middlebox": [{"kind": "coalesce-segments", "max_len": 1400}]})
    _, (d,) = rewrite.plan(body, 2, tmp_path, EXE)
    assert d.argv[-7:] == ("--after", "200", "--every", "50", "--max-len", "1400", "merge")


def test_split_and_merge_problems() -> None:
    assert rewrite.problems({"mbox": "split", "split": 3}) == []
    assert rewrite.problems({"mbox": "split", "split": 0, "data_segments": 9, "after": 200})[0].startswith(
        "split no segment")
    assert rewrite.problems({"mbox": "split", "split": 3, "raw_errors": 1}) == [
        "1 second halves of split segments not sent (lost)"]
    assert "merged no segment" in rewrite.problems({"mbox": "merge", "merged": 0, "picked": 4})[0]


@pytest.mark.parametrize("spec", [
    {"role": "host", "middlebox": [{"kind": "rewrite-isn"}]},
    {"role": "router", "middlebox": [{"kind": "rewrite-isn", "offset": 0}]},
    {"role": "router", "middlebox": [{"kind": "rewrite-isn", "offset": 2**32}]},
    {"role": "router", "middlebox": [{"kind": "modify-payload", "every": 0}]},
    {"role": "router", "middlebox": [{"kind": "modify-payload", "flip": 1}]},
    {"role": "router", "middlebox": [{"kind": "rewrite-isn"}, {"kind": "modify-payload"}]},
    {"role": "router", "middlebox": [{"kind": "split-segments"}, {"kind": "coalesce-segments"}]},
    {"role": "router", "middlebox": [{"kind": "coalesce-segments", "max_len": 100}]},
])
def test_bad_boxes_are_refused(spec: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        NodeSpec.model_validate(spec)


def test_plan_queues_follow_the_delay_lines(tmp_path: Path) -> None:
    from mptcplab.backends import get
    from mptcplab.emulation.nfqueue import NfqueueEmulator
    from mptcplab.net.plan import build_plan

    lab = MTU
    sc = lab.scenarios[0]
    body = body_with("rb1", {"role": "router", "middlebox": [{"kind": "rewrite-isn"}]})
    sc = dataclasses.replace(sc, body=body)
    backend, _ = get("netns").for_dry_run(lab, tmp_path)
    plan = build_plan(lab.topology, sc, NfqueueEmulator(binary=EXE), backend, tmp_path)
    queues = [int(d.argv[d.argv.index("--queue") + 1]) for d in plan.daemons]
    # numbered after every emulated direction's queue (used by a delay line or not)
    assert queues[-1] == 2 * sum(link.impaired for link in plan.net.links) > 0
    assert len(queues) == len(set(queues)) and plan.daemons[-1].name.startswith("mbox rewrite-isn rb1")
    # the steering rule comes after the daemons are started (emulation stage), never before
    assert any("NFQUEUE" in c.argv and c.node == "rb1" for c in plan.emulation)
    assert not any("NFQUEUE" in c.argv and c.node == "rb1" for c in plan.config)


def test_problems_say_when_the_box_did_nothing() -> None:
    assert rewrite.problems({"queue": 0, "packets": 5}) == []  # a delay line's stats
    assert rewrite.problems({"mbox": "isn-offset", "seq_rewritten": 10, "enobufs": 0}) == []
    assert rewrite.problems({"mbox": "isn-offset", "seq_rewritten": 0}) == [
        "rewrote no sequence number (no SYN crossed it?)"]
    p = rewrite.problems({"mbox": "payload-flip", "flipped": 0, "data_segments": 40, "after": 200, "enobufs": 2})
    assert p == ["2 netlink overflows (packets lost)", "modified no segment (40 data segments, first 200 left alone)"]


#: a daemon that prints its ready marker and, on SIGTERM, writes argv[2] (JSON) to argv[1]
FAKE = """
import signal, sys, time
def stop(*_):
    open(sys.argv[1], "w").write(sys.argv[2]); sys.exit(0)
signal.signal(signal.SIGTERM, stop)
print("ready", flush=True)
while True: time.sleep(1)
"""


def test_rewriter_counters_go_to_daemon_stats_not_delay_line_stats(tmp_path: Path) -> None:
    box = dataclasses.replace(rewrite.daemon("rb1", ModifyPayload(kind="modify-payload"), 5, tmp_path, EXE),
                              argv=(sys.executable, "-c", FAKE, str(tmp_path / "m.json"), '{"mbox": "payload-flip"}'),
                              stats_path=str(tmp_path / "m.json"))
    line = Daemon(node="ra", argv=(sys.executable, "-c", FAKE, str(tmp_path / "d.json"), '{"packets": 3}'),
                  name="delayline ra:eth1<-client:eth1", stats_path=str(tmp_path / "d.json"), delay_line=True)
    assert not box.delay_line
    with Supervisor(lambda _node, argv: list(argv), tmp_path) as sup:
        sup.start_all([line, box])
        rep = SimpleNamespace(running=sup, extra={})
        StopDaemons().run(cast(Rep, rep))
    assert rep.extra == {"delay_line_stats": {line.name: {"packets": 3}},
                         "daemon_stats": {box.name: {"mbox": "payload-flip"}}}


def test_each_daemon_kind_is_judged_by_its_own_rules() -> None:
    late = {"delay_us": 1000, "lateness_us": {"p99": 50_000}}
    idle = {"mbox": "isn-offset", "seq_rewritten": 0}
    timing, invalid = daemon_problems(Repetition.model_validate(
        {"name": "s", "delay_line_stats": {"delayline a": late, "delayline b": None},
         "daemon_stats": {"mbox rewrite-isn rb1 q5": idle}}))
    assert len(timing) == 1 and timing[0].startswith("delayline a: release lateness p99")
    assert invalid == ["mbox rewrite-isn rb1 q5: rewrote no sequence number (no SYN crossed it?)"]
    assert daemon_problems(Repetition(name="s")) == ([], [])


def test_containerlab_refuses_rewriting_boxes() -> None:
    """mptcplab-mbox is not in the lab images (the containerlab backend lacks the capability):
    refused before anything is deployed; the netns backend has it."""
    from mptcplab.backends import get
    from mptcplab.errors import HostNotReady
    from mptcplab.net.plan import refuse_unsupported

    sc = dataclasses.replace(MTU.scenarios[0], body=body_with("rb1", {"role": "router",
                                                                      "middlebox": [{"kind": "rewrite-isn"}]}))
    with pytest.raises(HostNotReady, match="mptcplab-mbox.*containerlab backend"):
        refuse_unsupported(get("containerlab"), [sc])
    refuse_unsupported(get("containerlab"), [MTU.scenarios[0]])  # without one: fine
    refuse_unsupported(get("netns"), [sc])
