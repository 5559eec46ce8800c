"""Per-direction link shapes: the lab's egress/ingress, the link model's two directions,
the commands each emulator generates for them, the containerlab rendering and the link
check's per-direction rate checks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from mptcplab.backends.containerlab import ContainerlabBackend
from mptcplab.backends.netns import NetnsBackend
from mptcplab.emulation.linkmodel import Endpoint
from mptcplab.emulation.nfqueue import NfqueueEmulator
from mptcplab.emulation.tc import NetemEmulator
from mptcplab.errors import LabInputError
from mptcplab.lab.loader import load_lab
from mptcplab.lab.model import Lab
from mptcplab.lab.network import Link, build_network
from mptcplab.linkcheck import Check, expected_rtt_s, rtt_checks
from mptcplab.net.plan import build_plan
from mptcplab.record.model import Manifest, TraceReplay
from mptcplab.steps.base import Rep, RunContext
from mptcplab.steps.links import LinkCheck, _shape_dict, link_calibration

BASE = Path(__file__).resolve().parents[1] / "data" / "bad-labs" / "_base"
CLIENT_ETH1 = Endpoint("client", "eth1")
RA_ETH1 = Endpoint("ra", "eth1")


def make_lab(tmp_path: Path, links: dict[str, Any], **top: Any) -> Lab:
    """The bad-lab suite's valid base with other ``links`` (and top-level fields)."""
    d = tmp_path / "lab"
    shutil.copytree(BASE, d)
    exp = yaml.safe_load((d / "experiment.yml").read_text())
    exp["links"] = links
    exp.update(top)
    (d / "experiment.yml").write_text(yaml.safe_dump(exp))
    return load_lab(d)


def link_of(lab: Lab, ep: str, scenario: int = 0) -> Link:
    net = build_network(lab.topology, lab.scenarios[scenario].body)
    return net.link_of(ep)


def test_symmetric_form_is_both_directions(tmp_path: Path) -> None:
    link = link_of(make_lab(tmp_path, {"client:eth1": {"rate": "40mbit", "delay": "5ms"}}), "client:eth1")
    assert link.symmetric and link.shape_ab == link.shape_ba
    assert link.shape_ab.rate_bps == 40_000_000 and link.shape_ab.delay_s == pytest.approx(0.005)


def test_egress_and_ingress_override_field_by_field(tmp_path: Path) -> None:
    lab = make_lab(tmp_path, {"client:eth1": {"rate": "40mbit", "delay": "5ms", "egress": {"rate": "4mbit"},
                                              "ingress": {"delay": "20ms", "loss": "1%"}}})
    link = link_of(lab, "client:eth1")
    up, down = link.shape_from(CLIENT_ETH1), link.shape_from(RA_ETH1)
    assert (up.rate_bps, up.delay_s, up.loss) == (4_000_000, pytest.approx(0.005), 0.0)
    assert (down.rate_bps, down.delay_s, down.loss) == (40_000_000, pytest.approx(0.020), pytest.approx(0.01))
    assert not link.symmetric


def test_directions_are_relative_to_the_endpoint_that_names_the_link(tmp_path: Path) -> None:
    # keyed by the router's end: its egress is router -> client
    link = link_of(make_lab(tmp_path, {"ra:eth1": {"egress": {"rate": "4mbit"}, "ingress": {"rate": "40mbit"}}}),
                   "client:eth1")
    assert link.shape_from(RA_ETH1).rate_bps == 4_000_000
    assert link.shape_from(CLIENT_ETH1).rate_bps == 40_000_000


def test_a_direction_alone_shapes_only_that_direction(tmp_path: Path) -> None:
    link = link_of(make_lab(tmp_path, {"client:eth1": {"egress": {"rate": "4mbit"}}}), "client:eth1")
    assert link.impaired
    assert link.shape_from(CLIENT_ETH1).rate_bps == 4_000_000
    assert not link.shape_from(RA_ETH1).impaired


