"""``tcp_probe``: the kernel's tcp:tcp_probe tracepoint (one sample per segment a
socket receives on an established connection: cwnd, ssthresh, srtt, snd_wnd,
snd_nxt/una) plus tcp:tcp_retransmit_skb, read from a tracefs instance of this
repetition's own (probes/tracefs.py).

Keeping two concurrent runs apart. The tracepoints are host-wide and two runs of the
same lab use the same addresses and ports in different namespaces, so neither
addresses nor ports tell them apart (and the address fields, ``__u8 saddr[28]``, are
arrays the event filter cannot compare: ``saddr[4] == 10`` is refused, ``saddr ==
0x0a000001`` is accepted but compares strings). What does: the skb mark. Each
repetition picks a random 32-bit mark; an nftables rule in the prerouting hook of
every flow end node sets it on each TCP packet the node receives (a veth crossing
clears the mark, so no other namespace's packets carry it), and tcp_probe's filter
keeps ``mark == <ours>`` on the lab's flow ports. tcp_retransmit_skb has no mark
(the skb is outgoing): it is filtered on the ports and kept at analysis only when
its socket (``skaddr``, hashed the same way in both events) is one of our
tcp_probe sockets.

Time. The instance's trace_clock is ``mono`` (CLOCK_MONOTONIC); time.time() minus
CLOCK_MONOTONIC is measured at start (and at stop, to bound drift) and added to every
sample, so samples are on the capture clock (tcpdump stamps with the same realtime
clock).
"""

from __future__ import annotations

import json
import re
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..commands import Cmd, cmd
from ..steps.base import Planned
from ..warncodes import PROBE_DEGRADED
from .base import Joined, Probe, Setting, probes_dir
from .join import implausible_windows, sender_samples, series
from .tracefs import EventSetting, Instance, instance_dir, setup_writes

if TYPE_CHECKING:
    from ..steps.base import Rep

TRACE_FILE = "tcp_probe.trace"
META_FILE = "tcp_probe.json"
SERIES_FILE = "subflow_series.csv"
REDUCTIONS_FILE = "cwnd_reductions.csv"
NFT_TABLE = "mptcplab_probe"
NFT_CHAIN = "runmark"  # ("mark" is an nft keyword)
#: before every other hook (conntrack is -200): the mark must be on the skb whatever
#: the lab's own rules do later
NFT_PRIORITY = "-300"
DRY_RUN_TOKEN = "00000001"

COLUMNS = ["t", "event", "src", "sport", "dst", "dport", "snd_cwnd", "ssthresh", "srtt_us", "snd_wnd",
           "snd_nxt", "snd_una", "data_len", "skaddr", "sock_cookie"]

_LINE = re.compile(r"\s(\d+\.\d+):\s+(tcp_probe|tcp_retransmit_skb):\s(.*)$")
_KV = re.compile(r"(\w+)=(\S+)")
_LOST = re.compile(r"\[LOST (\d+) EVENTS\]")


def flow_ports(rep: Rep) -> list[int]:
    return sorted({f.port for f in rep.body.traffic.flows.values()})


def end_nodes(rep: Rep) -> list[str]:
    flows = rep.body.traffic.flows.values()
    return list(dict.fromkeys(n for f in flows for n in (f.client, f.server)))


def port_filter(ports: list[int]) -> str:
    return " || ".join(f"sport == {p} || dport == {p}" for p in ports)


def events(mark: int, ports: list[int]) -> list[EventSetting]:
    ports_f = port_filter(ports)
    return [EventSetting("tcp/tcp_probe", f"mark == {mark:#x} && ({ports_f})"),
            EventSetting("tcp/tcp_retransmit_skb", ports_f)]


def mark_cmds(node: str, mark: int) -> list[Cmd]:
    why = "mark this node's incoming TCP so tcp_probe keeps this run's samples only"
    return [cmd("nft", "add", "table", "inet", NFT_TABLE, node=node, why=why),
            cmd("nft", "add", "chain", "inet", NFT_TABLE, NFT_CHAIN, "{", "type", "filter", "hook", "prerouting",
                "priority", NFT_PRIORITY, ";", "}", node=node),
            cmd("nft", "add", "rule", "inet", NFT_TABLE, NFT_CHAIN, "meta", "l4proto", "tcp", "meta", "mark", "set",
                f"{mark:#x}", node=node)]


def unmark_cmd(node: str) -> Cmd:
    # the namespace goes at teardown anyway; removed here so the measurement's end
    # leaves the node as the lab configured it (and a later step sees no extra table)
    return cmd("nft", "delete", "table", "inet", NFT_TABLE, node=node, check=False)


