"""The capture filter keeps ICMPv6 errors where a capture point carries IPv6 (capture.py):
"packet too big" is what an IPv6 path-MTU problem leaves in the capture, and `tcp or icmp`
matched ICMPv4 only. Neighbour discovery and the other informational ICMPv6 types stay out
(IPv6's ARP). The filter is checked by tcpdump itself on a file of crafted packets."""

from __future__ import annotations

import shutil
import struct
import subprocess
from ipaddress import ip_address
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from mptcplab.capture import CAPTURE_FILTER, CAPTURE_FILTER6, capture_command
from mptcplab.lab.schema import CapturePoint
from mptcplab.probes.tcpdump import TcpdumpCapture


def test_an_ipv4_point_keeps_tcp_or_icmp(tmp_path: Path) -> None:
    argv = capture_command(CapturePoint(point="client:eth1"), tmp_path).argv
    assert argv[-len(CAPTURE_FILTER):] == ("tcp", "or", "icmp") and "icmp6" not in argv


def test_an_ipv6_point_adds_icmp6_errors(tmp_path: Path) -> None:
    argv = capture_command(CapturePoint(point="client:eth1"), tmp_path, ipv6=True).argv
    assert argv[-len(CAPTURE_FILTER6):] == CAPTURE_FILTER6 and "icmp6" in argv


def test_the_probe_asks_for_icmp6_at_the_points_with_an_ipv6_address(tmp_path: Path) -> None:
    fams = {"client:eth1": ["10.0.1.2"], "client:eth2": ["10.0.2.2", "fd00::2"], "server:eth1": ["fd00:1::2"]}
    net = SimpleNamespace(addresses=lambda ref: [ip_address(a) for a in fams[ref]])
    body = SimpleNamespace(capture=[CapturePoint(point=p) for p in fams])
    rep: Any = SimpleNamespace(out=tmp_path, body=body, plan=SimpleNamespace(net=net))
    got = {f"{cc.node}:{cc.iface}": "icmp6" in cc.argv for cc in TcpdumpCapture._cmds(rep)}
    assert got == {"client:eth1": False, "client:eth2": True, "server:eth1": True}


# --- tcpdump applies the filter to crafted frames -------------------------------------------

SRC6, DST6 = bytes.fromhex("fd00" + "00" * 13 + "01"), bytes.fromhex("fd00" + "00" * 13 + "02")


def _eth(ethertype: int, payload: bytes) -> bytes:
    return b"\x02" * 6 + b"\x04" * 6 + struct.pack("!H", ethertype) + payload


def _ip6(nh: int, payload: bytes) -> bytes:
    return _eth(0x86DD, struct.pack("!IHBB", 6 << 28, len(payload), nh, 64) + SRC6 + DST6 + payload)


def _ip4(proto: int, payload: bytes) -> bytes:
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 0, 0, 64, proto, 0, bytes([10, 0, 1, 1]),
                      bytes([10, 0, 1, 2]))
    return _eth(0x0800, hdr + payload)


TCP = struct.pack("!HHIIBBHHH", 40000, 5201, 1, 0, 5 << 4, 0x02, 65535, 0, 0)
FRAMES = {
    "tcp6": _ip6(6, TCP),
    "tcp4": _ip4(6, TCP),
    "icmp4 unreachable": _ip4(1, bytes([3, 4, 0, 0]) + b"\x00" * 4),
    "icmp6 packet too big": _ip6(58, bytes([2, 0, 0, 0]) + struct.pack("!I", 1280) + b"\x00" * 40),
    "icmp6 unreachable": _ip6(58, bytes([1, 0, 0, 0]) + b"\x00" * 44),
    "icmp6 neighbour solicitation": _ip6(58, bytes([135, 0, 0, 0]) + b"\x00" * 20),
    "icmp6 router advertisement": _ip6(58, bytes([134, 0, 0, 0]) + b"\x00" * 12),
    "icmp6 echo request": _ip6(58, bytes([128, 0, 0, 0]) + b"\x00" * 4),
}


def _pcap(path: Path, frames: list[bytes]) -> None:
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    for i, f in enumerate(frames):
        out += struct.pack("<IIII", 1000 + i, 0, len(f), len(f)) + f
    path.write_bytes(out)


def _kept(tmp_path: Path, filt: tuple[str, ...]) -> set[str]:
    names = list(FRAMES)
    f = tmp_path / "frames.pcap"
    _pcap(f, [FRAMES[n] for n in names])
    # -tt: the crafted timestamps (1000 + frame index) say which frames passed
    out = subprocess.run(["tcpdump", "-r", str(f), "-n", "-tt", *filt], capture_output=True, text=True, check=True)
    return {names[int(float(line.split()[0])) - 1000] for line in out.stdout.splitlines() if line.strip()}


@pytest.mark.skipif(shutil.which("tcpdump") is None, reason="tcpdump not installed")
def test_tcpdump_keeps_icmp6_errors_and_drops_neighbour_discovery(tmp_path: Path) -> None:
    assert _kept(tmp_path, CAPTURE_FILTER6) == {"tcp6", "tcp4", "icmp4 unreachable", "icmp6 packet too big",
                                                "icmp6 unreachable"}
    # what the IPv4 filter missed
    assert _kept(tmp_path, CAPTURE_FILTER) == {"tcp6", "tcp4", "icmp4 unreachable"}