def test_a_bad_direction_names_its_field(tmp_path: Path) -> None:
    with pytest.raises(LabInputError) as e:
        make_lab(tmp_path, {"client:eth1": {"rate": "40mbit", "ingress": {"queue": "lots"}}})
    assert e.value.field == "links.client:eth1.ingress.queue"
    assert e.value.file.endswith("experiment.yml") and "\n" not in str(e.value)


def _asym(tmp_path: Path) -> Lab:
    return make_lab(tmp_path, {"client:eth1": {"rate": "40mbit", "delay": "10ms",
                                               "egress": {"rate": "4mbit"}, "ingress": {"delay": "30ms"}}})


def _rendered(lab: Lab, emulator: Any, backend: Any | None = None) -> list[str]:
    be = backend or NetnsBackend(prefix="mplabcdef-")
    plan = build_plan(lab.topology, lab.scenarios[0], emulator, be, Path("/tmp/x"))
    daemons = [be.render(type(plan.emulation[0])(d.argv, node=d.node)) for d in plan.daemons]
    return [be.render(c) for c in plan.emulation] + daemons


def test_netem_shapes_each_direction_at_its_senders_egress(tmp_path: Path) -> None:
    lines = _rendered(_asym(tmp_path), NetemEmulator())
    # client -> ra: 4 Mbit/s after 10 ms; ra -> client: 40 Mbit/s after 30 ms
    assert any(ln.startswith("ip netns exec mplabcdef-client tc qdisc replace dev eth1 root handle 1: netem")
               and "delay 10000us" in ln for ln in lines)
    assert any(ln.startswith("ip netns exec mplabcdef-ra tc qdisc replace dev eth1 root handle 1: netem")
               and "delay 30000us" in ln for ln in lines)
    assert any("mplabcdef-client tc qdisc replace dev eth1 parent 1:1" in ln and "rate 4mbit" in ln for ln in lines)
    assert any("mplabcdef-ra tc qdisc replace dev eth1 parent 1:1" in ln and "rate 40mbit" in ln for ln in lines)


def test_nfqueue_rate_at_the_sender_delay_at_the_receiver(tmp_path: Path) -> None:
    # --rate-in-tbf: the rate by tbf at each direction's sender
    lines = _rendered(_asym(tmp_path), NfqueueEmulator(firewall="nft", binary=Path("/bin/true"),
                                                        rate_in_delayline=False))
    assert "ip netns exec mplabcdef-client tc qdisc replace dev eth1 root handle 1: tbf rate 4mbit burst 18028 " \
           "limit 25000" in lines
    assert "ip netns exec mplabcdef-ra tc qdisc replace dev eth1 root handle 1: tbf rate 40mbit burst 18028 " \
           "limit 250000" in lines
    # client -> ra is delayed 10 ms by a delay line at ra's ingress, ra -> client 30 ms at the client's
    dl_ra = next(ln for ln in lines if "mplabcdef-ra /bin/true" in ln)
    dl_client = next(ln for ln in lines if "mplabcdef-client /bin/true" in ln)
    assert "--delay-us 10000" in dl_ra and "--delay-us 30000" in dl_client
    rules = [ln for ln in lines if " nft add rule " in ln]
    assert len(rules) == 2
    assert any("mplabcdef-ra nft add rule inet mptcplab rx_eth1" in ln for ln in rules)
    assert any("mplabcdef-client nft add rule inet mptcplab rx_eth1" in ln for ln in rules)


def test_nfqueue_default_paces_each_direction_in_its_delay_line(tmp_path: Path) -> None:
    # the default: a delayed direction's rate and queue are the receiver's delay line's
    lines = _rendered(_asym(tmp_path), NfqueueEmulator(firewall="nft", binary=Path("/bin/true")))
    assert not any(" tbf rate " in ln for ln in lines)
    dl_ra = next(ln for ln in lines if "mplabcdef-ra /bin/true" in ln)
    dl_client = next(ln for ln in lines if "mplabcdef-client /bin/true" in ln)
    assert "--delay-us 10000" in dl_ra and "--rate-bps 4000000" in dl_ra
    assert "--delay-us 30000" in dl_client and "--rate-bps 40000000" in dl_client


