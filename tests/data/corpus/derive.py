"""Make the corpus's derived MPTCP v1 files from this repository's own Ethernet captures.

    python3 tests/data/corpus/derive.py        # from the repository root; rewrites the files

No public MPTCP v1 capture with a redistribution licence was found (README.md), so the v1
rows of the corpus are the repository's own captures (tests/data, kernel 6.18) re-framed as
other capture setups make them: several interfaces merged by time under Linux cooked v2
headers (what ``tcpdump -i any`` writes), raw IP (a tunnel or a phone's capture), pcapng.
editcap relabels a file's link type but does not rewrite its headers, and mergecap cannot
change link types, so the re-framing is done here (the pcap format is a 24-byte file header
and a 16-byte record header per packet); the cut to the first packets and pcapng are
editcap's. The packets themselves (IP and TCP headers, MPTCP options) are unchanged.
"""

from __future__ import annotations

import struct
import subprocess
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parent

LINKTYPE_ETHERNET = 1
LINKTYPE_RAW = 101
LINKTYPE_LINUX_SLL2 = 276


def read_pcap(path: Path) -> list[tuple[int, int, int, bytes]]:
    """(seconds, sub-second in ns, original length, Ethernet frame) of every packet."""
    raw = path.read_bytes()
    magic = raw[:4]
    order = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    nano = magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    (link,) = struct.unpack(order + "I", raw[20:24])
    if link != LINKTYPE_ETHERNET:
        raise SystemExit(f"{path}: link type {link}, expected Ethernet")
    out = []
    off = 24
    while off + 16 <= len(raw):
        sec, frac, incl, orig = struct.unpack(order + "IIII", raw[off:off + 16])
        out.append((sec, frac if nano else frac * 1000, orig, raw[off + 16:off + 16 + incl]))
        off += 16 + incl
    return out


def reframe(frame: bytes, link: int, ifindex: int, local: set[bytes]) -> tuple[bytes, int]:
    """The frame under ``link``'s header, and how much longer it got (negative: shorter)."""
    ethertype, payload = frame[12:14], frame[14:]
    if link == LINKTYPE_RAW:
        return payload, -14
    src = payload[12:16] if ethertype == b"\x08\x00" else payload[8:24]
    outgoing = 4 if src in local else 0              # PACKET_OUTGOING / PACKET_HOST
    head = ethertype + b"\x00\x00" + struct.pack(">IHBB", ifindex, 1, outgoing, 6) + frame[6:12] + b"\x00\x00"
    return head + payload, len(head) - 14


def as_pcap(path: Path, tmp: Path) -> Path:
    """``path`` as a pcap file (editcap converts pcapng; a pcap file is copied as is)."""
    out = tmp / f"{len(list(tmp.iterdir()))}.pcap"
    subprocess.run(["editcap", "-F", "pcap", str(path), str(out)], check=True)
    return out


def write(out: Path, link: int, inputs: list[Path], local: set[str], first: int | None) -> None:
    """``inputs`` merged by time (stable), re-framed as ``link``, the first ``first`` kept."""
    addrs = {bytes(int(x) for x in a.split(".")) for a in local}
    pkts = []
    with tempfile.TemporaryDirectory() as tmp:
        for k, p in enumerate(inputs, start=1):
            pkts += [(s, ns, orig, k, fr) for s, ns, orig, fr in read_pcap(as_pcap(p, Path(tmp)))]
    pkts.sort(key=lambda x: (x[0], x[1]))
    if first is not None:
        pkts = pkts[:first]
    body = [struct.pack("<IHHiIII", 0xa1b23c4d, 2, 4, 0, 0, 262144, link)]
    for s, ns, orig, k, fr in pkts:
        new, grow = reframe(fr, link, k, addrs)
        body.append(struct.pack("<IIII", s, ns, len(new), orig + grow) + new)
    out.write_bytes(b"".join(body))


def main() -> None:
    client = {"10.0.1.2", "10.0.2.2"}
    write(HERE / "v1_client_download_sll2.pcap", LINKTYPE_LINUX_SLL2,
          [DATA / "mptcp_pmtud_download__client_eth1.pcap", DATA / "mptcp_pmtud_download__client_eth2.pcap"],
          client, 2000)
    write(HERE / "v1_client_loss_rawip.pcap", LINKTYPE_RAW,
          [DATA / "ctrl_resend/client_eth1.pcap", DATA / "ctrl_resend/client_eth2.pcap"], client, None)
    with tempfile.TemporaryDirectory() as tmp:
        cut = Path(tmp) / "cut.pcap"
        subprocess.run(["editcap", "-r", str(DATA / "mptcp_pmtud_download__server_eth0.pcap"), str(cut), "1-2000"],
                       check=True)
        subprocess.run(["editcap", "-F", "pcapng", str(cut), str(HERE / "v1_server_download_eth.pcapng")], check=True)


if __name__ == "__main__":
    main()
