"""`mptcplab calibrate`: build a two-node line with the requested link, measure it,
and say whether it is what was asked for (exit status 0 only within tolerance).

The line is an ordinary in-memory lab (two hosts, one link), so it goes through
the same validation, plan, backend and emulation as every lab run. A trace link
(``--trace``) is measured as tests/integration/test_trace_link.py measures it
(tracecheck.py: the bytes delivered per 100 ms window against the trace's
capacity under a saturating UDP flood, on a two-namespace line).
"""

from __future__ import annotations

import json
import math
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import backends, tracecheck
from .backends.base import Backend
from .capture import capture_command, parse_tcpdump_stats
from .commands import cmd
from .emulation.base import Emulator
from .emulation.linkmodel import LinkShape, QueueLimit
from .emulation.nfqueue import delayline_losses, max_lateness_p99_us
from .emulation.trace import Trace, TraceError, trace_for
from .errors import LabInputError
from .lab.limits import tbf_problem
from .lab.loader import _validate
from .lab.model import ScenarioRun
from .lab.schema import CapturePoint, ClabTopology, ExperimentBody
from .linkcheck import (
    CAPACITY_OFFER,
    Check,
    judge_rate,
    loss_check,
    ping_argv,
    rate_check,
    rate_check_cmds,
    rate_reported,
    rtt_checks,
    tcp_fills,
    tcp_timing,
    udp_payload,
)
from .net.plan import bring_up, build_plan
from .supervise import Supervisor
from .units import UnitError, parse_fraction, parse_rate, parse_time
from .values.types import IPERF3_MAX_SECONDS

CLI = "command line"


@dataclass(frozen=True)
class CalibrateRequest:
    rate: str
    delay: str = "0ms"
    jitter: str | None = None
    loss: str | None = None
    buffer: str | None = None
    mtu: int = 1500
    seconds: float = 5.0
    capture: bool = False


def _check_units(options: tuple[tuple[str, Callable[[Any], object], Any], ...]) -> None:
    """Each given option's value parsed with its parser; a bad one: one line naming the option."""
    for opt, parse, val in options:
        if val is not None:
            try:
                parse(val)
            except UnitError as e:
                raise LabInputError(CLI, opt, str(e)) from None


def _line_lab(req: CalibrateRequest) -> tuple[ClabTopology, ScenarioRun, LinkShape]:
    _check_units((("--rate", parse_rate, req.rate), ("--delay", parse_time, req.delay),
                  ("--jitter", parse_time, req.jitter), ("--loss", parse_fraction, req.loss),
                  ("--buffer", QueueLimit.parse, req.buffer)))
    if not 68 <= req.mtu <= 65535:
        raise LabInputError(CLI, "--mtu", f"must be between 68 and 65535, got {req.mtu}")
    if not 2 <= req.seconds <= IPERF3_MAX_SECONDS:
        raise LabInputError(CLI, "--seconds", f"must be between 2 and {IPERF3_MAX_SECONDS} (iperf3's limit)")
    topo = _validate(ClabTopology, {"name": "calibrate", "topology": {
        "nodes": {"a": {"kind": "linux", "image": "mptcplab/host:latest"},
                  "b": {"kind": "linux", "image": "mptcplab/host:latest"}},
        "links": [{"endpoints": ["a:eth1", "b:eth1"], "mtu": req.mtu}]}}, Path(CLI))
    link = {"rate": req.rate, "delay": req.delay}
    if req.jitter:
        link["jitter"] = req.jitter
    if req.loss:
        link["loss"] = req.loss
    if req.buffer:
        link["queue"] = req.buffer
    shape = LinkShape.parse(req.rate, req.delay, req.jitter, req.loss, req.buffer)
    bad = tbf_problem(shape, req.mtu)  # what tc would refuse, refused before any namespace exists
    if bad:
        raise LabInputError(CLI, "--rate" if bad[0] == "rate" else "--buffer", bad[1])
    tcp_max = str(tcp_buffer_max(shape))
    body = _validate(ExperimentBody, {
        "nodes": {"a": {"role": "host"}, "b": {"role": "host"}},
        "links": {"a:eth1": link},
        "sysctls": {"net.ipv4.tcp_rmem": f"4096 131072 {tcp_max}", "net.ipv4.tcp_wmem": f"4096 16384 {tcp_max}"},
        "traffic": {"flows": {"probe": {"client": "a", "server": "b", "server_address": "b:eth1", "mptcp": False}}},
    }, Path(CLI))
    return topo, ScenarioRun("calibrate", "", body, {}), shape


