"""Measuring an emulated link against its configuration: RTT by ping, rate by one
TCP flow, loss by UDP. Used by every lab run (quick checks) and by
``mptcplab calibrate`` (tighter checks on a two-node line).

Tolerances (issue: link emulation): min RTT within 2% + 0.3 ms of the intended RTT;
TCP goodput at least 93% of the configured rate; loss inside the binomial 99%
interval of the configured probability.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from dataclasses import asdict, dataclass
from typing import Any

from .commands import Cmd, cmd
from .emulation.linkmodel import ETH_HEADER, LinkShape

RTT_REL_TOL = 0.02
RTT_ABS_TOL_S = 0.3e-3
RATE_MIN_FRACTION = 0.93
PING_PAYLOAD = 56  # bytes; 84 on the wire at IP level
PING_COUNT = 10
#: ping -W: how long the last reply is waited for
PING_WAIT_S = 3
#: the rate check's congestion control: the check must not depend on the host's default
#: algorithm (namespaces inherit it; BBR under-fills a tbf link with jumbo frames)
RATE_CHECK_CC = "cubic"
RATE_CHECK_PORT = 5299


def expected_rtt_s(shape: LinkShape, back: LinkShape | None = None) -> float:
    """The delay of each direction plus the serialization of a ping at each direction's
    rate; ``back`` is the reverse direction's shape (default: the same as ``shape``)."""
    back = shape if back is None else back
    ping_bits = (PING_PAYLOAD + 28 + ETH_HEADER) * 8
    ser = sum(ping_bits / s.rate_bps for s in (shape, back) if s.rate_bps)
    return shape.delay_s + back.delay_s + ser


def ping_argv(dst: str, src: str, count: int, interval_s: float) -> list[str]:
    # -U: user-space timestamps. The kernel stamps a reply on reception, *before* the
    # receiver's PREROUTING hook where the NFQUEUE delay line holds it, so kernel
    # timestamps would miss one direction's delay (and are no better with netem).
    return ["ping", "-U", "-n", "-q", "-c", str(count), "-i", f"{interval_s:g}", "-W", str(PING_WAIT_S), "-I", src, dst]


def ping_interval_s(shape: LinkShape, back: LinkShape | None = None) -> float:
    """Pings 10 ms apart, or 50 ms on long links (fewer pings in flight at once)."""
    rtt = shape.delay_s + (shape if back is None else back).delay_s
    return 0.01 if rtt < 0.1 else 0.05


def ping_cmd(node: str, dst: str, src: str, shape: LinkShape, count: int = PING_COUNT,
             back: LinkShape | None = None) -> Cmd:
    return cmd(*ping_argv(dst, src, count, ping_interval_s(shape, back)), node=node, check=False,
               why="RTT of the link against its configuration")


@dataclass(frozen=True)
class RateCheckCmds:
    """The rate check of one direction of a link: the one implementation (the run's link check
    uses it). One TCP flow, or, where one TCP flow cannot be expected to fill the link
    (tcp_fills), UDP offered above the rate (``udp``; capacity_check judges it)."""

    server: Cmd   # started in the background, waited for with ``listening``
    listening: Cmd  # non-empty output once the server listens
    client: Cmd   # its stdout is iperf3's JSON (parse_rate_mbps, or parse_capacity_mbps when udp)
    udp: bool = False


def tcp_timing(shape: LinkShape, mtu: int, seconds: float) -> tuple[int, float]:
    """(seconds omitted, seconds measured) of a TCP rate check (calibrate's, and the run's
    link check's, ``seconds`` being what the lab asks to measure). Slow start needs
    about log2(BDP in packets / initial window) round trips to fill the link, and
    cubic's exit from it (HyStart) a few more: 400 Mbit/s at 400 ms RTT is ~14
    round trips, 5.6 s, so a fixed 1 s omit measured the ramp, not the link. The
    measured part lasts at least 10 round trips."""
    rtt = 2 * (shape.delay_s + shape.jitter_s)
    pkts = (shape.rate_bps or 0) / 8 * rtt / max(mtu - 40, 1)
    rounds = math.log2(max(pkts / 10, 1)) + 4
    return max(1, math.ceil(rounds * rtt)), max(seconds, 10 * rtt)


