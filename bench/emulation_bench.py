"""Benchmark of the link-emulation backends (not a test: shared, noisy machines).

For each backend (nfqueue; netem too when the kernel has it), each one-way delay
and with/without a capture (tcpdump on both ends, as labs capture), the highest
rate at which a link still meets tolerance: one TCP flow's goodput >= 93% of
the rate (where the queue holds less than a round trip, UDP offered above the rate
instead, as calibrate judges it: linkcheck.tcp_fills), ping's min RTT within
2% + 0.3 ms of 2 x delay, and the delay lines
healthy (no drops of their own, release lateness p99 within
``nfqueue.max_lateness_p99_us``: max(0.5 ms, 5% of the delay)). Also the delay
line's CPU per Mbit/s, from /proc/<pid>/stat (utime + stime of both directions'
delay lines over the bytes they carried forward).

``--combos`` measures the link combinations `mptcplab calibrate` must pass.

``--papers`` measures issue 13's links instead, with tcpdump on both ends: 400 Mbit/s
at 2, 100 and 200 ms one way, 1 Gbit/s at 1 ms, and two 400 Mbit/s lines at once
(2 ms and 200 ms, one TCP flow each, concurrently: the emulation load of the
asymmetric paper's S3, though not one MPTCP connection). Each link is measured with
every ``--binary`` given (``tag=path``; default: the one mptcplab would use), so a
delay line can be compared with an older build. The delay line does rate and queue
itself (``rate_in_delayline``, the default); ``--tbf`` adds, per binary, tbf at the
sender doing them instead (tag ``+tbf``; ``--paced`` is the same switch's older
name). Slow start is omitted as calibrate does (``linkcheck.tcp_timing``). Rows say
the host load; numbers from a busy host are not the emulator's.

Figures (2-core shared VM, load 9-11 from other jobs, captures on; 2026-11-23):
release lateness p99 of the worse direction, tbf -> rate stage: 400 Mbit/s 2 ms
23 ms -> 0.29 ms, 100 ms 52 ms -> 0.51 ms, 200 ms 108 ms -> 5.3 ms, 1 Gbit/s 1 ms
1.3 -> 1.2 ms, two lines at once 31/48 ms -> 0.52/0.85 ms. Delay-line CPU per
Mbit/s 0.21-0.26 % of a core either way without the release slot; with it
(``nfqueue.release_slot_us``, then 100 us below 10 ms of delay) 0.14-0.17 at 400 Mbit/s
and 0.07 at 1 Gbit/s (load 10-15). Idle host, 2026-11-24, with the 200 us slot now used
at every delay: 400 Mbit/s 2 ms 0.098-0.105, 100 and 200 ms 0.085-0.091, 1 Gbit/s 1 ms
0.059-0.061; lateness p99 236-289 us on every line. Most of the rest is the kernel's TCP receive path of released
packets, which runs inside the verdict call (docs/architecture.md). The delay
line's own ceiling on this host: a SCHED_FIFO sleeper alone sees wake-up lateness
p99 1.2-2.9 ms under this load (PREEMPT_NONE kernel), so p99 < 0.5 ms is
reachable only when the host is otherwise quiet.

Usage (root):
  .venv/bin/python bench/emulation_bench.py [--rates 100,200,400,800,1000] [--delays 1,20]
      [--capture both|on|off] [--seconds 3] [--combos] [--only-combos] [--json out.json]
  .venv/bin/python bench/emulation_bench.py --papers [--tbf] [--json out.json]
      [--binary old=/tmp/old/mptcplab-delayline --binary new=native/build/mptcplab-delayline]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mptcplab.emulation.base import Emulator
from mptcplab.emulation.hostprobe import netem_available
from mptcplab.emulation.linkmodel import LinkShape
from mptcplab.emulation.nfqueue import NfqueueEmulator, delayline_problems
from mptcplab.emulation.select import select_emulator
from mptcplab.emulation.testline import TwoNodeLine, goodput_bps
from mptcplab.linkcheck import (
    capacity_check,
    capacity_offer_bps,
    parse_capacity_mbps,
    tcp_fills,
    tcp_timing,
    udp_payload,
)
from mptcplab.supervise import Supervisor

GOODPUT_MIN = 0.93
COMBOS = [  # (rate, one-way delay, buffer)
    ("100mbit", "40ms", None),
    ("8mbit", "10ms", "80ms"),
    ("2mbit", "75ms", "2s"),
    ("400mbit", "1ms", None),
]


def rtt_ok(measured_ms: float, delay_s: float) -> bool:
    want = 2 * delay_s * 1000
    return abs(measured_ms - want) <= 0.02 * want + 0.3


def start_captures(line: TwoNodeLine, wd: Path) -> list[tuple[subprocess.Popen[str], Path]]:
    caps = []
    for n in ("a", "b"):
        path = wd / f"cap-{line.prefix}-{n}.pcap"
        # as mptcplab/capture.py does: headers only, 16 MiB kernel buffer
        p = line.popen(n, "tcpdump", "-i", "eth0", "-n", "-s", "128", "-B", "16384", "-w", str(path),
                       "tcp", "or", "icmp")
        caps.append((p, path))
    time.sleep(0.5)  # tcpdump needs a moment before it captures
    return caps


def stop_captures(caps: list[tuple[subprocess.Popen[str], Path]]) -> int:
    """Stops tcpdumps; returns packets they report dropped by the kernel."""
    dropped = 0
    for p, path in caps:
        p.terminate()
        _, err = p.communicate(timeout=10)
        m = re.search(r"(\d+) packets? dropped by kernel", err)
        dropped += int(m.group(1)) if m else 0
        path.unlink(missing_ok=True)
    return dropped


PAPERS = [("400mbit", "2ms"), ("400mbit", "100ms"), ("400mbit", "200ms"), ("1gbit", "1ms")]
TWO_PATHS = [("400mbit", "2ms"), ("400mbit", "200ms")]


def measure(em: Emulator, rate: str, delay: str, buffer: str | None, capture: bool, seconds: float,
            omit: float, wd: Path) -> dict[str, Any]:
    shape = LinkShape.parse(rate=rate, delay=delay, queue=buffer)
    assert shape.rate_bps
    bdp = shape.rate_bps / 8 * 2 * shape.delay_s
    row: dict[str, Any] = {"backend": em.name, "rate": rate, "delay": delay, "buffer": buffer, "capture": capture,
                           "load_before": os.getloadavg()[0]}
    with TwoNodeLine(mtu=1500) as line, Supervisor(line.host_argv, wd / "logs") as sup:
        line.apply(em, shape, shape, wd, sup)
        line.tcp_buffers(int(max(4 * bdp, 6 * 2**20)))  # >= 2 x BDP, as calibrate does
        ping = line.ping("a", count=30, interval=0.02 if shape.delay_s < 0.05 else 0.05)
        caps = start_captures(line, wd) if capture else []
        t0 = time.monotonic()
        res = line.iperf3("a", seconds=seconds, omit=int(omit))
        elapsed = time.monotonic() - t0
        # a queue shorter than the BDP: one TCP flow's loss recovery, not the link, sets its
        # goodput; the rate is judged as calibrate judges it, by UDP offered above it
        capacity = None
        if not tcp_fills(shape, 1500):
            udp = line.iperf3("a", seconds=seconds, omit=int(omit), server_extra=["-J"],
                              extra=["-u", "-b", str(capacity_offer_bps(shape, 1500)), "-l", str(udp_payload(1500)),
                                     "--get-server-output"])
            capacity = capacity_check(shape, 1500, parse_capacity_mbps(udp))
        cpu = sum(rd.cpu_seconds() or 0.0 for rd in sup.running)
        row["capture_drops"] = stop_captures(caps) if caps else None
        sup.check()
        stats = sup.stop_all()
    gp = goodput_bps(res) if "end" in res and "sum_received" in res.get("end", {}) else 0.0
    fwd = next((s for name, s in stats.items() if name.startswith("delayline b:") and s), None)
    row.update({
        "rtt_min_ms": ping.min_ms, "rtt_avg_ms": ping.avg_ms, "rtt_want_ms": 2 * shape.delay_s * 1000,
        "rtt_ok": rtt_ok(ping.min_ms, shape.delay_s),
        "goodput_mbps": gp / 1e6, "goodput_ratio": gp / shape.rate_bps,
        "goodput_ok": gp >= GOODPUT_MIN * shape.rate_bps if capacity is None else capacity.ok,
        "capacity_mbps": None if capacity is None else capacity.measured,
        "capacity_want_mbps": None if capacity is None else round(capacity.configured, 1),
        "retransmits": res.get("end", {}).get("sum_sent", {}).get("retransmits"),
        "iperf_s": round(elapsed, 2),
    })
    if fwd:
        mbit = fwd["bytes"] * 8 / 1e6
        row.update({
            "delayline_cpu_s": round(cpu, 3),
            "cpu_pct_core_per_mbps": round(100 * cpu / mbit, 4) if mbit else None,
            "enobufs": sum(s.get("enobufs", 0) for s in stats.values() if s),
            "queue_full_drops": sum((s.get("queue_full_drops") or 0) for s in stats.values() if s),
            "lateness_p99_us": max(s["lateness_us"]["p99"] for s in stats.values() if s),
            "lateness_max_us": max(s["lateness_us"]["max"] for s in stats.values() if s),
        })
    row["load_after"] = os.getloadavg()[0]
    if fwd:
        row["lateness_p99_us_by_line"] = {name: s["lateness_us"]["p99"] for name, s in stats.items() if s}
    row["delaylines"] = {name: s for name, s in stats.items() if s}
    # the delay lines must also have kept time and lost nothing themselves
    row["problems"] = [f"{name}: {p}" for name, s in stats.items() if s for p in delayline_problems(s)]
    row["ok"] = bool(row["rtt_ok"] and row["goodput_ok"] and not row["problems"])
    return row


def fmt(row: dict[str, Any]) -> str:
    cpu = row.get("cpu_pct_core_per_mbps")
    return (f"{row.get('tag', row['backend']):7} {row['rate']:>8} {row['delay']:>5} buf={str(row['buffer']):5} "
            f"cap={'on ' if row['capture'] else 'off'} rtt min/avg {row['rtt_min_ms']:.3f}/{row['rtt_avg_ms']:.3f} "
            f"(want {row['rtt_want_ms']:.1f}) goodput {row['goodput_mbps']:.1f} Mbit/s "
            f"({100 * row['goodput_ratio']:.1f}%) retr={row['retransmits']} "
            + (f"udp capacity {row['capacity_mbps'] or 0:.1f}/{row['capacity_want_mbps']} Mbit/s judged, TCP reported "
               if row.get("capacity_want_mbps") else "")
            + f"cpu={'-' if cpu is None else f'{cpu:.3f}%core/Mbps'} "
            f"late_p99={row.get('lateness_p99_us', '-')}us enobufs={row.get('enobufs', '-')} "
            f"capdrops={row.get('capture_drops')} load={row['load_before']:.1f}->{row['load_after']:.1f} "
            f"{'OK' if row['ok'] else 'FAIL'}"
            + (f" ({'; '.join(row['problems'])})" if row["problems"] else ""))


def papers(variants: list[tuple[str, Path | None, bool]], seconds: float, wd: Path) -> list[dict[str, Any]]:
    """Issue 13's links, each with every variant in turn (interleaved, so a change
    in host load hits all alike), then the two paths at once."""
    rows = []
    for rate, delay in PAPERS:
        for tag, binary, paced in variants:
            em = NfqueueEmulator(binary=binary, rate_in_delayline=paced)
            omit, dur = tcp_timing(LinkShape.parse(rate=rate, delay=delay), 1500, seconds)
            row = {**measure(em, rate, delay, None, True, dur, omit, wd), "kind": "papers", "tag": tag}
            rows.append(row)
            print(fmt(row), flush=True)
    for tag, binary, paced in variants:
        em = NfqueueEmulator(binary=binary, rate_in_delayline=paced)
        with concurrent.futures.ThreadPoolExecutor(len(TWO_PATHS)) as ex:
            futs = []
            for rate, delay in TWO_PATHS:
                omit, dur = tcp_timing(LinkShape.parse(rate=rate, delay=delay), 1500, seconds)
                futs.append(ex.submit(measure, em, rate, delay, None, True, dur, omit, wd))
            for f in futs:
                row = {**f.result(), "kind": "two-paths", "tag": tag}
                rows.append(row)
                print("two paths at once: " + fmt(row), flush=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", default="100,200,400,800,1000", help="Mbit/s, comma separated")
    ap.add_argument("--delays", default="1,20", help="one-way ms, comma separated")
    ap.add_argument("--capture", choices=("both", "on", "off"), default="both")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--combos", action="store_true", help="also the calibrate acceptance combos")
    ap.add_argument("--only-combos", action="store_true")
    ap.add_argument("--json", type=Path, help="write all rows here")
    ap.add_argument("--papers", action="store_true", help="issue 13's links only (see above)")
    ap.add_argument("--tbf", "--paced", action="store_true",
                    help="with --papers: also rate and queue by tbf at the sender (the delay line's rate stage is the "
                         "default)")
    ap.add_argument("--binary", action="append", default=[], metavar="TAG=PATH",
                    help="delay line build to measure with --papers (repeatable)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("needs root (network namespaces)", file=sys.stderr)
        return 2

    backends = [select_emulator("nfqueue", False)]
    if netem_available():
        backends.append(select_emulator("netem", True))
    else:
        print("# netem: not available on this kernel, nfqueue only")
    print(f"# host: {os.cpu_count()} cores, load {os.getloadavg()}")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="mptcplab-bench-") as tmp:
        wd = Path(tmp)
        if a.papers:
            binaries: list[tuple[str, Path | None]] = [
                (b.split("=", 1)[0], Path(b.split("=", 1)[1]).resolve()) for b in a.binary] or [("nfqueue", None)]
            variants = [(tag, b, True) for tag, b in binaries]
            if a.tbf:
                variants += [(tag + "+tbf", b, False) for tag, b in binaries]
            rows = papers(variants, max(a.seconds, 5), wd)
            backends = []
        for em in backends:
            if a.combos or a.only_combos:
                for rate, delay, buf in COMBOS:
                    row = measure(em, rate, delay, buf, False, max(a.seconds, 5), 2, wd)
                    rows.append({**row, "kind": "combo"})
                    print(fmt(row), flush=True)
            if a.only_combos:
                continue
            caps = {"both": (False, True), "on": (True,), "off": (False,)}[a.capture]
            for delay in a.delays.split(","):
                for cap in caps:
                    best = None
                    for rate in a.rates.split(","):
                        row = measure(em, f"{rate}mbit", f"{delay}ms", None, cap, a.seconds, 1, wd)
                        rows.append({**row, "kind": "sweep"})
                        print(fmt(row), flush=True)
                        if row["ok"]:
                            best = rate
                    print(f"## {em.name} delay {delay} ms capture {'on' if cap else 'off'}: "
                          f"highest rate within tolerance: {best or 'none'} Mbit/s", flush=True)
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