class TcpProbe(Probe):
    name = "tcp_probe"
    setting = Setting(bool, False, "tcp:tcp_probe (+ tcp_retransmit_skb) per ACK: cwnd, ssthresh, srtt, snd_wnd")
    tracepoints = ("tcp/tcp_probe", "tcp/tcp_retransmit_skb")

    @classmethod
    def for_run(cls, dry_run: bool) -> TcpProbe:
        return cls(DRY_RUN_TOKEN if dry_run else None)

    def __init__(self, token: str | None = None) -> None:
        #: random per repetition: the instance name and the skb mark come from it
        self.token = token or secrets.token_hex(4)
        self.mark = int(self.token, 16) | 1  # never 0: unmarked packets carry 0
        self.instance_name = f"mptcplab-{self.token}"
        self.instance: Instance | None = None
        self._nodes: list[str] = []

    def artifacts(self) -> list[str]:
        return [TRACE_FILE, META_FILE]

    def commands(self, rep: Rep) -> list[Planned]:
        nodes = end_nodes(rep)
        d = instance_dir(self.instance_name)
        out = [Planned(c, note=c.why) for n in nodes for c in mark_cmds(n, self.mark)]
        out.append(Planned(cmd("mkdir", str(d)), in_process=True,
                           note=f"tracefs instance of this repetition (name and mark 0x{self.mark:x} random per "
                                "repetition; owned by /run/mptcplab/tracefs-<name>.json)"))
        out += [Planned(cmd("write", v, str(p)), in_process=True) for p, v in
                setup_writes(self.instance_name, events(self.mark, flow_ports(rep)))]
        out.append(Planned(cmd("cat", str(d / "trace_pipe")), in_process=True, background=True,
                           note=f"a runner thread copies it to probes/{TRACE_FILE}"))
        out.append(Planned(cmd("write", "0", str(d / "tracing_on")), in_process=True, note="after traffic; then drain"))
        out.append(Planned(cmd("rmdir", str(d)), in_process=True, note="every exit path"))
        out += [Planned(unmark_cmd(n)) for n in nodes]
        return out

    def start(self, rep: Rep) -> None:
        self._nodes = end_nodes(rep)
        for n in self._nodes:
            rep.backend.run(mark_cmds(n, self.mark))
        out = probes_dir(rep.out)
        self.instance = Instance(self.instance_name, events(self.mark, flow_ports(rep)), out / TRACE_FILE)
        self.instance.create()

    def stop(self, rep: Rep) -> None:
        inst = self.instance
        assert inst is not None
        inst.stop()
        rep.backend.run([unmark_cmd(n) for n in self._nodes])
        meta = {"instance": inst.name, "mark": self.mark, "trace_clock": "mono",
                "clock_offset_start": inst.offset_start, "clock_offset_stop": inst.offset_stop,
                "trace_bytes": inst.bytes, "nodes": self._nodes,
                "time": "t = trace timestamp (CLOCK_MONOTONIC) + clock_offset_start = time.time()"}
        (probes_dir(rep.out) / META_FILE).write_text(json.dumps(meta, indent=2))
        drift = abs((inst.offset_stop or 0) - (inst.offset_start or 0))
        if drift > 0.001:
            rep.warn(PROBE_DEGRADED, f"tcp_probe: the realtime clock moved {drift * 1e3:.1f} ms against the "
                     "monotonic clock during the run (NTP step?): probe times may be off by that")

    def close(self) -> None:
        if self.instance is not None:
            self.instance.close()

    @classmethod
    def analyze(cls, rep_dir: Path) -> pd.DataFrame:
        d = probes_dir(rep_dir)
        try:
            meta = json.loads((d / META_FILE).read_text())
            text = (d / TRACE_FILE).read_text(errors="replace")
        except OSError:
            return pd.DataFrame(columns=COLUMNS)
        return parse_trace(text, float(meta["clock_offset_start"]))

    @classmethod
    def summarise(cls, table: pd.DataFrame, joined: Joined) -> tuple[Any, list[str]]:
        """Writes the per-subflow join (subflow_series.csv) and each sender's cwnd reductions
        (cwnd_reductions.csv); the record gets the sample counts, the reductions per subflow
        and the windows no TCP can have."""
        df, j = table, joined
        d = probes_dir(j.rep_dir)
        fa, upload = j.fa, j.upload
        series(df, fa, upload, j.backup_paths, j.flow, j.others).to_csv(d / SERIES_FILE, index=False)
        flows = [(j.flow, fa.subflows, upload)] + [(o.name, o.fa.subflows, o.upload) for o in j.others]
        with_samples = [sf.name for _, sfs, up in flows for sf in sfs if not sender_samples(df, sf, up).empty]
        try:
            lost = lost_events((d / TRACE_FILE).read_text(errors="replace"))
        except OSError:
            lost = 0
        # cwnd reductions of each subflow's sender, with and without a retransmission
        # (analysis/cwnd_events.py has the definition)
        # imported here: the lab schema imports the probe registry, and lab/ must not need analysis/
        from ..analysis.cwnd_events import counts_by_subflow, subflow_reductions
        episodes = subflow_reductions(df, fa.subflows, upload)
        if fa.t0_epoch is not None and not episodes.empty:  # the time series' origin
            episodes[["start_t", "end_t"]] = (episodes[["start_t", "end_t"]] - fa.t0_epoch).round(6)
        episodes.to_csv(d / REDUCTIONS_FILE, index=False)
        summary: dict[str, Any] = {
            "samples": int((df["event"] == "tcp_probe").sum()) if not df.empty else 0,
            "retransmits": int((df["event"] == "tcp_retransmit_skb").sum()) if not df.empty else 0,
            "lost_events": lost, "subflows": len(fa.subflows), "subflows_with_samples": with_samples,
            "cwnd_reductions": counts_by_subflow(df, fa.subflows, upload, episodes),
        }
        warnings: list[str] = []
        odd = implausible_windows(df, flows)
        if odd:
            summary["cwnd_implausible"] = odd
            warnings += [f"tcp_probe: {v['samples']} of {v['of']} samples of subflow {k} (flow {v['flow']}, "
                         f"path {v['path']}) have a cwnd above 2^21 segments (up to {v['max_cwnd']}), more "
                         "than any TCP window can hold: left out of the cwnd metrics (docs/cc-lia.md, cwnd "
                         "jumps)" for k, v in odd.items()]
        if lost:
            warnings.append(f"tcp_probe: the trace buffer overflowed, {lost} events lost: the cwnd series "
                            "has gaps")
        missing = [sf.name for _, sfs, _ in flows for sf in sfs if sf.established and sf.name not in with_samples]
        if missing:
            warnings.append(f"tcp_probe: no sample from the sender of subflow(s) {', '.join(missing)}")
        return summary, warnings