def rate_check_cmds(server_node: str, client_node: str, src: str, dst: str, seconds: float,
                    port: int = RATE_CHECK_PORT, shape: LinkShape | None = None, mtu: int = 1500) -> RateCheckCmds:
    listening = cmd("ss", "-Hltn", f"sport = :{port}", node=server_node, check=False)
    if shape is not None and not tcp_fills(shape, mtu):
        # the server's intervals (its own -i: the client's is not passed on) a fifth of the
        # test, so the receiver's median has three left when the first and last are left out
        interval = f"{max(seconds / 5, 0.1):g}"
        return RateCheckCmds(
            server=cmd("iperf3", "-s", "-1", "-p", port, "-i", interval, "-J", node=server_node,
                       why="rate check: UDP above the rate (the queue holds less than a round trip)"),
            listening=listening,
            client=cmd("iperf3", "-c", dst, "-B", src, "-p", port, "-u", "-b", capacity_offer_bps(shape, mtu),
                       "-l", udp_payload(mtu), "-t", f"{seconds:g}", "-i", interval,
                       "--get-server-output", "-J", node=client_node, check=False),
            udp=True)
    # -O: slow start is not the link's rate; the seconds after it are (tcp_timing: 1 s on short
    # links, the ramp's round trips on long ones)
    omit, measure = tcp_timing(shape, mtu, seconds) if shape is not None else (1, seconds)
    return RateCheckCmds(
        server=cmd("iperf3", "-s", "-1", "-p", port, node=server_node, why="rate check: one TCP flow"),
        listening=listening,
        client=cmd("iperf3", "-c", dst, "-B", src, "-p", port, "-t", f"{measure:g}", "-O", omit,
                   "-C", RATE_CHECK_CC, "-J", node=client_node, check=False))


def judge_rate(rc: RateCheckCmds, shape: LinkShape, mtu: int, client_stdout: str | None,
               direction: str | None = None) -> Check:
    """The rate check's verdict from its client's output (None: it never ran)."""
    if rc.udp:
        try:
            data = json.loads(client_stdout or "")
        except ValueError:
            data = None
        return capacity_check(shape, mtu, parse_capacity_mbps(data) if isinstance(data, dict) else None, direction)
    return rate_check(shape, parse_rate_mbps(client_stdout or ""), direction)


def parse_rate_mbps(iperf3_json: str) -> float | None:
    """The receiver's goodput in Mbit/s from iperf3 -J output (None when it failed)."""
    try:
        return float(json.loads(iperf3_json)["end"]["sum_received"]["bits_per_second"]) / 1e6
    except (ValueError, KeyError, TypeError):
        return None


_RTT = re.compile(r"= ([0-9.]+)/([0-9.]+)/([0-9.]+)/([0-9.]+) ms")
_LOSS = re.compile(r"(\d+) packets transmitted, (\d+) received")


@dataclass
class Check:
    """One measured quantity against its configured value."""

    quantity: str          # "rtt_min_ms", "rtt_mean_ms", "goodput_mbps", "loss"
    configured: float
    measured: float | None
    tolerance: str
    ok: bool
    #: which direction of the link was measured ("a:if->b:if"); "both" for a round trip
    direction: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def parse_ping(out: str) -> tuple[float | None, float | None, int, int]:
    """min and mean RTT in seconds, transmitted, received."""
    m = _RTT.search(out)
    n = _LOSS.search(out)
    tx, rx = (int(n.group(1)), int(n.group(2))) if n else (0, 0)
    if not m:
        return None, None, tx, rx
    return float(m.group(1)) / 1e3, float(m.group(2)) / 1e3, tx, rx


def trace_wait_s(shape: LinkShape) -> float:
    """The longest a packet can wait for a trace direction's next opportunity: the trace's
    largest gap between opportunities (the loop's wrap included), plus the 1 ms grid."""
    if shape.trace is None:
        return 0.0
    st = shape.trace.stamps_ms
    gaps = [b - a for a, b in zip(st, st[1:], strict=False)]
    wrap = st[0] + shape.trace.period_ms - st[-1]
    return (max([wrap, *gaps]) + 1) / 1000


def rtt_checks(shape: LinkShape, ping_out: str, back: LinkShape | None = None) -> list[Check]:
    """A round trip crosses both directions: one-way delays cannot be told apart by ping,
    so an asymmetric link's RTT is checked against the sum of its two directions. A trace
    direction (the delay line's opportunity grid) may hold every ping until its next
    opportunity, so its minimum may exceed the delays by up to that direction's
    ``trace_wait_s``: the tolerance is widened upwards by it, never downwards (a trace's
    outage of seconds leaves the check only a floor)."""
    back = shape if back is None else back
    mn, mean, tx, rx = parse_ping(ping_out)
    exp = expected_rtt_s(shape, back)
    tol = RTT_REL_TOL * exp + RTT_ABS_TOL_S
    wait = trace_wait_s(shape) + trace_wait_s(back)
    ok = mn is not None and -tol <= mn - exp <= tol + wait
    tol_text = (f"±{tol * 1e3:.3f} ms" if not wait else
                f"-{tol * 1e3:.3f} / +{(tol + wait) * 1e3:.3f} ms (the trace's longest wait for an opportunity)")
    checks = [Check("rtt_min_ms", exp * 1e3, mn * 1e3 if mn is not None else None, tol_text, ok, "both")]
    # the mean includes queueing of pings behind each other at low rates: reported, not judged,
    # unless jitter is configured, where the mean is what the jitter centres on
    checks.append(Check("rtt_mean_ms", exp * 1e3, mean * 1e3 if mean is not None else None, "reported", True,
                        "both"))
    # a ping held past ping's wait by a trace's outage counts as lost: not the link's loss
    if shape.loss == 0 and back.loss == 0 and tx and rx < tx and wait < PING_WAIT_S:
        checks.append(Check("ping_loss", 0.0, 1 - rx / tx, "no loss configured", False, "both"))
    return checks


