"""One per-subflow time series per repetition: the capture's 100 ms throughput joined
with tcp_probe's congestion state, written to ``probes/subflow_series.csv``.

Subflows are the capture's (analysis: SubflowResult, known by 4-tuple and path
label). A tcp_probe sample belongs to a subflow when its socket's 4-tuple is the
subflow's seen from the *data sender* (upload: src = the client's address and port;
download: src = the server's): the receiver's socket has a cwnd too, but it sends no
data, so its cwnd says nothing. Times are seconds from the capture's time origin
(``t0_epoch``: the data connection's first SYN), the origin of timeseries.csv; both
clocks are the host's realtime clock (tcp_probe.py says how trace times are mapped).

Several flows (labs/cc: an MPTCP flow beside a single-path TCP flow): every flow's
subflows are joined, named in ``flow``; a TCP connection is its own one subflow. The
axis stays the measured flow's: another flow's capture bins, counted from its own first
SYN, are moved by the difference of the two SYNs, rounded to a bin (the flows of one
repetition start within milliseconds of each other, so the rounding is at most half a bin).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .base import OtherFlow

if TYPE_CHECKING:  # the lab schema imports the probes: the analysis is imported where used
    from ..analysis.model import FlowAnalysis, SubflowResult

COLUMNS = ["t", "flow", "path", "subflow", "src", "sport", "dst", "dport", "backup", "bytes", "mbps", "snd_cwnd",
           "ssthresh", "srtt_ms", "snd_wnd", "samples"]


def sender_samples(samples: pd.DataFrame, sf: SubflowResult, upload: bool) -> pd.DataFrame:
    """The tcp_probe samples of the data sender's socket of this subflow."""
    if samples.empty:
        return samples
    p = samples[samples["event"] == "tcp_probe"]
    local, remote = ((sf.src, sf.sport), (sf.dst, sf.dport)) if upload else ((sf.dst, sf.dport), (sf.src, sf.sport))
    m = (p["src"] == local[0]) & (p["sport"] == local[1]) & (p["dst"] == remote[0]) & (p["dport"] == remote[1])
    return p[m]


def subflow_series(timeseries: pd.DataFrame, subflows: Sequence[SubflowResult], samples: pd.DataFrame,
                   t0_epoch: float | None, upload: bool, backup_paths: Sequence[str] = (),
                   bin_s: float = 0.1, flow: str = "", shift_s: float = 0.0) -> pd.DataFrame:
    """One row per (bin, subflow): the capture's bytes/mbps in the bin, and tcp_probe's
    state at the end of the bin (its last sample there: cwnd in segments, ssthresh,
    srtt in ms, snd_wnd in bytes) with the number of samples; no sample -> empty.
    ``shift_s`` moves ``timeseries`` onto t0_epoch's axis (another flow's: module doc)."""
    if t0_epoch is None or not subflows:
        return pd.DataFrame(columns=COLUMNS)
    parts = []
    for sf in subflows:
        ts = timeseries[timeseries["subflow"] == sf.name][["t", "bytes", "mbps"]].copy()
        ts["t"] = ts["t"] + shift_s
        s = sender_samples(samples, sf, upload)
        rel = s["t"].to_numpy() - t0_epoch
        b = np.floor(rel / bin_s).astype(np.int64) if len(rel) else np.zeros(0, dtype=np.int64)
        probe = pd.DataFrame({"bin": b, "snd_cwnd": s["snd_cwnd"].to_numpy(), "ssthresh": s["ssthresh"].to_numpy(),
                              "srtt_ms": s["srtt_us"].to_numpy() / 1000.0, "snd_wnd": s["snd_wnd"].to_numpy()})
        probe = probe[probe["bin"] >= 0]
        last = probe.groupby("bin").last()
        last["samples"] = probe.groupby("bin").size()
        ts["bin"] = np.round(ts["t"].to_numpy() / bin_s).astype(np.int64)
        bins = sorted(set(ts["bin"]) | set(last.index))
        frame = pd.DataFrame({"bin": bins}).merge(ts, on="bin", how="left").merge(
            last, left_on="bin", right_index=True, how="left")
        frame["t"] = np.round(frame["bin"] * bin_s, 9)
        frame["bytes"] = frame["bytes"].fillna(0).astype(np.int64)
        frame["mbps"] = frame["mbps"].fillna(0.0)
        frame["samples"] = frame["samples"].fillna(0).astype(np.int64)
        info: dict[str, Any] = {"flow": flow, "path": sf.path, "subflow": sf.name, "src": sf.src, "sport": sf.sport,
                                "dst": sf.dst, "dport": sf.dport, "backup": sf.path in backup_paths}
        for k, v in info.items():
            frame[k] = v
        parts.append(frame[COLUMNS])
    return pd.concat(parts, ignore_index=True)


def series(df: pd.DataFrame, fa: FlowAnalysis, upload: bool, backup_paths: tuple[str, ...], flow: str,
           others: Sequence[OtherFlow]) -> pd.DataFrame:
    """subflow_series.csv: the measured flow's subflows, then each other flow's, on the
    measured flow's time axis."""
    parts = [subflow_series(fa.timeseries.to_pandas(), fa.subflows, df, fa.t0_epoch, upload, backup_paths, flow=flow)]
    for o in others:
        if o.fa.t0_epoch is None or fa.t0_epoch is None:
            continue  # no SYN seen: no axis to put its bins on
        parts.append(subflow_series(o.fa.timeseries.to_pandas(), o.fa.subflows, df, fa.t0_epoch, o.upload, flow=o.name,
                                    shift_s=o.fa.t0_epoch - fa.t0_epoch))
    parts = [p for p in parts if not p.empty]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=COLUMNS)


def implausible_windows(df: pd.DataFrame,
                        flows: Sequence[tuple[str, Sequence[SubflowResult], bool]]) -> dict[str, Any]:
    """{subflow: {flow, path, samples, max_cwnd}} for each data sender with per-ACK samples
    whose cwnd no TCP window can be (analysis/cwnd_events.implausible); only those with some."""
    out: dict[str, Any] = {}
    for name, subflows, upload in flows:
        for sf in subflows:
            s = sender_samples(df, sf, upload)
            from ..analysis.cwnd_events import implausible
            bad = s[implausible(s["snd_cwnd"])] if not s.empty else s
            if not bad.empty:
                out[sf.name] = {"flow": name, "path": sf.path, "samples": int(len(bad)),
                                "of": int(len(s)), "max_cwnd": int(bad["snd_cwnd"].max())}
    return out
