#!/usr/bin/env python3
"""Make the small, real captures the analysis tests run against.

Hand-written on purpose and independent of mptcplab's own netns backend: the test data
must not depend on the code it is used to test, and it is regenerated rarely (as root):

    python3 tests/data/make_captures.py            # all scenarios
    python3 tests/data/make_captures.py tcp        # one scenario

Layout (every link MTU 9000 except rb <-> ra, 1500, so path B needs PMTUD)::

    client eth1 10.0.1.2 --- 10.0.1.1 eth1 [ra] eth0 10.0.3.1 --- 10.0.3.2 eth0 [server]
                                          [ra] eth2 10.0.4.2
                                                 |  MTU 1500
    client eth2 10.0.2.2 --- 10.0.2.1 eth1 [rb] eth2 10.0.4.1

Path A is client eth1 -> ra -> server, path B is client eth2 -> rb -> ra -> server. The
client has per-source routing tables so a subflow from 10.0.2.2 leaves by eth2. tbf
(20 Mbit/s) on the client's two interfaces and on the routers' interfaces towards the client
keeps the files small; TSO/GSO/GRO are off so tcpdump sees wire-size segments. Namespaces
are named ``mplt<hex>-<node>`` and are always deleted, with every process this script
started, in a ``finally`` (SIGTERM is turned into an exception so that holds for it too).
Each scenario writes ``<scenario>__<node>_<dev>.pcap`` per capture point and
``<scenario>__iperf3.json`` (goodput, kernel, tcpdump drop counts, the point names).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import secrets
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
RATE = "20mbit"
SERVER_IP = "10.0.3.2"
PORT = 5201


@dataclass
class Scenario:
    name: str
    mptcp: bool = True
    endpoint: bool = True            # client endpoint on 10.0.2.2 (subflow flag)
    duration: int = 2
    blackhole: bool = False          # rb drops the ICMP frag-needed it generates
    block_join: str | None = None    # what rb does to SYNs from 10.0.2.2: drop, reset, unreach
    server_subflows: int = 2         # the server's "ip mptcp limits subflow"
    server_mptcp: bool | None = None  # None: like the client; False: plain TCP server
    reverse: bool = False            # iperf3 -R: the server sends (download)
    extra_points: list[str] = field(default_factory=list)  # e.g. ["rb:eth1"]
    quota_b: str | None = None       # rb forwards this much from 10.0.2.2, then drops
    note: str = ""


SCENARIOS = {
    s.name: s
    for s in [
        Scenario("mptcp_pmtud", extra_points=["rb:eth1"],
                 note="MPTCP A+B, B bottlenecked at 1500 behind rb: PMTUD via ICMP frag-needed"),
        Scenario("mptcp_pmtud_download", reverse=True, extra_points=["server:eth0"],
                 note="as mptcp_pmtud but iperf3 -R: ra sends the frag-needed to the server"),
        Scenario("mptcp_blackhole", blackhole=True, duration=4,
                 note="as mptcp_pmtud but rb drops its own ICMP frag-needed (PMTUD black hole)"),
        Scenario("mptcp_b_starved", quota_b="40 kbytes", duration=4,
                 note="as mptcp_pmtud but rb drops everything from 10.0.2.2 after its first "
                      "40 kB: B's subflow delivers a little at the start, then nothing"),
        Scenario("tcp", mptcp=False, endpoint=False, note="plain TCP over path A"),
        Scenario("mptcp_join_blocked", block_join="drop", duration=4,
                 note="MPTCP, rb drops every SYN from 10.0.2.2: the join never forms"),
        Scenario("mptcp_join_rst", block_join="reset",
                 note="MPTCP, rb answers every SYN from 10.0.2.2 with a TCP RST"),
        Scenario("mptcp_join_unreach", block_join="unreach",
                 note="MPTCP, rb answers every SYN from 10.0.2.2 with ICMP host unreachable"),
        Scenario("mptcp_server_limit0", server_subflows=0,
                 note="MPTCP, the server's subflow limit is 0: it must refuse the join"),
        Scenario("mptcp_fallback", server_mptcp=False,
                 note="MPTCP client, plain TCP server: the SYN/ACK has no MP_CAPABLE"),
        Scenario("mptcp_no_endpoint", endpoint=False,
                 note="MPTCP without a client endpoint on 10.0.2.2: no join is attempted"),
    ]
}


class Lab:
    """Namespaces, processes and their cleanup for one scenario run."""

    NODES = ("client", "ra", "rb", "server")

    def __init__(self) -> None:
        self.prefix = "mplt" + secrets.token_hex(3)
        self.procs: list[subprocess.Popen] = []
        self.created: list[str] = []

    def ns(self, node: str) -> str:
        return f"{self.prefix}-{node}"

    def sh(self, node: str | None, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
        full = list(argv) if node is None else ["ip", "netns", "exec", self.ns(node), *argv]
        r = subprocess.run(full, capture_output=True, text=True)
        if check and r.returncode != 0:
            raise RuntimeError(f"{shlex.join(full)} failed: {r.stderr.strip()}")
        return r

    def spawn(self, node: str, *argv: str, **kw) -> subprocess.Popen:
        # start_new_session: so we can signal the process group without touching anything else
        p = subprocess.Popen(["ip", "netns", "exec", self.ns(node), *argv],
                             start_new_session=True, **kw)
        self.procs.append(p)
        return p

    def link(self, a: str, ia: str, b: str, ib: str, mtu: int) -> None:
        self.sh(None, "ip", "link", "add", ia, "netns", self.ns(a), "mtu", str(mtu), "type", "veth",
                "peer", "name", ib, "netns", self.ns(b), "mtu", str(mtu))
        for node, dev in ((a, ia), (b, ib)):
            # offloads off: otherwise tcpdump on veth shows 60 KB GSO "segments"
            self.sh(node, "ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off")
            self.sh(node, "ip", "link", "set", dev, "up")

    def build(self, sc: Scenario, rate: str = RATE) -> None:
        for n in self.NODES:
            self.sh(None, "ip", "netns", "add", self.ns(n))
            self.created.append(self.ns(n))
            self.sh(n, "ip", "link", "set", "lo", "up")
        self.link("client", "eth1", "ra", "eth1", 9000)
        self.link("client", "eth2", "rb", "eth1", 9000)
        self.link("rb", "eth2", "ra", "eth2", 1500)     # the path-B bottleneck
        self.link("ra", "eth0", "server", "eth0", 9000)
        addrs = [("client", "eth1", "10.0.1.2/24"), ("client", "eth2", "10.0.2.2/24"),
                 ("ra", "eth1", "10.0.1.1/24"), ("ra", "eth2", "10.0.4.2/24"),
                 ("ra", "eth0", "10.0.3.1/24"), ("rb", "eth1", "10.0.2.1/24"),
                 ("rb", "eth2", "10.0.4.1/24"), ("server", "eth0", "10.0.3.2/24")]
        for n, dev, a in addrs:
            self.sh(n, "ip", "addr", "add", a, "dev", dev)
        for r in ("ra", "rb"):
            self.sh(r, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        self.sh("ra", "ip", "route", "add", "10.0.2.0/24", "via", "10.0.4.1")
        self.sh("rb", "ip", "route", "add", "default", "via", "10.0.4.2")
        self.sh("server", "ip", "route", "add", "default", "via", "10.0.3.1")
        # client: main table via A, plus one table per source address so each subflow
        # leaves by its own interface
        self.sh("client", "ip", "route", "add", "default", "via", "10.0.1.1")
        for table, (src, gw, dev) in ((101, ("10.0.1.2", "10.0.1.1", "eth1")),
                                      (102, ("10.0.2.2", "10.0.2.1", "eth2"))):
            self.sh("client", "ip", "route", "add", "default", "via", gw, "dev", dev, "table", str(table))
            self.sh("client", "ip", "rule", "add", "from", src, "table", str(table))
        # the rate limit on both directions of each path: client egress for uploads, the
        # routers' client-facing egress for downloads
        for node, dev in (("client", "eth1"), ("client", "eth2"), ("ra", "eth1"), ("rb", "eth1")):
            self.sh(node, "tc", "qdisc", "add", "dev", dev, "root", "tbf", "rate", rate,
                    "burst", "32kb", "latency", "50ms")
        for n, sub in (("client", 2), ("server", sc.server_subflows)):
            self.sh(n, "ip", "mptcp", "limits", "set", "subflow", str(sub), "add_addr_accepted", "2")
        if sc.endpoint:
            self.sh("client", "ip", "mptcp", "endpoint", "add", "10.0.2.2", "dev", "eth2", "subflow")
        if sc.blackhole:
            # locally generated ICMP leaves through the output hook: drop frag-needed there
            self.nft("rb", "bh", "chain out {\n type filter hook output priority 0;\n"
                                 " icmp type destination-unreachable icmp code frag-needed drop\n}")
        verdict = {"drop": "drop", "reset": "reject with tcp reset",
                   "unreach": "reject with icmp type host-unreachable"}
        if sc.block_join:
            self.nft("rb", "bj", "chain joins {\n type filter hook forward priority 0;\n"
                                 f" ip saddr 10.0.2.2 tcp flags syn / syn,ack {verdict[sc.block_join]}\n}}")
        if sc.quota_b:
            self.nft("rb", "qb", "chain starve {\n type filter hook forward priority 0;\n"
                                 f" ip saddr 10.0.2.2 quota over {sc.quota_b} drop\n}}")

    def nft(self, node: str, table: str, body: str) -> None:
        # nft's one-line syntax is picky about "; }": write the table out on lines instead
        r = subprocess.run(["ip", "netns", "exec", self.ns(node), "nft", "-f", "-"],
                           input=f"table ip {table} {{\n{body}\n}}\n", capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"nft in {node} failed: {r.stderr.strip()}")
        # read it back: a scenario whose impairment silently is not there is worthless
        if f"table ip {table}" not in self.sh(node, "nft", "list", "ruleset").stdout:
            raise RuntimeError(f"nft table {table} missing in {node} after loading it")

    def teardown(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                    p.wait(timeout=5)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    try:
                        os.killpg(p.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    p.wait()
        for name in reversed(self.created):
            subprocess.run(["ip", "netns", "del", name], capture_output=True)


def run(sc: Scenario, outdir: Path, rate: str = RATE) -> dict:
    lab = Lab()
    try:
        lab.build(sc, rate)
        points = ["client:eth1", "client:eth2", *sc.extra_points]
        dumps: list[tuple[subprocess.Popen, Path]] = []
        for pt in points:
            node, dev = pt.split(":")
            f = outdir / f"{sc.name}__{node}_{dev}.pcap"
            f.unlink(missing_ok=True)
            # -Z root: Debian's tcpdump otherwise drops to a user that cannot write here.
            # --immediate-mode: without it the last packets sit in a not yet handed over
            # ring-buffer block when tcpdump is stopped and are lost (the capture then ends
            # about half a second before the traffic did).
            p = lab.spawn(node, "tcpdump", "-Z", "root", "--immediate-mode", "-U", "-n", "-s", "128",
                          "-i", dev, "-w",
                          str(f), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            dumps.append((p, f))
        for p, _ in dumps:   # wait until each tcpdump says it is listening
            assert p.stderr is not None  # stderr=PIPE
            line = p.stderr.readline().decode()
            if "listening" not in line:
                raise RuntimeError(f"tcpdump did not start: {line}")
        wrap = ["mptcpize", "run"] if sc.mptcp else []
        srv_mptcp = sc.mptcp if sc.server_mptcp is None else sc.server_mptcp
        srv_wrap = ["mptcpize", "run"] if srv_mptcp else []
        srv = lab.spawn("server", *srv_wrap, "iperf3", "-s", "-1", stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        cli = lab.sh("client", *wrap, "iperf3", "-c", SERVER_IP, "-p", str(PORT), "-t",
                     str(sc.duration), "-J", *(["-R"] if sc.reverse else []), check=False)
        srv.wait(timeout=15)
        time.sleep(0.3)
        drops = {}
        for pt, (p, _) in zip(points, dumps, strict=True):
            os.killpg(p.pid, signal.SIGINT)
            p.wait(timeout=5)
            # tcpdump's exit statistics: "N packets dropped by kernel" must be 0
            assert p.stderr is not None  # stderr=PIPE
            stats = p.stderr.read().decode()
            drops[pt] = next((int(ln.split()[0]) for ln in stats.splitlines()
                              if "dropped by kernel" in ln), None)
        report = json.loads(cli.stdout) if cli.stdout.strip() else {"error": cli.stderr}
        goodput = report.get("end", {}).get("sum_received", {}).get("bits_per_second")
        (outdir / f"{sc.name}__iperf3.json").write_text(json.dumps(
            {"scenario": sc.name, "note": sc.note, "kernel": os.uname().release,
             "goodput_bps": goodput, "iperf3_error": report.get("error"), "tcpdump_drops": drops,
             "points": {pt: f.name for pt, (_, f) in zip(points, dumps, strict=True)}}, indent=1) + "\n")
        return {"scenario": sc.name, "goodput_mbps": goodput and round(goodput / 1e6, 2),
                "files": {f.name: f.stat().st_size for _, f in dumps}}
    finally:
        lab.teardown()


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenarios", nargs="*", choices=[[], *SCENARIOS], metavar="SCENARIO",
                    help=f"default: all of {', '.join(SCENARIOS)}")
    ap.add_argument("--rate", default=RATE, help="tbf rate per client interface (default %(default)s)")
    ap.add_argument("--duration", type=int, help="override each scenario's iperf3 -t")
    ap.add_argument("--out", type=Path, default=HERE, help="output directory (default: beside this script)")
    a = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("needs root (network namespaces)", file=sys.stderr)
        return 2
    a.out.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    for n in a.scenarios or list(SCENARIOS):
        sc = SCENARIOS[n]
        if a.duration:
            sc = dataclasses.replace(sc, duration=a.duration)
        print(json.dumps(run(sc, a.out, a.rate)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