@dataclass(frozen=True)
class TraceCalibrateRequest:
    trace: str
    delay: str = "0ms"
    buffer: str | None = None
    mtu: int = 1500
    #: the flood's length; None: the trace's period and a second (every window measured once)
    seconds: float | None = None


@dataclass(frozen=True)
class TraceCalibration:
    """A checked ``TraceCalibrateRequest``: what ``calibrate_trace`` runs."""

    trace: Trace
    delay: str
    queue: str | int
    queue_bytes: int
    mtu: int
    seconds: float
    flood_bps: int

    def describe(self) -> str:
        return (f"{self.trace.describe()}; one-way delay {self.delay}, queue {self.queue_bytes} bytes "
                f"(drop-tail), MTU {self.mtu}; UDP flood {self.flood_bps / 1e6:g} Mbit/s for {self.seconds:g} s; "
                "emulation: nfqueue (the delay line's trace stage)")


def check_trace_request(req: TraceCalibrateRequest, base: Path) -> TraceCalibration:
    """The request checked before anything is created (LabInputError, exit status 2). The
    default queue is one the flood keeps from emptying (tracecheck.saturating_queue_bytes,
    twice, at least 100 full packets): a smaller one would measure the queue, not the replay."""
    try:
        trace = trace_for(req.trace, base)
    except TraceError as e:
        raise LabInputError(CLI, "--trace", str(e)) from None
    _check_units((("--delay", parse_time, req.delay), ("--buffer", QueueLimit.parse, req.buffer)))
    if not 576 <= req.mtu <= 65535:
        raise LabInputError(CLI, "--mtu", f"must be between 576 and 65535, got {req.mtu}")
    seconds = req.seconds if req.seconds is not None else float(math.ceil(trace.period_ms / 1000 + 1))
    if not 2 <= seconds <= IPERF3_MAX_SECONDS:
        raise LabInputError(CLI, "--seconds", f"must be between 2 and {IPERF3_MAX_SECONDS} (iperf3's limit)")
    flood = tracecheck.flood_bps(trace)
    queue: str | int = req.buffer or max(2 * tracecheck.saturating_queue_bytes(trace, flood),
                                         100 * tracecheck.OPPORTUNITY_BYTES)
    # a time ("80ms") is at the trace's peak rate, as in a lab
    qbytes = LinkShape.parse(delay=req.delay, trace=trace, queue=queue).queue_bytes(req.mtu)
    return TraceCalibration(trace, req.delay, queue, qbytes, req.mtu, seconds, flood)


def calibrate_trace(cal: TraceCalibration, delayline: Path, workdir: Path,
                    log: Callable[[str], None] = print) -> tracecheck.ReplayReport:
    """Replays the trace on a two-namespace line under the flood; the report says whether
    its 100 ms series is within tolerance (``report.ok``)."""
    return tracecheck.measure(cal.trace, delayline, workdir, cal.seconds, cal.delay, cal.queue, cal.mtu, log)


def tcp_buffer_max(shape: LinkShape) -> int:
    """Largest TCP socket buffer autotuning may grow to in the check's namespaces:
    4 x the bandwidth-delay product (data in flight, plus what the receiver holds
    before the application reads it), at least 6 MiB. Autotuning, not iperf3 -w:
    -w sets SO_SNDBUF/SO_RCVBUF, which net.core.wmem_max/rmem_max cap, and those
    are host-wide (a network namespace cannot raise them: EINVAL, measured);
    net.ipv4.tcp_rmem/tcp_wmem are per namespace and are not capped by them."""
    bdp = (shape.rate_bps or 0) / 8 * 2 * (shape.delay_s + shape.jitter_s)
    return int(max(4 * bdp, 6 * 1024 * 1024))


