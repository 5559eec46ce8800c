"""Packet capture at the lab's capture points with tcpdump: its command lines and its
counters. Generators only: the capture probe (probes/tcpdump.py) and the calibration run them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the probe registry, which the lab schema imports, lists the capture
    from .lab.schema import CapturePoint

# TCP and ICMP only: ARP and IPv6 router chatter would only add noise
CAPTURE_FILTER = ("tcp", "or", "icmp")
# where the point carries IPv6, its ICMPv6 errors too (types below 128: unreachable, packet too
# big, time exceeded, parameter problem); the informational types are neighbour discovery,
# router advertisements and MLD, IPv6's ARP and router chatter. `icmp6` does not chase
# extension headers, so ip6[40] is the ICMPv6 type
CAPTURE_FILTER6 = (*CAPTURE_FILTER, "or", "(", "icmp6", "and", "ip6[40]", "<", "128", ")")


@dataclass(frozen=True)
class CaptureCommand:
    node: str
    iface: str
    path: Path
    argv: tuple[str, ...]


def capture_file_name(point: str) -> str:
    return "capture-" + point.replace(":", "-") + ".pcap"


def capture_command(cp: CapturePoint, outdir: Path, ipv6: bool = False) -> CaptureCommand:
    """tcpdump at ``cp``; ``ipv6``: the point's interface has an IPv6 address (its filter then
    keeps ICMPv6 errors, "packet too big" among them)."""
    node, iface = cp.point.split(":", 1)
    path = outdir / capture_file_name(cp.point)
    # -B: a 16 MiB kernel buffer so 2 x 100 Mbit/s with 1500-byte frames is not dropped;
    # --immediate-mode: without it, tcpdump stopped by a signal loses the last ~0.5 s
    # -Z root: stay root, so the file can be written wherever the results directory is
    # --time-stamp-precision nano (asked by the point): the file keeps nanoseconds, which the
    # native reader opens with (analysis/pcapread); the kernel stamps packets in ns anyway
    precision = ("--time-stamp-precision", "nano") if cp.timestamps == "nano" else ()
    argv = ("tcpdump", "-i", iface, "-n", "-s", str(cp.snaplen), "-B", "16384", "--immediate-mode", "-Z", "root",
            *precision, "-w", str(path), *(CAPTURE_FILTER6 if ipv6 else CAPTURE_FILTER))
    return CaptureCommand(node, iface, path, argv)


def parse_tcpdump_stats(stderr: str) -> dict[str, int]:
    """tcpdump prints its counters on exit: captured, received by filter, dropped by kernel."""
    out: dict[str, int] = {}
    for key, pat in (("captured", r"(\d+) packets? captured"), ("received", r"(\d+) packets? received by filter"),
                     ("dropped", r"(\d+) packets? dropped by kernel")):
        m = re.search(pat, stderr)
        if m:
            out[key] = int(m.group(1))
    return out