def rate_check(shape: LinkShape, goodput_mbps: float | None, direction: str | None = None) -> Check:
    """One direction's TCP goodput against that direction's rate."""
    rate = (shape.rate_bps or 0) / 1e6
    ok = goodput_mbps is not None and goodput_mbps >= RATE_MIN_FRACTION * rate
    return Check("goodput_mbps", rate, goodput_mbps, f">= {RATE_MIN_FRACTION:.0%} of rate", ok, direction)


#: UDP and IPv4 headers plus the Ethernet header: what the rate stage counts on top of a
#: datagram's payload (the delay line and tbf count wire bytes)
UDP_WIRE_OVERHEAD = 8 + 20 + ETH_HEADER
#: the capacity check offers this much more than the link carries, so its queue stays full
CAPACITY_OFFER = 1.05
CAPACITY_TOL = 0.03


def tcp_fills(shape: LinkShape, mtu: int) -> bool:
    """Whether one TCP flow can be expected to keep the link busy: its drop-tail queue holds
    at least a round trip of data (the bandwidth-delay product). With less, each loss lets
    cubic's window fall below what the path holds (to 0.7 x (BDP + queue)) and the link idles
    until it grows back, which at 400 ms of RTT takes longer than the check lasts: the TCP
    goodput then measures TCP's recovery, not the link. calibrate judges such a link's rate
    by a UDP capacity check instead (capacity_check) and reports the TCP goodput."""
    if not shape.rate_bps:
        return True
    bdp = shape.rate_bps / 8 * 2 * (shape.delay_s + shape.jitter_s)
    return shape.queue_bytes(mtu) >= bdp


def udp_payload(mtu: int) -> int:
    """The largest IPv4 UDP datagram payload that fits the MTU unfragmented."""
    return mtu - 28


def capacity_expected_mbps(shape: LinkShape, mtu: int) -> float:
    """Payload rate a saturated link delivers in full-size UDP datagrams."""
    p = udp_payload(mtu)
    return (shape.rate_bps or 0) * p / (p + UDP_WIRE_OVERHEAD) / 1e6


def capacity_offer_bps(shape: LinkShape, mtu: int) -> int:
    """iperf3 -b (payload bits per second) that offers CAPACITY_OFFER x the link's rate."""
    return int(capacity_expected_mbps(shape, mtu) * 1e6 * CAPACITY_OFFER)


def capacity_check(shape: LinkShape, mtu: int, received_mbps: float | None, direction: str | None = None) -> Check:
    """The payload rate a receiver got while the link was offered more than it carries,
    against rate x payload / wire bytes: the link carries its rate and no more. Random loss
    configured on the link lowers the floor by that share."""
    exp = capacity_expected_mbps(shape, mtu)
    lo, hi = exp * (1 - CAPACITY_TOL) * (1 - shape.loss), exp * (1 + CAPACITY_TOL)
    ok = received_mbps is not None and lo <= received_mbps <= hi
    return Check("capacity_mbps", exp, received_mbps, f"UDP at {CAPACITY_OFFER:.0%} of rate: "
                 f"[{lo:.4g}, {hi:.4g}]", ok, direction)


def parse_capacity_mbps(iperf3_json: dict[str, Any]) -> float | None:
    """The receiver's UDP payload rate from iperf3 -J --get-server-output: the median of
    the server's one-second intervals, the first and last left out (the queue filling, and
    a test end whose control message waits behind the full queue)."""
    try:
        ivs = iperf3_json["server_output_json"]["intervals"]
        measured = [float(iv["sum"]["bits_per_second"]) for iv in ivs if not iv["sum"].get("omitted")]
        rates = measured[1:-1]
    except (KeyError, TypeError, ValueError):
        return None
    return statistics.median(rates) / 1e6 if rates else None


def rate_reported(shape: LinkShape, goodput_mbps: float | None, direction: str | None = None) -> Check:
    """The TCP goodput of a link TCP cannot be expected to fill (tcp_fills): shown, not judged."""
    rate = (shape.rate_bps or 0) / 1e6
    return Check("goodput_mbps", rate, goodput_mbps, "reported: queue < BDP, the rate is judged by UDP", True,
                 direction)


def binomial_interval(p: float, n: int, z: float = 2.576) -> tuple[float, float]:
    """Wilson score interval: sound at small p, where the normal approximation is not."""
    if n == 0:
        return 0.0, 1.0
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def loss_check(shape: LinkShape, lost: int, total: int) -> Check:
    lo, hi = binomial_interval(shape.loss, total)
    measured = lost / total if total else None
    ok = measured is not None and lo <= measured <= hi
    return Check("loss", shape.loss, measured, f"99% interval [{lo:.4f}, {hi:.4f}] for n={total}", ok)
