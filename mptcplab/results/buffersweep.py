"""Tables for buffer-sweep labs (labs/rcvbuf): one row per repetition of a swept scenario,
with the buffer it ran at, the window the receiver really advertised, what the application
received and what went over the wire.

A swept scenario's name ends in its buffer label (``emu1-mptcp-rmem200k``: family
``emu1-mptcp``, 200 KB; ``fig6b-x0.1-mptcp-b250k``: the paper's 250 KB, run scaled). KB and MB
are the paper's decimal units (375 KB = 2 x 10 Mbit/s x 150 ms). The buffer the receiver really
had is read back from the manifest (the server's tcp_rmem maximum as each node reported it),
so a scaled family shows both the paper's b and the scaled sysctl.

The advertised window is the receiver's window as the *sender's* kernel holds it: ``snd_wnd``
of the sender's sockets in the memory probe's samples (``probes/ss.csv``, ``ss -tinmM`` every
``ss_interval``), already scaled by the window-scale option, for MPTCP the connection-level
window every subflow shares. Its largest value over a run is the effective x-axis: what the
swept ``tcp_rmem`` maximum let autotuning offer.

"Re-sent" bytes are what the wire carried beyond what the application received: every
subflow's payload bytes (retransmissions included, from the capture) minus the receiver's
goodput times its duration (iperf3). Per path, the capture splits it into TCP-level
retransmissions and MPTCP-level re-sends (analysis/depth.py: data mapped again).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..metrics.buffers import app_bytes, wire_bytes, wire_minus_app
from ..record.model import Manifest, Repetition, Summary

#: ``<family>-rmem<N>k|m`` or ``<family>-b<N>k|m`` (b: the paper's buffer of a scaled family)
_LABEL = re.compile(r"^(?P<family>.+)-(?P<label>(?P<kind>rmem|b)(?P<num>\d+)(?P<unit>[km]))$")
_UNIT = {"k": 1000, "m": 1000_000}

SS_TABLE = "probes/ss.csv"

COLUMNS = ["scenario", "family", "label", "b_paper", "rmem_max", "adv_window_max", "adv_window_median",
           "rep", "goodput_mbps", "duration_s",
           "wire_bytes", "app_bytes", "resent_bytes", "tcp_retrans_bytes", "mptcp_retrans_bytes",
           "mptcp_negotiated", "subflows"]


def parse_label(scenario: str) -> tuple[str, str, int] | None:
    """(family, label, the paper's buffer in bytes) of a swept scenario name, or None."""
    m = _LABEL.match(scenario)
    if not m:
        return None
    return m["family"], m["label"], int(m["num"]) * _UNIT[m["unit"]]


def rmem_max(manifest: Manifest, scenario: str, node: str = "server") -> int | None:
    """The third value of ``net.ipv4.tcp_rmem`` as ``node`` reported it in ``scenario``."""
    value = (manifest.sysctls.get(scenario) or {}).get(node, {}).get("net.ipv4.tcp_rmem")
    if value is None:
        return None
    parts = str(value).split()
    return int(parts[2]) if len(parts) == 3 and parts[2].isdigit() else None


def advertised_window(ss: pd.DataFrame, sender: str = "client") -> tuple[float | None, float | None]:
    """(largest, median) over the samples of the receiver's advertised window as ``sender``'s
    sockets hold it (``snd_wnd``, bytes); per sample the largest over the sender's sockets (an
    MPTCP connection's subflows share one window; iperf3's idle control connection is smaller).
    (None, None) without samples."""
    if ss.empty or "snd_wnd" not in ss.columns:
        return None, None
    mine = ss[(ss["node"] == sender) & ss["snd_wnd"].notna()]
    if "socket" in mine.columns:
        mine = mine[mine["socket"].isin(["tcp", "subflow"])]
    if mine.empty:
        return None, None
    per_sample = mine.groupby("t")["snd_wnd"].max()
    return float(per_sample.max()), float(per_sample.median())


def _window_of(run_dir: Path | None, rep: Repetition) -> tuple[float | None, float | None]:
    if run_dir is None:
        return None, None
    f = run_dir / rep.rel_dir() / SS_TABLE
    if not f.is_file():  # the probe was off, or a run older than it
        return None, None
    return advertised_window(pd.read_csv(f))


def resent_bytes(rep: Repetition) -> float | None:
    """Wire bytes minus application bytes (the metric ``wire_minus_app_bytes``)."""
    return wire_minus_app(rep)


def _path_sum(rep: Repetition, field: str, path: str | None = None) -> int | None:
    vals = [getattr(s, field) for s in rep.subflows_on(path) if getattr(s, field) is not None]
    return int(sum(vals)) if vals else None


def sweep_frame(summary: Summary, manifest: Manifest, paths: Sequence[str] = (),
                run_dir: Path | None = None) -> pd.DataFrame:
    """One row per repetition of every swept scenario (COLUMNS, plus ``share_<path>`` and
    ``wire_mbps_<path>`` for each of ``paths``), in the run's scenario order. With
    ``run_dir``, the advertised window from each repetition's probes/ss.csv (else those
    columns are empty)."""
    rows = []
    for name in summary.scenario_order():
        parsed = parse_label(name)
        if parsed is None:
            continue
        family, label, b = parsed
        for r in summary.reps_of(name):
            wmax, wmed = _window_of(run_dir, r)
            row = {"scenario": name, "family": family, "label": label, "b_paper": b,
                   "rmem_max": rmem_max(manifest, name), "adv_window_max": wmax, "adv_window_median": wmed,
                   "rep": r.rep, "goodput_mbps": r.goodput_mbps,
                   "duration_s": r.duration_s, "wire_bytes": wire_bytes(r), "app_bytes": app_bytes(r),
                   "resent_bytes": resent_bytes(r),
                   "tcp_retrans_bytes": _path_sum(r, "retrans_bytes"),
                   "mptcp_retrans_bytes": _path_sum(r, "mptcp_retrans_bytes"),
                   "mptcp_negotiated": bool(r.mptcp.negotiated), "subflows": len(r.subflows)}
            for p in paths:
                row[f"share_{p}"] = sum(s.share or 0.0 for s in r.subflows_on(p))
                # the path's wire throughput (payload, re-sends included) over the receiver's duration
                wb = wire_bytes(r, p)
                row[f"wire_mbps_{p}"] = wb * 8 / r.duration_s / 1e6 if wb is not None and r.duration_s else None
            rows.append(row)
    cols = COLUMNS + [f"{k}_{p}" for p in paths for k in ("share", "wire_mbps")]
    return pd.DataFrame(rows, columns=cols)


def per_buffer(frame: pd.DataFrame, value: str = "goodput_mbps") -> pd.DataFrame:
    """Median, min, max and n of ``value`` per family and buffer (the figures' points)."""
    if frame.empty:
        return pd.DataFrame(columns=["family", "b_paper", "rmem_max", "median", "min", "max", "n"])
    g = frame.groupby(["family", "b_paper"], sort=True)
    out = g[value].agg(["median", "min", "max", "count"]).rename(columns={"count": "n"}).reset_index()
    out["rmem_max"] = g["rmem_max"].first().to_numpy()
    return out[["family", "b_paper", "rmem_max", "median", "min", "max", "n"]]


def buffer_formula(rates_bps: Iterable[float], rtt_max_s: float) -> float:
    """The paper's receive buffer for MPTCP (Section 4.2): 2 * sum(x_i) * RTT_max, in bytes,
    with x_i in bytes per second."""
    return 2.0 * sum(r / 8.0 for r in rates_bps) * rtt_max_s


def delay_pdf(delays_ms: Sequence[float] | np.ndarray, bin_ms: float = 5.0) -> pd.DataFrame:
    """The latency PDF of Fig 7: share of blocks per ``bin_ms`` bin (bin start in ms)."""
    d = np.asarray(delays_ms, dtype=float)
    d = d[np.isfinite(d)]
    if d.size == 0:
        return pd.DataFrame(columns=["bin_ms", "share"])
    edges = np.arange(0.0, np.floor(d.max() / bin_ms) * bin_ms + 2 * bin_ms, bin_ms)
    counts, _ = np.histogram(d, bins=edges)
    return pd.DataFrame({"bin_ms": edges[:-1], "share": counts / d.size})
