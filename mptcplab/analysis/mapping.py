"""Which DSS mapping covers a segment: by subflow sequence range (RFC 8684 3.3.1, RFC 6824
3.3.1): a mapping maps the subflow bytes [ssn, ssn + length), ssn relative to the subflow's
ISN, to the data bytes from its DSN. A segment without a DSS of its own lies inside one
sent before or with an earlier segment; "the last mapping seen" is wrong as soon as a
segment is retransmitted after later ones (it would take their mapping).
"""

from __future__ import annotations

import numpy as np


def data_starts(rel: np.ndarray, own: np.ndarray, dsn: np.ndarray, ssn: np.ndarray, dll: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """(64-bit DSN of each segment's first byte, whether a mapping covers it) for segments at
    subflow sequence ``rel`` (relative to the ISN). ``own``: the segment carried a mapping,
    ``dsn``/``ssn``/``dll`` its values (ignored elsewhere). A segment's own mapping places it;
    the others take the mapping whose range holds their first byte (of several, the one
    reaching furthest: Linux grows the mapping of a chunk not yet sent whole)."""
    out = np.zeros(len(rel), dtype=np.uint64)
    found = own.copy()
    if not own.any():
        return out, found
    off_own = (rel[own] - ssn[own]) % 2**32
    out[own] = dsn[own] + off_own.astype(np.uint64)
    m_ssn, m_dll, m_dsn = ssn[own], dll[own], dsn[own]
    order = np.lexsort((m_dll, m_ssn))
    m_ssn, m_dll, m_dsn = m_ssn[order], m_dll[order], m_dsn[order]
    end = m_ssn + m_dll
    # of the mappings starting at or before a byte, the one reaching furthest
    best = np.r_[0, np.flatnonzero(np.diff(np.maximum.accumulate(end)) > 0) + 1]
    reach = np.zeros(len(end), dtype=np.int64)
    reach[best] = best
    np.maximum.accumulate(reach, out=reach)
    rest = np.flatnonzero(~own)
    k = np.searchsorted(m_ssn, rel[rest], side="right") - 1
    ok = k >= 0
    j = reach[np.maximum(k, 0)]
    ok &= rel[rest] < end[j]
    out[rest[ok]] = m_dsn[j[ok]] + (rel[rest[ok]] - m_ssn[j[ok]]).astype(np.uint64)
    found[rest[ok]] = True
    return out, found
