"""Every data byte delivered exactly once (issue 33): generated connections whose data-level
bytes are split over two subflows, with losses (the lost copy is not in the receiver's capture
and comes again later as a TCP retransmission, without its DSS when the lost segment had
none), MPTCP-level reinjections on the other subflow, reordering within a subflow, segments
that rely on an earlier segment's mapping, 4- and 8-octet DSNs, and sometimes v1's data on
the MP_CAPABLE ACK. Captured at the receiver, the analysis must place every data segment
(none unmapped), count each data byte once over the subflows (first_bytes), leave no hole
never filled, and map every byte in dsn.csv. Seeded random generator (hypothesis is not in
the venv), so a failure names its seed."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pcapkit as K
import pytest
from test_depth import ACK, C1, C2, SPEC, Conn, S

from mptcplab.analysis import CaptureFile, analyze_flow, pcapread

pytestmark = pytest.mark.skipif(not pcapread.library_path().is_file(),
                                reason="native capture reader not built (make -C native)")

SYN, PSH = 0x02, 0x08
ISN = {1: 100, 2: 700}          # the client's ISN on each subflow (Conn.handshakes)


@dataclass
class Seg:
    on: int                      # subflow: 1 initial, 2 join
    ssn: int                     # relative subflow sequence number of the first byte
    n: int
    dsn: int | None              # relative DSN of its mapping (None: relies on an earlier segment's)
    map_ssn: int = 0             # the mapping's subflow sequence number and length
    map_len: int = 0
    dsn64: bool = True
    mpc: bool = False            # carried by v1's MP_CAPABLE with data (data byte 1, subflow byte 1)


def generate(rng: random.Random) -> tuple[list[Seg], int]:
    """(the segments in arrival order at the receiver, total data bytes)."""
    total, mpc_first = 0, rng.random() < 0.3
    sent: dict[int, list[Seg]] = {1: [], 2: []}
    next_ssn = {1: 1, 2: 1}
    chunks: list[tuple[int, int]] = []
    for _ in range(rng.randint(4, 25)):
        n = rng.randint(1, 3000)
        chunks.append((total + 1, n))
        total += n

    def send(on: int, dsn: int, n: int, mpc: bool = False) -> None:
        """One mapping on subflow ``on``, cut into segments; the DSS on the first one, or all."""
        ssn = next_ssn[on]
        next_ssn[on] += n
        every, wide = rng.random() < 0.5, rng.random() < 0.5
        off = 0
        while off < n:
            k = n - off if mpc else min(n - off, rng.randint(200, 1460))
            own = off == 0 or every
            sent[on].append(Seg(on, ssn + off, k, dsn if own else None, ssn, n, wide, mpc))
            off += k

    for i, (dsn, n) in enumerate(chunks):
        on = 1 if (i == 0 and mpc_first) else rng.choice((1, 2))
        send(on, dsn, n, mpc=i == 0 and mpc_first)
        if rng.random() < 0.2 and not (i == 0 and mpc_first):
            send(3 - on, dsn, n)                        # reinjected on the other subflow
    arrivals: dict[int, list[Seg]] = {}
    for on, segs in sent.items():
        seen: list[Seg] = []
        late: list[Seg] = []
        for s in segs:
            # lost (the receiver never saw it, never the first segment: it holds the handshake's
            # place in tests that need one) or delivered
            (late if seen and rng.random() < 0.15 else seen).append(s)
        for s in late:                                  # each loss retransmitted later, as it was
            seen.insert(rng.randint(seen.index(s) if s in seen else 1, len(seen)), s)
        for j in range(1, len(seen)):                   # some neighbours swapped: reordering
            if rng.random() < 0.1:
                seen[j - 1], seen[j] = seen[j], seen[j - 1]
        if rng.random() < 0.3 and seen:                 # a spurious TCP retransmission
            seen.append(seen[rng.randrange(len(seen))])
        arrivals[on] = seen
    out: list[Seg] = []
    while arrivals[1] or arrivals[2]:                   # the two subflows interleaved at random
        on = rng.choice([o for o in (1, 2) if arrivals[o]])
        out.append(arrivals[on].pop(0))
    return out, total


def write(path: Path, segs: list[Seg]) -> Path:
    c = Conn()
    c.add(C1, 40000, S, 5201, 100, 0, SYN, K.mp_capable())
    c.add(S, 5201, C1, 40000, 500, 101, SYN | ACK, K.mp_capable(sendkey=c.ks))
    mpc = [s for s in segs if s.mpc]
    if not mpc:
        c.add(C1, 40000, S, 5201, 101, 501, ACK, K.mp_capable(sendkey=c.kc, recvkey=c.ks))
    # the join's handshake (Conn.handshakes, without the initial subflow's)
    hs = Conn()
    hs.handshakes()
    c.frames += [(c.t + i * 0.001, f) for i, (_, f) in enumerate(hs.frames[3:7])]
    c.t += 0.005
    for s in segs:
        src, sp = (C1, 40000) if s.on == 1 else (C2, 40001)
        seq = ISN[s.on] + s.ssn
        if s.mpc:
            opt = K.mp_capable(sendkey=c.kc, recvkey=c.ks, dll=s.map_len)
        elif s.dsn is None:
            opt = K.dss(data_ack=c.ds + 1)
        else:
            d = c.dc + s.dsn
            opt = K.dss(data_ack=c.ds + 1, dsn=d % (2**64 if s.dsn64 else 2**32), dsn64=s.dsn64,
                        ssn=s.map_ssn, dll=s.map_len)
        c.add(src, sp, S, 5201, seq, 501 if s.on == 1 else 901, ACK | PSH, opt, b"x" * s.n)
    total = max(s.dsn + s.map_len for s in segs if s.dsn is not None) - 1
    for on in (1, 2):                                  # the receiver acknowledges everything
        end = max((s.ssn + s.n for s in segs if s.on == on), default=1)
        c.ack(on, ISN[on] + end, total + 1)
    return c.write(path)


@pytest.mark.parametrize("seed", range(40))
def test_every_data_byte_is_delivered_exactly_once(tmp_path: Path, seed: int) -> None:
    segs, total = generate(random.Random(seed))
    r = analyze_flow([CaptureFile(write(tmp_path / "c.pcap", segs), "p")], SPEC)
    assert r.mptcp_negotiated or any(s.mpc for s in segs)
    # every captured data segment placed by a mapping, none dropped as unmapped
    assert r.hol_connection["hol_segments"] == len(segs)
    assert r.hol_connection["hol_never"] == 0                        # every hole filled in the end
    assert sum(s.first_bytes or 0 for s in r.subflows) == total       # each byte once, over the subflows
    dsn = r.dsn.to_pandas()
    maps = dsn[dsn["kind"] == "map"]
    covered = np.zeros(total + 2, dtype=bool)
    for d, n in zip(maps["dsn"], maps["length"], strict=True):
        assert 1 <= d and d + n <= total + 1                         # no mapping outside the data
        covered[d:d + n] = True
    assert covered[1:total + 1].all()
