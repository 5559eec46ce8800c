"""Probes without a kernel: the parsers of each probe's raw files, the join with the
capture's subflows, the tracefs instance set-up order and clean's ownership rules,
and the dry run's probe commands."""

from __future__ import annotations

import io
import json
import os
import subprocess
from contextlib import redirect_stdout
from pathlib import Path

import pandas as pd
import pytest

from mptcplab.analysis.model import SubflowResult
from mptcplab.probes import tracefs
from mptcplab.probes.join import subflow_series
from mptcplab.probes.monitor import parse_monitor
from mptcplab.probes.nstat import counter_rows
from mptcplab.probes.tcp_probe import events, lost_events, parse_trace

PROBE = ("          iperf3-1 [001] ..s2. {t}: tcp_probe: family={fam} src={src} dest={dst} mark=0x5 data_len=0 "
         "snd_nxt=0x10 snd_una=0x8 snd_cwnd={cwnd} ssthresh=7 snd_wnd=64000 srtt={srtt} rcv_wnd=1 "
         "sock_cookie=3 skbaddr=00000000aa skaddr={sk}")
RETRANS = ("          <idle>-0 [000] ..s2. {t}: tcp_retransmit_skb: skbaddr=00000000bb skaddr={sk} "
           "family=AF_INET sport=40000 dport=5201 saddr=10.0.1.2 daddr=10.0.3.2 saddrv6=::ffff:10.0.1.2 "
           "daddrv6=::ffff:10.0.3.2 state=TCP_ESTABLISHED err=0")


def test_tcp_probe_lines_parse_onto_the_realtime_clock_and_v4_mapped_addresses_become_ipv4() -> None:
    text = "\n".join([
        PROBE.format(t="100.000001", fam="AF_INET", src="10.0.1.2:40000", dst="10.0.3.2:5201", cwnd=10, srtt=2000,
                     sk="00000000s1"),
        PROBE.format(t="100.500000", fam="AF_INET6", src="[::ffff:10.0.3.2]:5201", dst="[::ffff:10.0.1.2]:40000",
                     cwnd=10, srtt=99, sk="00000000s2"),
        RETRANS.format(t="100.6", sk="00000000s1"),   # ours: its socket has tcp_probe samples
        RETRANS.format(t="100.7", sk="00000000zz"),   # another run's socket on the same ports
        "CPU:1 [LOST 12 EVENTS]",
    ])
    df = parse_trace(text, offset=1_000.0)
    assert list(df["event"]) == ["tcp_probe", "tcp_probe", "tcp_retransmit_skb"]
    assert df["t"].iloc[0] == pytest.approx(1100.000001)
    assert (df["src"].iloc[1], df["sport"].iloc[1]) == ("10.0.3.2", 5201)
    assert df["snd_cwnd"].iloc[0] == 10 and df["srtt_us"].iloc[0] == 2000 and df["snd_nxt"].iloc[0] == 16
    assert lost_events(text) == 12


def test_the_tcp_probe_filter_selects_the_run_mark_and_the_flow_ports() -> None:
    evs = {e.event: e.filter for e in events(0x1234, [5201, 5202])}
    assert evs["tcp/tcp_probe"] == ("mark == 0x1234 && (sport == 5201 || dport == 5201 || sport == 5202 || "
                                    "dport == 5202)")
    assert "mark" not in evs["tcp/tcp_retransmit_skb"]  # an outgoing skb carries no mark


def test_instance_setup_sets_clock_and_filters_before_enabling_and_turns_tracing_on_last() -> None:
    writes = [(p.name, p.parent.name, v) for p, v in tracefs.setup_writes("mptcplab-0000000a", events(3, [5201]))]
    names = [w[0] for w in writes]
    assert names[0] == "trace_clock" and writes[0][2] == "mono"
    assert names[-1] == "tracing_on"
    assert max(i for i, n in enumerate(names) if n == "filter") < min(i for i, n in enumerate(names) if n == "enable")


def test_monitor_lines_parse_with_their_time_and_the_events_iproute2_6_1_cannot_name() -> None:
    text = ("[2026-11-23T03:16:57.428571] [UNKNOWN 15]\n"
            "[2026-11-23T03:16:57.518192] [SF_ESTABLISHED] token=6a41d87a remid=0 locid=1 saddr4=10.0.2.2 "
            "daddr4=10.0.3.2 sport=41705 dport=5201 backup=0 ifindex=3\n"
            "[2026-11-23T03:16:57.517931] [SF_ESTABLISHED] token=8024a4d7 remid=1 locid=0 saddr6=::ffff:10.0.3.2 "
            "daddr6=::ffff:10.0.2.2 sport=5201 dport=41705 backup=0\n"
            "garbage\n")
    rows = parse_monitor("client", text)
    assert [r["event"] for r in rows] == ["listener_created", "sf_established", "sf_established"]
    r = rows[1]
    assert (r["saddr"], r["sport"], r["dport"], r["backup"], r["locid"]) == ("10.0.2.2", 41705, 5201, 0, 1)
    assert rows[2]["saddr"] == "::ffff:10.0.3.2"
    assert rows[2]["t"] - rows[1]["t"] == pytest.approx(-0.000261, abs=1e-6)


