"""A path the lab took out of use during the run is judged over its time in use
(analysis/contribution.py; issue 14): the numbers of labs/asym's full run."""

from __future__ import annotations

from pathlib import Path

from mptcplab.analysis import FlowSpec
from mptcplab.analysis.contribution import assess, shortfall
from mptcplab.analysis.labspec import retired_paths
from mptcplab.analysis.model import SubflowResult
from mptcplab.lab.loader import load_lab
from mptcplab.lab.network import build_network
from mptcplab.record.events import event_from_row

REPO = Path(__file__).resolve().parents[2]
SPEC = FlowSpec("10.0.0.1", 5201, {"10.0.1.2": "link01", "10.0.2.2": "link02"}, ("link01", "link02"), True,
                path_rates_bps={"link01": 100e6, "link02": 100e6})


def sub(path: str, acked: int, first: float, last: float, port: int) -> SubflowResult:
    return SubflowResult(path=path, src="10.0.1.2" if path == "link01" else "10.0.2.2", sport=port,
                         dst="10.0.0.1", dport=5201, initial=path == "link01", established=True,
                         bytes=acked, retrans_bytes=0, retransmissions=0, share=0.0, segments=acked // 1448,
                         median_seg=1448.0, max_seg=1448, max_frame=1500, icmp_frag_needed=0, icmp_first_t=None,
                         icmp_mtus=[], first_data_t=first, last_data_t=last, syn_attempts=1, rst=False,
                         acked_bytes=acked)


def s3_linkdown(retired_t: float | None, b_bytes: int = 942040, b_first: float = 1.008,
                by: str = "link client:eth2 down (timeline)") -> list[SubflowResult]:
    """s3-linkdown rep: link02 delivered 942,040 of 62,275,805 bytes, data 1.008-5.082 s."""
    a = sub("link01", 62275805 - b_bytes, 0.001, 10.0, 40000)
    b = sub("link02", b_bytes, b_first, 5.082, 50000)
    if retired_t is not None:
        b.retired_t, b.retired_by = retired_t, by
    rs = [a, b]
    assess(rs, SPEC)
    return rs


def test_s3_linkdown_numbers_fail_without_retirement_and_pass_with_it():
    a, b = s3_linkdown(None)
    assert a.contributed and not b.contributed
    assert "expected share 0.500" in shortfall(b, [a, b])
    a, b = s3_linkdown(4.98)
    assert a.contributed and b.contributed
    assert b.expected_share == 0.5 and a.expected_share == 0.5  # retirement moves no one's bar


def test_a_path_demoted_before_the_floor_still_fails_and_says_when():
    a, b = s3_linkdown(0.893, b_bytes=5696, b_first=0.2, by="demoted (endpoint flagged backup) by "
                                                             "controller:dynamic_threshold")
    assert not b.contributed
    text = shortfall(b, [a, b])
    assert "floor of 10 full segments" in text and "before it was retired at t=0.893 s" in text
    assert "demoted" in text


def test_a_retired_path_that_carried_nothing_before_fails():
    a, b = s3_linkdown(4.98, b_bytes=0)
    assert not b.contributed
    a, b = s3_linkdown(4.98, b_first=6.0)  # data only after the retirement: not its time in use
    assert not b.contributed and "not before it was retired at t=4.980 s" in shortfall(b, [a, b])


def asym(scenario: str):
    lab = load_lab(REPO / "labs" / "asym")
    sc = next(s for s in lab.scenarios if s.name == scenario)
    return sc.body, build_network(lab.topology, sc.body)


def row(epoch: float, action: str, target: str, source: str = "timeline", commands: str = "", rc: str = "0"):
    """An events.csv row of the format before the typed columns (2026-11-23's full run)."""
    return {"planned_s": "1.0", "epoch_s": str(epoch), "action": action, "target": target, "source": source,
            "commands": commands, "rc": rc}


def retired(body, net, flow, rows: list[dict[str, str]]):
    """retired_paths over rows read as read_events reads them (typed columns derived)."""
    return retired_paths(body, net, flow, [event_from_row(r) for r in rows])


def test_retired_paths_from_the_timeline_and_the_controllers_events():
    body, net = asym("s3-linkdown")
    flow = body.traffic.flows["main"]
    b_ip = str(net.address("client:eth2"))
    # events.csv rows as the run writes them (the full run's s3-linkdown, s3-epdel, s3-dt)
    got, why = retired(body, net, flow, [row(100.0, "link_down", "client:eth2 (both)")])
    assert got == {"link02": 100.0} and why == {"link02": "link client:eth2 down (timeline)"}
    got, why = retired(body, net, flow, [row(100.0, "endpoint_delete", "client id 2")])
    assert got == {"link02": 100.0} and "endpoint deleted" in why["link02"]
    demote = row(100.9, "endpoint_flags", f"client {b_ip}", "controller:dynamic_threshold",
                 f"ip -n x-client mptcp endpoint change {b_ip} backup")
    got, why = retired(body, net, flow, [demote])
    assert got == {"link02": 100.9} and "controller:dynamic_threshold" in why["link02"]
    # a re-probe that stayed (nobackup last): in use at the end, not retired
    back = {**demote, "epoch_s": "103.0", "commands": f"ip mptcp endpoint change {b_ip} nobackup"}
    assert retired(body, net, flow, [demote, back]) == ({}, {})
    # demoted again after the re-probe: retired from the last demotion
    again = {**demote, "epoch_s": "103.5"}
    assert retired(body, net, flow, [demote, back, again])[0] == {"link02": 103.5}
    # a link cut and put back; an action that failed or never ran
    up = row(101.0, "link_up", "client:eth2 (both)")
    assert retired(body, net, flow, [row(100.0, "link_down", "client:eth2 (both)"), up]) == ({}, {})
    assert retired(body, net, flow, [row(100.0, "link_down", "client:eth2 (both)", rc="1")]) == ({}, {})
    # nothing in the timeline: nothing retired (every lab without events is judged as before)
    assert retired(body, net, flow, []) == ({}, {})
