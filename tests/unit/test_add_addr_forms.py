"""ADD_ADDR in both versions' forms (issue 33), read by the native reader and checked against
tshark: RFC 6824 (v0) carries the IP version in the subtype's low nibble and no HMAC, RFC 8684
(v1) the echo bit there and a truncated HMAC unless echoed; each with an optional port, for
IPv4 and IPv6. Options built here from the RFCs' layouts, apart from pcapkit.add_addr (v1)."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pandas as pd
import pcapkit as K
import pytest
from test_mptcp_versions import KS, SPEC, connection, sha1_top32

from mptcplab.analysis import CaptureFile, analyze_flow, pcapread
from mptcplab.analysis.pcapread import extract

pytestmark = pytest.mark.skipif(not pcapread.library_path().is_file(),
                                reason="native capture reader not built (make -C native)")

ACK = 0x10
S, C1 = "10.0.3.2", "10.0.1.2"


def add_addr_v0(addr: str, addr_id: int, port: int | None = None) -> bytes:
    """RFC 6824 3.4.1: kind, length, subtype 3 | IPVer, address ID, address, [port]."""
    ver = 4 if ":" not in addr else 6
    body = bytes([addr_id]) + K.ip_bytes(addr) + (struct.pack("!H", port) if port is not None else b"")
    return bytes([30, 3 + len(body), (3 << 4) | ver]) + body


#: (option, address, id, port, echo) per form
FORMS_V0 = [(add_addr_v0("10.0.2.9", 2), "10.0.2.9", 2, None, False),
            (add_addr_v0("10.0.2.8", 3, 5202), "10.0.2.8", 3, 5202, False),
            (add_addr_v0("fd00::9", 4), "fd00::9", 4, None, False),
            (add_addr_v0("fd00::8", 5, 5203), "fd00::8", 5, 5203, False)]
FORMS_V1 = [(K.add_addr("10.0.2.9", 2, hmac=0x0102030405060708), "10.0.2.9", 2, None, False),
            (K.add_addr("10.0.2.9", 2, echo=True), "10.0.2.9", 2, None, True),
            (K.add_addr("10.0.2.8", 3, port=5202, hmac=7), "10.0.2.8", 3, 5202, False),
            (K.add_addr("10.0.2.8", 3, port=5202, echo=True), "10.0.2.8", 3, 5202, True),
            (K.add_addr("fd00::9", 4, hmac=9), "fd00::9", 4, None, False),
            (K.add_addr("fd00::8", 5, port=5203, hmac=9), "fd00::8", 5, 5203, False),
            (K.add_addr("fd00::8", 5, port=5203, echo=True), "fd00::8", 5, 5203, True)]


def capture(tmp_path: Path, ver: int, forms: list[tuple[bytes, str, int, int | None, bool]]) -> Path:
    """A v``ver`` connection, then each ADD_ADDR from the server on the initial subflow."""
    frames = connection(ver, sha1_top32(KS) if ver == 0 else 0)
    frames += [K.eth(K.ipv4(S, C1, 6, K.tcp(5201, 40000, 501, 3101, ACK, opt))) for opt, *_ in forms]
    return K.write_pcap(tmp_path / f"v{ver}.pcap", [(100 + i / 1000, f) for i, f in enumerate(frames)])


@pytest.mark.parametrize(("ver", "forms"), [(0, FORMS_V0), (1, FORMS_V1)])
def test_add_addr_forms_are_read(tmp_path: Path, ver: int, forms: list[tuple[bytes, str, int, int | None, bool]]
                                 ) -> None:
    path = capture(tmp_path, ver, forms)
    pk = extract([CaptureFile(path, "p")])
    rows = pk.to_pandas().tail(len(forms))
    assert not rows["malformed"].any()
    assert list(rows["addaddr"].astype(str)) == [f[1] for f in forms]
    assert list(rows["addr_id"]) == [f[2] for f in forms]
    assert [None if pd.isna(p) else int(p) for p in rows["add_port"]] == [f[3] for f in forms]
    assert list(rows["add_echo"]) == [f[4] for f in forms]
    r = analyze_flow([CaptureFile(path, "p")], SPEC)
    assert r.mptcp_version == ver
    assert r.add_addrs == list(dict.fromkeys(f[1] for f in forms))
    ev = r.mptcp_events.to_pandas()[r.mptcp_events.to_pandas()["event"] == "ADD_ADDR"]
    assert list(ev["detail"]) == [f"{f[1]} id={f[2]}" + (" echo" if f[4] else "") for f in forms]


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")
@pytest.mark.parametrize(("ver", "forms"), [(0, FORMS_V0), (1, FORMS_V1)])
def test_add_addr_forms_agree_with_tshark(tmp_path: Path, ver: int,
                                          forms: list[tuple[bytes, str, int, int | None, bool]]) -> None:
    path = capture(tmp_path, ver, forms)
    out = subprocess.run(["tshark", "-n", "-r", str(path), "-Y", "tcp.options.mptcp.subtype == 3", "-T", "fields",
                          "-e", "tcp.options.mptcp.addrid", "-e", "tcp.options.mptcp.ipv4", "-e",
                          "tcp.options.mptcp.ipv6", "-e", "tcp.options.mptcp.port", "-e", "tcp.options.mptcp.echo"],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    got = []
    for line in out:
        aid, v4, v6, port, echo = line.split("\t")
        got.append((v4 or v6, int(aid), int(port) if port else None, echo == "1"))
    assert got == [(f[1], f[2], f[3], f[4]) for f in forms]