def test_containerlab_applies_each_direction_in_its_container(tmp_path: Path) -> None:
    lab = _asym(tmp_path)
    lines = _rendered(lab, NetemEmulator(), ContainerlabBackend(lab.path / "topology.clab.yml", lab_name="mplabc",
                                                               workdir=tmp_path / "w", deploy=False))
    client = [ln for ln in lines if "clab-mplabc-client" in ln and "tc qdisc" in ln]
    ra = [ln for ln in lines if "clab-mplabc-ra" in ln and "tc qdisc" in ln]
    assert any("rate 4mbit" in ln for ln in client) and not any("rate 40mbit" in ln for ln in client)
    assert any("rate 40mbit" in ln for ln in ra) and not any("rate 4mbit" in ln for ln in ra)


def test_rtt_of_an_asymmetric_link_is_the_sum_of_its_directions(tmp_path: Path) -> None:
    link = link_of(_asym(tmp_path), "client:eth1")
    exp = expected_rtt_s(link.shape_ab, link.shape_ba)
    ping_bits = (56 + 28 + 14) * 8
    assert exp == pytest.approx(0.040 + ping_bits / 4e6 + ping_bits / 40e6)
    ok = rtt_checks(link.shape_ab, "rtt min/avg/max/mdev = 40.300/40.5/41/0.1 ms\n10 packets transmitted, "
                    "10 received", back=link.shape_ba)
    assert ok[0].ok and ok[0].direction == "both"
    # a link checked as if symmetric (2 x 10 ms) would call the same ping out of tolerance
    assert not rtt_checks(link.shape_ab, "rtt min/avg/max/mdev = 40.300/40.5/41/0.1 ms\n")[0].ok


def _link_check_lines(lab: Lab) -> list[str]:
    be = NetnsBackend(prefix="mplabcdef-")
    sc = lab.scenarios[0]
    plan = build_plan(lab.topology, sc, NetemEmulator(), be, Path("/tmp/x"))
    rep = Rep(RunContext(lab, NetemEmulator(), quick=True), sc, Path("/tmp/x"), be, plan)
    return [be.render(p.cmd) for p in LinkCheck().commands(rep) if "iperf3 -c" in " ".join(p.cmd.argv)]


def test_link_check_measures_each_direction_of_an_asymmetric_link(tmp_path: Path) -> None:
    clients = _link_check_lines(_asym(tmp_path))
    # client -> ra from the client, ra -> client from the router, each to the other end
    assert len(clients) == 2
    assert clients[0].startswith("ip netns exec mplabcdef-client iperf3 -c 10.0.1.1 -B 10.0.1.2")
    assert clients[1].startswith("ip netns exec mplabcdef-ra iperf3 -c 10.0.1.2 -B 10.0.1.1")


def test_link_check_of_a_symmetric_link_measures_one_direction(tmp_path: Path) -> None:
    clients = _link_check_lines(make_lab(tmp_path, {"client:eth1": {"rate": "40mbit"}}))
    assert len(clients) == 1 and "mplabcdef-client iperf3 -c 10.0.1.1" in clients[0]


def test_expected_shares_use_the_rate_of_the_direction_the_data_takes(tmp_path: Path) -> None:
    from mptcplab.analysis.labspec import path_rates

    lab = make_lab(tmp_path, {"client:eth1": {"rate": "40mbit", "egress": {"rate": "4mbit"}},
                              "client:eth2": {"rate": "10mbit"}})
    body = lab.scenarios[0].body
    net = build_network(lab.topology, body)
    assert path_rates(body, net, "server", "upload") == {"A": 4e6, "B": 10e6}
    assert path_rates(body, net, "server", "download") == {"A": 40e6, "B": 10e6}