def calibrate(req: CalibrateRequest, emulator: Emulator, workdir: Path,
              log: Callable[[str], None] = print) -> tuple[bool, list[Check]]:
    topo, sc, shape = _line_lab(req)
    backend_cls = backends.default()
    backend_cls.clean()
    backend = backend_cls()
    plan = build_plan(topo, sc, emulator, backend, workdir)
    supervisor = Supervisor(backend.node_argv, logdir=workdir)
    link = plan.net.links[0]
    a_ip, b_ip = str(link.addr_a.ip), str(link.addr_b.ip)
    checks: list[Check] = []
    try:
        bring_up(backend, plan, supervisor)
        interval = 0.01 if shape.delay_s < 0.05 else 0.02
        p = backend.run([cmd(*ping_argv(b_ip, a_ip, 50, interval), node="a", check=False)])[0]
        checks += rtt_checks(shape, p.stdout)
        omit, measure = tcp_timing(shape, req.mtu, req.seconds)
        fills = tcp_fills(shape, req.mtu)
        log(f"TCP rate check: one cubic flow a -> b, {omit} s omitted (slow start), {measure:g} s measured; "
            f"socket buffers autotuned up to {tcp_buffer_max(shape) / 2**20:.1f} MiB "
            f"(net.ipv4.tcp_rmem/tcp_wmem in both namespaces; not window-limited)")
        if not fills:
            log(f"the queue ({shape.queue_bytes(req.mtu) / 1e6:.2f} MB) holds less than a round trip of data "
                f"({(shape.rate_bps or 0) / 8 * 2 * (shape.delay_s + shape.jitter_s) / 1e6:.2f} MB): one TCP flow's "
                "loss recovery idles such a link for longer than the check lasts, so its goodput is reported and "
                f"the rate is judged by UDP offered at {CAPACITY_OFFER:.0%} of it, "
                f"{udp_payload(req.mtu)}-byte datagrams, the receiver's median interval (a fifth of the check)")
        caps = _start_captures(backend, workdir, link) if req.capture else []
        try:
            goodput = _tcp_goodput(backend, a_ip, b_ip, measure, omit)
            checks.append((rate_check if fills else rate_reported)(shape, goodput, "a:eth1->b:eth1"))
            if not fills:
                checks.append(_udp_capacity(backend, a_ip, b_ip, shape, req.mtu, measure))
            if shape.loss > 0:
                lost, total = _udp_loss(backend, a_ip, b_ip, shape, req.seconds)
                checks.append(loss_check(shape, lost, total))
        finally:
            cap_stats = _stop_captures(backend, caps)
        if req.capture:
            dropped = sum(c.get("dropped", 0) for c in cap_stats)
            log("captures (tcpdump on both ends): " + "; ".join(
                f"{c.get('captured', '?')} packets captured, {c.get('dropped', '?')} dropped by kernel"
                for c in cap_stats))
            checks.append(Check("capture_drops", 0, dropped, "0", dropped == 0))
        supervisor.check()
        stats = supervisor.stop_all()
        for name, st in (stats or {}).items():
            log(f"delay line {name}: {json.dumps(st)}")
            if st:
                checks += delayline_checks(name, st)
    finally:
        supervisor.close()
        backend.destroy()
    return all(c.ok for c in checks), checks


def delayline_checks(name: str, st: dict[str, Any]) -> list[Check]:
    """A delay line must keep time (lateness p99 within what its delay allows) and
    lose nothing of its own, or the link measured is not the link configured."""
    direction = name.split()[-1]  # "b:eth1<-a:eth1"
    allowed = max_lateness_p99_us(st.get("delay_us"))
    p99 = st.get("lateness_us", {}).get("p99")
    out = [Check(f"late_p99_us {direction.split(':')[0]}", allowed, p99, f"<= {allowed:.0f} us",
                 p99 is not None and p99 <= allowed)]
    drops = delayline_losses(st)
    if drops:
        out.append(Check(f"dl_drops {direction.split(':')[0]}", 0, len(drops), "0: " + "; ".join(drops), False))
    return out


