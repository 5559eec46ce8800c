"""The native reader checked against tshark, field by field.

tshark's dissectors are the reference: the tests (unit: tests/data and hand-made packets;
integration: a real two-path MPTCP run) read the same files with both readers and require
``differences`` to be empty. Hand-written; the few places where the two legitimately differ
are listed here, each with the reason, so nothing else can differ silently.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from . import pcapread, tshark
from .model import CaptureFile
from .packets import COLUMNS

#: (column, only on ICMP rows): tshark does not report ``tcp.seq_raw`` / ``tcp.len`` for the
#: TCP header quoted inside an ICMP error; the native reader does (the quoted segment's
#: sequence number tells which segment provoked the error)
ICMP_ONLY_NATIVE = ("seq", "tlen")

#: tshark 4.0 does not show the 2-byte checksum at the end of a DSS mapping (observed on a
#: 20-byte DSS built per RFC 8684: 4-byte data ACK and DSN, SSN, length, checksum); the
#: checksum flag is compared on MP_CAPABLE rows only, and the DSS case is checked against the
#: RFC layout in tests/unit/test_pcapread.py
DSS_CSUM_NOT_SHOWN = "csum"


def differences(native: pd.DataFrame, oracle: pd.DataFrame, limit: int = 5) -> list[str]:
    """One line per column whose values differ (with up to ``limit`` examples), empty when the
    tables agree. Times must agree within 1 us (both are float64 epoch seconds, rounded from
    nanoseconds along different routes)."""
    out: list[str] = []
    if len(native) != len(oracle):
        return [f"packet count: native {len(native)}, tshark {len(oracle)}"]
    icmp = ~np.isnan(oracle["icmp_type"].to_numpy())
    for col in COLUMNS:
        if col in tshark.NOT_FROM_TSHARK:
            continue
        a, b = native[col], oracle[col]
        if col == "t":
            bad = ~np.isclose(a.to_numpy(), b.to_numpy(), atol=1e-6, rtol=0)
        else:
            na, nb = pd.isna(a).to_numpy(), pd.isna(b).to_numpy()
            xa = np.where(na, None, a.astype(object).to_numpy())
            xb = np.where(nb, None, b.astype(object).to_numpy())
            bad = (na != nb) | (xa != xb)
            if col in ICMP_ONLY_NATIVE:
                bad &= ~icmp
            if col == DSS_CSUM_NOT_SHOWN:
                bad &= pd.isna(native["dsn"]).to_numpy()
        if bad.any():
            rows = np.flatnonzero(bad)[:limit]
            ex = ", ".join(f"{native['point'].iat[i]}#{native['frame'].iat[i]}: {a.iat[i]!r} vs {b.iat[i]!r}"
                           for i in rows)
            out.append(f"{col}: {int(bad.sum())} packets differ (native vs tshark: {ex})")
    return out


def compare_files(captures: Sequence[CaptureFile]) -> list[str]:
    """Read ``captures`` with both readers; the differences (see ``differences``)."""
    return differences(pcapread.extract(captures), tshark.extract(captures, workers=1))