def test_nstat_rows_are_deltas_of_the_mptcp_and_tcp_counters_only() -> None:
    before = json.dumps({"kernel": {"MPTcpExtMPJoinSynRx": 1, "TcpExtTCPLostRetransmit": 5, "IpInReceives": 9}})
    after = json.dumps({"kernel": {"MPTcpExtMPJoinSynRx": 3, "TcpExtTCPLostRetransmit": 5, "IpInReceives": 90,
                                   "TcpRetransSegs": 4}})
    rows = {r["counter"]: r for r in counter_rows("server", before, after)}
    assert set(rows) == {"MPTcpExtMPJoinSynRx", "TcpExtTCPLostRetransmit", "TcpRetransSegs"}
    assert rows["MPTcpExtMPJoinSynRx"]["delta"] == 2 and rows["TcpRetransSegs"]["delta"] == 4
    assert rows["TcpExtTCPLostRetransmit"]["delta"] == 0


def _sf(src: str, sport: int, path: str) -> SubflowResult:
    return SubflowResult(path=path, src=src, sport=sport, dst="10.0.3.2", dport=5201, initial=path == "A",
                         established=True, bytes=1, retrans_bytes=0, retransmissions=0, share=0.5, segments=1,
                         median_seg=None, max_seg=None, max_frame=None, icmp_frag_needed=0, icmp_first_t=None,
                         icmp_mtus=[], first_data_t=None, last_data_t=None, syn_attempts=1, rst=False)


def test_the_join_takes_the_data_senders_socket_and_its_last_sample_in_each_bin() -> None:
    t0 = 1000.0
    subs = [_sf("10.0.1.2", 40000, "A"), _sf("10.0.2.2", 40001, "B")]
    ts = pd.DataFrame({"t": [0.0, 0.1, 0.0, 0.1], "path": ["A", "A", "B", "B"],
                       "subflow": ["10.0.1.2:40000"] * 2 + ["10.0.2.2:40001"] * 2,
                       "bytes": [100, 200, 300, 400], "mbps": [0.008, 0.016, 0.024, 0.032]})
    rows = [  # client (sender in an upload) of A: two samples in bin 0, one in bin 1
        ("10.0.1.2", 40000, "10.0.3.2", 5201, 10, 1000, t0 + 0.01), ("10.0.1.2", 40000, "10.0.3.2", 5201, 12, 1100,
                                                                       t0 + 0.05),
        ("10.0.1.2", 40000, "10.0.3.2", 5201, 20, 1200, t0 + 0.15),
        # the server's (receiving) socket of A: must not be taken for the sender's cwnd
        ("10.0.3.2", 5201, "10.0.1.2", 40000, 99, 5, t0 + 0.02),
    ]
    samples = pd.DataFrame([{"event": "tcp_probe", "src": s, "sport": sp, "dst": d, "dport": dp, "snd_cwnd": c,
                             "ssthresh": 7, "srtt_us": r, "snd_wnd": 1, "t": t} for s, sp, d, dp, c, r, t in rows])
    series = subflow_series(ts, subs, samples, t0, upload=True)
    a = series[series["path"] == "A"]
    assert list(a["t"]) == [0.0, 0.1]
    assert list(a["snd_cwnd"]) == [12, 20] and list(a["samples"]) == [2, 1]
    assert a["srtt_ms"].iloc[0] == pytest.approx(1.1) and a["bytes"].iloc[1] == 200
    b = series[series["path"] == "B"]
    assert b["snd_cwnd"].isna().all() and list(b["mbps"]) == [0.024, 0.032]
    down = subflow_series(ts, subs, samples, t0, upload=False)  # the server sends: its socket is the one
    assert list(down[down["path"] == "A"].dropna(subset=["snd_cwnd"])["snd_cwnd"]) == [99]


@pytest.fixture
def fake_tracefs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from mptcplab import runstate

    root = tmp_path / "tracing"
    (root / "instances").mkdir(parents=True)
    monkeypatch.setattr(tracefs, "TRACEFS", root)
    monkeypatch.setattr(runstate, "STATE_DIR", tmp_path / "state")
    return root