def _start_captures(backend: Backend, workdir: Path, link: Any) -> list[tuple[subprocess.Popen[bytes], Path]]:
    """tcpdump at both ends, as a lab captures (capture.py: headers, 16 MiB buffer)."""
    caps = []
    for node in ("a", "b"):
        cc = capture_command(CapturePoint(point=f"{node}:eth1"), workdir)
        caps.append((backend.spawn(node, list(cc.argv), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE), cc.path))
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not all(path.exists() for _, path in caps):
        time.sleep(0.05)  # tcpdump creates the file once it captures
    return caps


def _stop_captures(backend: Backend, caps: list[tuple[subprocess.Popen[bytes], Path]]) -> list[dict[str, int]]:
    out = []
    for proc, path in caps:
        backend.signal(proc, signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        out.append(parse_tcpdump_stats(err.decode(errors="replace")))
        path.unlink(missing_ok=True)
    return out


def _iperf(backend: Backend, client_argv: list[str]) -> dict[str, Any] | None:
    srv = backend.spawn("b", ["iperf3", "-s", "-1", "-p", "5299"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if backend.run([cmd("ss", "-Hltn", "sport = :5299", node="b", check=False)])[0].stdout.strip():
                break
            time.sleep(0.02)
        p = backend.run([cmd(*client_argv, node="a", check=False)])[0]
        try:
            return json.loads(p.stdout)
        except ValueError:
            return None
    finally:
        backend.signal(srv, signal.SIGTERM)
        srv.wait(timeout=5)


def _tcp_goodput(backend: Backend, a_ip: str, b_ip: str, seconds: float, omit: int = 1) -> float | None:
    # -O: slow start is not the link's steady-state rate (tcp_timing)
    # cubic, whatever the host's default: the link, not the algorithm, is measured
    data = _iperf(backend, ["iperf3", "-c", b_ip, "-B", a_ip, "-p", "5299", "-t", f"{seconds:g}", "-O", str(omit),
                            "-C", "cubic", "-J"])
    try:
        return data["end"]["sum_received"]["bits_per_second"] / 1e6 if data else None
    except KeyError:
        return None


def _udp_capacity(backend: Backend, a_ip: str, b_ip: str, shape: LinkShape, mtu: int,
                  seconds: float) -> Check:
    """The run's own rate check of a link TCP cannot fill (linkcheck.rate_check_cmds: UDP
    above the rate, the receiver's median interval), a -> b, judged by linkcheck.judge_rate."""
    rc = rate_check_cmds("b", "a", a_ip, b_ip, seconds, shape=shape, mtu=mtu)
    assert rc.server.node is not None and rc.client.node is not None
    srv = backend.spawn(rc.server.node, list(rc.server.argv), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not backend.run([rc.listening])[0].stdout.strip():
            time.sleep(0.02)
        out = backend.run([rc.client])[0].stdout
    finally:
        backend.signal(srv, signal.SIGTERM)
        srv.wait(timeout=5)
    return judge_rate(rc, shape, mtu, out, "a:eth1->b:eth1")


def _udp_loss(backend: Backend, a_ip: str, b_ip: str, shape: LinkShape, seconds: float) -> tuple[int, int]:
    rate = min((shape.rate_bps or 10**9) // 2, 20_000_000)
    data = _iperf(backend, ["iperf3", "-c", b_ip, "-B", a_ip, "-p", "5299", "-u", "-b", str(rate), "-l", "1000",
                            "-t", f"{seconds:g}", "-J"])
    try:
        s = data["end"]["sum"] if data else {}
        return int(s["lost_packets"]), int(s["packets"])
    except KeyError:
        return 0, 0


def render(checks: list[Check]) -> str:
    lines = [f"{'quantity':<14} {'configured':>12} {'measured':>12} {'error':>9}  tolerance"]
    for c in checks:
        meas = f"{c.measured:.4g}" if c.measured is not None else "none"
        err = f"{(c.measured - c.configured) / c.configured:+.1%}" if c.measured is not None and c.configured else ""
        lines.append(f"{c.quantity:<14} {c.configured:>12.4g} {meas:>12} {err:>9}  {c.tolerance}  "
                     f"{'ok' if c.ok else 'OUT OF TOLERANCE'}")
    return "\n".join(lines)
