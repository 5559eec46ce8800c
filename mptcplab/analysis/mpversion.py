"""What depends on the MPTCP version of a connection: the hash of a key (token, IDSN), and
the widening of 4-octet data sequence numbers.

RFC 6824 (v0) hashes a key with SHA-1, RFC 8684 (v1) with SHA-256; both take the token from
the most significant 32 bits of the hash and the initial data sequence number (IDSN) from
the least significant 64 bits. The version of a connection is the one its SYN/ACK's
MP_CAPABLE carries (the server answers with the version it agrees to, RFC 8684 3.1), else
that of the client's first MP_CAPABLE (flows._handshake).
"""

from __future__ import annotations

import hashlib

import numpy as np

V0, V1 = 0, 1


def _digest(key: int, version: int) -> bytes:
    b = key.to_bytes(8, "big")
    return hashlib.sha1(b).digest() if version == V0 else hashlib.sha256(b).digest()


def token(key: int, version: int) -> int:
    """The token of the side whose MP_CAPABLE key is ``key`` (RFC 6824/8684 section 3.2)."""
    return int.from_bytes(_digest(key, version)[:4], "big")


def idsn(key: int, version: int) -> int:
    """The initial data sequence number of the side whose MP_CAPABLE key is ``key``."""
    return int.from_bytes(_digest(key, version)[-8:], "big")


def tokens(key: int, version: int | None) -> tuple[int, ...]:
    """The tokens ``key`` may stand for: one when the version is known, else both (v1 first)."""
    return (token(key, version),) if version is not None else (token(key, V1), token(key, V0))


_M32 = np.uint64(0xFFFFFFFF)


def widen(values: np.ndarray, is64: np.ndarray, ref: int) -> np.ndarray:
    """64-bit values from a mix of 8- and 4-octet ones, in the order they were sent: each
    4-octet value takes the upper 32 bits that put it nearest the value before it (the last
    8-octet one, or ``ref``, the IDSN, before the first), so a run of 4-octet numbers follows
    the sequence past 2^32 the way the receiver expands them (RFC 6824 / 8684 section 3.3)."""
    v = values.astype(np.uint64)
    if is64.all() or len(v) == 0:
        return v
    low = (v & _M32).astype(np.int64)
    prev = np.r_[np.int64(ref & 0xFFFFFFFF), low[:-1]]
    # the step from the value before, in [-2^31, 2^31): 0 at an 8-octet value, which resets
    step = (low - prev + (1 << 31)) % (1 << 32) - (1 << 31)
    step[is64] = 0
    run = np.cumsum(step)
    idx = np.where(is64, np.arange(len(v)), -1)
    np.maximum.accumulate(idx, out=idx)
    anchor = np.where(idx >= 0, v[np.maximum(idx, 0)], np.uint64(ref))
    since = run - np.where(idx >= 0, run[np.maximum(idx, 0)], 0)
    # modulo 2^64: a negative step wraps through the unsigned view
    out = anchor + since.view(np.uint64)
    return np.where(is64, v, out).astype(np.uint64)


def widen_rows(parts: list[np.ndarray], values: np.ndarray, is64: np.ndarray, times: np.ndarray,
               ref: int | None) -> list[np.ndarray]:
    """``widen`` over the rows of several subflows together, in time order (the data sequence
    space is the connection's: a subflow's first 4-octet DSN sits next to what the others
    sent before it), returned per part. ``values``, ``is64``, ``times``: whole columns,
    indexed by the rows in ``parts``. ``ref`` None (no IDSN): the lowest 8-octet value, else
    the lowest value."""
    rows = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    if len(rows) == 0:
        return [np.zeros(0, dtype=np.uint64) for _ in parts]
    raw, wide64 = values[rows].astype(np.uint64), is64[rows]
    if ref is None:
        ref = int(raw[wide64].min()) if wide64.any() else int(raw.min())
    order = np.argsort(times[rows], kind="stable")
    out = np.empty(len(rows), dtype=np.uint64)
    out[order] = widen(raw[order], wide64[order], ref)
    return np.split(out, np.cumsum([len(p) for p in parts])[:-1])