def lost_events(text: str) -> int:
    """Events the ring buffer overwrote before the reader got them."""
    return sum(int(m.group(1)) for m in _LOST.finditer(text))


def _endpoint(v: str) -> tuple[str, int]:
    host, _, port = v.rpartition(":")
    host = host.strip("[]")
    # an MPTCP listener is a dual-stack socket: its subflows print as v4-mapped IPv6
    # addresses; the capture knows them as IPv4
    return host.removeprefix("::ffff:"), int(port)


def parse_trace(text: str, offset: float) -> pd.DataFrame:
    """trace_pipe text -> one row per event. tcp_retransmit_skb rows are kept only
    when their socket also produced tcp_probe samples (ours: see the module doc)."""
    rows: list[dict[str, Any]] = []
    for line in text.splitlines():
        m = _LINE.search(line)
        if not m:
            continue
        kv = dict(_KV.findall(m.group(3)))
        row: dict[str, Any] = {"t": float(m.group(1)) + offset, "event": m.group(2), "skaddr": kv.get("skaddr")}
        if m.group(2) == "tcp_probe":
            (row["src"], row["sport"]), (row["dst"], row["dport"]) = _endpoint(kv["src"]), _endpoint(kv["dest"])
            row.update(snd_cwnd=int(kv["snd_cwnd"]), ssthresh=int(kv["ssthresh"]), srtt_us=int(kv["srtt"]),
                       snd_wnd=int(kv["snd_wnd"]), snd_nxt=int(kv["snd_nxt"], 16), snd_una=int(kv["snd_una"], 16),
                       data_len=int(kv["data_len"]), sock_cookie=kv.get("sock_cookie"))
        else:
            row.update(src=kv.get("saddr"), sport=int(kv.get("sport", 0)), dst=kv.get("daddr"),
                       dport=int(kv.get("dport", 0)))
        rows.append(row)
    df = pd.DataFrame(rows, columns=COLUMNS)
    if df.empty:
        return df
    ours = set(df.loc[df["event"] == "tcp_probe", "skaddr"])
    df = df[(df["event"] == "tcp_probe") | df["skaddr"].isin(ours)]
    for c in ("sport", "dport"):
        df[c] = df[c].astype(np.int64)
    # absent on retransmit rows: nullable integers, not floats
    for c in ("snd_cwnd", "ssthresh", "srtt_us", "snd_wnd", "snd_nxt", "snd_una", "data_len"):
        df[c] = df[c].astype("Int64")
    return df.reset_index(drop=True)