def _dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def test_clean_removes_dead_owners_and_unowned_instances_and_spares_a_live_owner(fake_tracefs: Path) -> None:
    from mptcplab import runstate

    inst = fake_tracefs / "instances"
    for name in ("mptcplab-0000000d", "mptcplab-0000000e", "mptcplab-0000000f"):
        (inst / name).mkdir()
    (inst / "someone-else").mkdir()  # not ours, whatever its state
    runstate.STATE_DIR.mkdir()
    (runstate.STATE_DIR / "tracefs-mptcplab-0000000d.json").write_text(json.dumps({"pid": _dead_pid()}))
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        (runstate.STATE_DIR / "tracefs-mptcplab-0000000e.json").write_text(json.dumps({"pid": sleeper.pid}))
        removed = tracefs.clean()
        assert sorted(removed) == ["mptcplab-0000000d", "mptcplab-0000000f"]
        assert sorted(p.name for p in inst.iterdir()) == ["mptcplab-0000000e", "someone-else"]
        assert not (runstate.STATE_DIR / "tracefs-mptcplab-0000000d.json").exists()
        assert tracefs.clean(all_runs=True) == ["mptcplab-0000000e"]
    finally:
        sleeper.kill()
        sleeper.wait()


def test_the_dry_run_prints_the_probe_commands_and_creates_nothing(tmp_path: Path) -> None:
    from mptcplab.cli import main
    from tests.integration.probelab import write

    lab = write(tmp_path, "probes2")
    out = io.StringIO()
    before = set(os.listdir("/sys/kernel/tracing/instances")) if os.path.isdir("/sys/kernel/tracing/instances") \
        else set()
    with redirect_stdout(out):
        assert main(["run", str(lab), "--quick", "--dry-run", "--results", str(tmp_path / "r")]) == 0
    text = out.getvalue()
    assert "# step: start probes" in text
    assert "nft add rule inet mptcplab_probe runmark meta l4proto tcp meta mark set 0x1" in text
    assert "ip netns exec mpl000000-server nstat -a -z -s -j" in text
    assert "ip -n mpl000000-client -ts mptcp monitor &" in text
    assert "#   (runner) mkdir /sys/kernel/tracing/instances/mptcplab-00000001" in text
    assert text.index("# step: start probes") < text.index("# step: traffic") < text.index("# step: stop probes")
    # the capture is listening before any other probe starts
    assert text.index("# step: start probes") < text.index(" tcpdump -i ") < text.index("nstat -a -z -s -j")
    assert not (tmp_path / "r").exists()
    after = set(os.listdir("/sys/kernel/tracing/instances")) if os.path.isdir("/sys/kernel/tracing/instances") \
        else set()
    assert {n for n in after - before if n.startswith("mptcplab-")} == set()


def test_probes_are_accepted_periodic_ss_included(tmp_path: Path) -> None:
    from mptcplab.lab.loader import load_lab, unsupported
    from tests.integration.labkit import write_lab
    from tests.integration.probelab import TOPOLOGY, experiment

    unsupported(load_lab(write_lab(tmp_path, "ok", TOPOLOGY, experiment())))
    exp = experiment(probes={"tcp_probe": True})
    exp["probes"]["ss_interval"] = "100ms"
    unsupported(load_lab(write_lab(tmp_path, "ss", TOPOLOGY, exp)))  # the memory probe runs it now


def test_the_cwnd_figure_draws_one_line_per_subflow_and_says_when_there_is_none() -> None:
    from mptcplab.results.figures import plot_cwnd

    series = pd.DataFrame({"scenario": ["s"] * 4, "rep": [1] * 4, "t": [0.0, 0.1, 0.0, 0.1],
                           "path": ["A", "A", "B", "B"], "subflow": ["a:1", "a:1", "b:2", "b:2"],
                           "snd_cwnd": [10, 20, 5, None]})
    fig = plot_cwnd(series)
    (ax,) = [a for a in fig.axes if a.get_visible()]
    assert sorted(str(line.get_label()) for line in ax.get_lines()) == ["A a:1", "B b:2"]
    empty = plot_cwnd(series.assign(snd_cwnd=None))
    assert "tcp_probe" in empty.axes[0].texts[0].get_text()


def test_preflight_names_a_missing_tracepoint_or_tool_only_for_scenarios_that_use_the_probe(tmp_path: Path) -> None:
    from mptcplab.lab.loader import load_lab
    from mptcplab.preflight import HostFacts, _probe_problems
    from tests.integration.labkit import write_lab
    from tests.integration.probelab import TOPOLOGY, experiment

    lab = load_lab(write_lab(tmp_path, "p", TOPOLOGY, experiment()))
    bare = HostFacts(euid=0, congestion_controls=None, schedulers=None, sysctls=None, tools=frozenset(),
                     tracepoints=frozenset({"tcp/tcp_retransmit_skb"}))
    msgs = [str(p) for p in _probe_problems(lab.scenarios, bare)]
    assert any("nstat not found" in m for m in msgs) and any("tcp:tcp_probe" in m for m in msgs)
    unmounted = HostFacts(euid=0, congestion_controls=None, schedulers=None, sysctls=None,
                          tools=frozenset({"nstat"}), tracepoints=None)
    assert _probe_problems(lab.scenarios, unmounted) == []  # a run mounts tracefs and finds out then
    off = load_lab(write_lab(tmp_path, "q", TOPOLOGY, experiment(probes={})))
    assert _probe_problems(off.scenarios, bare) == []