def test_link_check_plans_one_replay_check_per_distinct_trace_direction(tmp_path: Path) -> None:
    """Both directions of a symmetric trace link share one replay check; the dry run shows
    its commands as the runner's (a throwaway line of its own), with the span it checks."""
    lab = make_lab(tmp_path, {"client:eth1": {"trace": "const-24mbit", "delay": "5ms"}},
                   calibration={"trace_seconds": "3s"})
    be = NetnsBackend(prefix="mplabcdef-")
    sc = lab.scenarios[0]
    plan = build_plan(lab.topology, sc, NfqueueEmulator(), be, Path("/tmp/x"))
    rep = Rep(RunContext(lab, NfqueueEmulator(), quick=True), sc, Path("/tmp/x"), be, plan)
    planned = LinkCheck().commands(rep)
    replay = [p for p in planned if p.in_process]
    assert [p.cmd.argv[0] for p in replay] == ["iptables", "chrt", "iperf3", "iperf3"]
    assert "const-24mbit" in replay[0].note and "first 3 s" in replay[0].note
    assert not any("iperf3 -c 10.0" in " ".join(p.cmd.argv) for p in planned)  # no rate check: no rate


def _dict_entry(link: Link, checks: list[Check], rate_measured: bool, replays: list[dict[str, Any]]) -> dict[str, Any]:
    """A link's manifest entry as steps/links.py built it when entries were dicts."""
    ab, ba = link.directions()
    entry = {"link": link.name, "configured": _shape_dict(ab.shape, link.mtu, f"{ab.src}->{ab.dst}"),
             "configured_reverse": _shape_dict(ba.shape, link.mtu, f"{ba.src}->{ba.dst}"),
             "checks": [c.as_dict() for c in checks], "ok": all(c.ok for c in checks),
             "rate_measured_in_this_rep": rate_measured}
    if replays:
        entry["trace_replays"] = replays
    return entry


def test_link_calibration_writes_the_manifest_entry_the_dicts_wrote(tmp_path: Path) -> None:
    """manifest.json's calibration is unchanged by its model (LinkCalibration): the same keys
    in the same order, counts kept as ints (a trace replay's), ``trace_replays`` only for a
    trace link; and the manifest reads it back typed."""
    trace = link_of(make_lab(tmp_path / "t", {"client:eth1": {"trace": "const-24mbit", "delay": "5ms"}}),
                    "client:eth1")
    plain = link_of(make_lab(tmp_path / "p", {"client:eth1": {"rate": "40mbit", "delay": "5ms"}}), "client:eth1")
    rtt = rtt_checks(plain.shape_ab, "rtt min/avg/max/mdev = 10.300/10.5/11/0.1 ms\n", back=plain.shape_ba)
    counts = [Check("trace_windows_out", 0, 3, "<= 0", False, "a->b"), Check("trace_replay", 0, None, "x", False)]
    replays = [{"direction": "a->b", "check": "replay of const-24mbit", "measured_in_this_rep": True}]
    cases = [(plain, rtt, True, []), (trace, rtt + counts, False, replays)]
    for link, checks, measured, rp in cases:
        model = link_calibration(link, checks, measured, [TraceReplay.model_validate(r) for r in rp])
        assert json.dumps(model.model_dump(), indent=2) == json.dumps(_dict_entry(link, checks, measured, rp), indent=2)
    written = [link_calibration(*c[:3], [TraceReplay.model_validate(r) for r in c[3]]).model_dump() for c in cases]
    read = Manifest.model_validate({"calibration": {"s": {"rep1": written}}}).calibration_of("s", 1)
    assert read is not None and read[0].trace_replays is None and not read[1].ok
    assert read[1].trace_replays == [TraceReplay(direction="a->b", check="replay of const-24mbit",
                                                 measured_in_this_rep=True)]
    assert [c.measured for c in read[1].checks][-2:] == [3, None] and isinstance(read[1].checks[-2].configured, int)
