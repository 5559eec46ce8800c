"""Every metric a lab may name, declared: its name, how its per-repetition values combine
over repetitions, what it measures in words, its unit, whether it scales with the link
rates, and which selectors (path, flow, window) it takes.

This is what validation needs (lab/metriccheck.py: a published.yml's names and selections)
and what scaling needs (``metric_scales``, ``paper_target``); it imports nothing of the
package. The generic metrics are declared here; a traffic kind declares those of its own
numbers in its result module (mptcplab/traffic/<kind>_result.py), which the record model
loads (traffic/results.py), so every reader of ``DECLARED`` that has the record model has
them all (metrics/base.py loads it for the registry's check). How a metric is computed from a
repetition is mptcplab/metrics/ (one module per family, sections below in the same order):
each computation registers against a declared name; the registry refuses a name not declared
and a second computation, and once its families are imported a declaration without one
(metrics/base.py). A new metric: ``declare`` it here (or in its kind's result module),
``register`` its computation there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

#: "min" and "std" (the sample standard deviation, needs two repetitions) exist for papers
#: that print a range and a standard deviation next to their mean (Kato et al. 2020)
Statistic = Literal["mean", "median", "max", "min", "std"]
#: what a finding can select besides the scenario
SELECTORS = frozenset({"path", "flow", "window"})


@dataclass(frozen=True)
class Select:
    """What of a repetition a metric measures: a path (None: the whole connection), a named
    flow of experiment.yml (None: the measured flow), a window [start, end) in seconds from
    the measured flow's start (None: the whole transfer)."""

    path: str | None = None
    flow: str | None = None
    window: tuple[float, float] | None = None

    def describe(self) -> str:
        parts = []
        if self.flow:
            parts.append(f"flow {self.flow}")
        if self.path:
            parts.append(f"path {self.path}")
        if self.window:
            parts.append(f"{self.window[0]:g}-{self.window[1]:g} s")
        return ", ".join(parts)


@dataclass(frozen=True)
class MetricDecl:
    """A metric as published.yml and the report know it (docs/results-format.md, "Aggregates"):
    everything but how its per-repetition value is computed."""

    name: str
    #: how the per-repetition values combine over repetitions
    over_reps: Statistic
    #: what the per-repetition value is, in words (docs and evidence text)
    per_rep_text: str
    unit: str = ""
    #: a rate: measured at F x the lab's rates it is F x the paper's (lab/scale.py)
    scales: bool = False
    #: which selectors (SELECTORS) a finding may give with this metric
    accepts: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if not self.accepts <= SELECTORS:
            raise ValueError(f"metric {self.name}: unknown selectors {sorted(self.accepts - SELECTORS)}")

    @property
    def statistic_text(self) -> str:
        return f"{self.over_reps} over reps"


DECLARED: dict[str, MetricDecl] = {}


def declare(name: str, over_reps: Statistic, per_rep_text: str, *, unit: str = "", scales: bool = False,
            accepts: frozenset[str] = frozenset()) -> MetricDecl:
    """Add a metric's declaration (this module at import; a test's own metric)."""
    if name in DECLARED:
        raise ValueError(f"metric {name} is declared twice")
    d = DECLARED[name] = MetricDecl(name, over_reps, per_rep_text, unit, scales, accepts)
    return d


def refusal(name: str, select: Select) -> str | None:
    """Why ``select`` cannot be used with metric ``name`` (None: it can): the loader's check."""
    d = DECLARED.get(name)
    if d is None:
        return f"unknown metric {name!r}; known: {', '.join(sorted(DECLARED))}"
    given = {k for k in SELECTORS if getattr(select, k) is not None}
    extra = given - d.accepts
    if extra:
        takes = ", ".join(sorted(d.accepts)) or "no selector"
        return f"metric {name} does not take {', '.join(sorted(extra))} (it takes {takes})"
    return None


def metric_scales(name: str) -> bool:
    """Whether a metric is a rate: measured at F x the lab's rates (lab/scale.py), it is
    F x the paper's."""
    d = DECLARED.get(name)
    return d is not None and d.scales


def paper_target(value: float, name: str, factor: float) -> float:
    """What this run's metric ``name``, measured at ``factor`` x the lab's rates, is
    compared with for a paper number ``value``."""
    return value * factor if metric_scales(name) and factor != 1 else value


PATH = frozenset({"path"})
FLOW = frozenset({"flow"})
WINDOW = frozenset({"window"})
PATH_WINDOW = frozenset({"path", "window"})
PATH_FLOW = frozenset({"path", "flow"})
PATH_FLOW_WINDOW = frozenset({"path", "flow", "window"})
#: Linux's initial window (TCP_INIT_CWND, RFC 6928), which no lab here changes
INITIAL_CWND = 10
#: the MPTCP MIB counters (MPTcpExt prefix left out) a middlebox scenario's reaction shows in,
#: per end node of the middlebox lab (its two hosts are named client and server)
COUNTERS = ("MPCapableSYNRX", "MPCapableSYNTX", "MPCapableSYNACKRX", "MPCapableACKRX",
            "MPCapableFallbackSYNACK", "MPCapableFallbackACK", "MPTCPRetrans",
            "MPJoinSynRx", "MPJoinSynAckRx", "MPJoinAckRx", "MPJoinAckHMacFailure",
            "DSSNotMatching", "DSSNoMatchTCP", "DSSCorruptionFallback", "DSSCorruptionReset",
            "DataCsumErr", "InfiniteMapTx", "InfiniteMapRx", "MPFailTx", "MPFailRx",
            "MPRstTx", "MPRstRx", "RcvPruned", "AddAddr", "AddAddrTx", "EchoAdd", "MPFallbackTokenInit",
            "MPCapableSYNTXDrop", "MPCapableSYNTXDisabled", "MPCapableEndpAttempt", "DssFallback")
SIDES = ("client", "server")
#: the MIB counter families a finding's counter check may name by their full name
#: (mptcplab/checks/counter.py; the nstat probe keeps them, probes/nstat.py); the preflight checks
#: a name against this kernel's list (/proc/net/netstat)
COUNTER_FAMILIES = ("MPTcpExt", "TcpExt")
COUNTER_NAME = re.compile(r"^(?:MPTcpExt|TcpExt)[A-Za-z0-9]+$")

# The generic declarations: a section per module of mptcplab/metrics/, the one that computes
# them. A traffic kind declares the metrics of its own numbers in its result module
# (mptcplab/traffic/<kind>_result.py), loaded with the record model (traffic/results.py).

# core.py: every lab's: goodput, path shares, segment sizes, ICMP, fairness
declare("goodput_mbps", "mean", "iperf3's receiver-side goodput", unit="Mbit/s", scales=True)
declare("subflow_share", "mean", "sum of the path's subflow byte shares", accepts=PATH)
declare("icmp_frag_needed", "mean", "ICMP frag-needed messages quoting the path's subflows", accepts=PATH)
declare("median_seg", "median",
        "the largest median data-segment payload among the path's subflows", unit="bytes", accepts=PATH)
declare("max_seg", "max", "the largest data-segment payload on the path", unit="bytes", accepts=PATH)
declare("jain_index", "mean", "Jain's fairness index across the repetition's measured flows")

# flows.py: one named flow's goodput and share of the measured flows
declare("flow_goodput_mbps", "mean",
        "the named flow's receiver-side goodput (any kind that reports one)", unit="Mbit/s", scales=True, accepts=FLOW)
declare("flow_share", "mean",
        "the named flow's fraction of the measured flows' summed goodput (two or more measured flows)", accepts=FLOW)
declare("flows_goodput_sum_mbps", "mean",
        "the measured flows' receiver-side goodputs added up (two or more measured flows: what flows sharing a "
        "bottleneck carry together, to set against its rate)", unit="Mbit/s", scales=True)
declare("aggregation_benefit", "mean",
        "Kaspar et al.'s Ben of the flow's goodput g over its non-backup paths' configured rates C (mptcpanalyzer's "
        "aggr_benefit): (g - Cmax) / (sum C - Cmax) when g >= Cmax, else (g - Cmax) / Cmax; 1 the paths' sum, 0 the "
        "best path alone, < 0 below it; none with one path", accepts=FLOW)

# series.py: throughput and packets/s over a time window (timeseries.csv)
declare("throughput_mbps", "mean",
        "the connection's mean throughput over the window (all subflows' captured payload per 100 ms bin, "
        "timeseries.csv)", unit="Mbit/s", scales=True, accepts=WINDOW)
declare("path_throughput_mbps", "mean",
        "the mean throughput of the path's subflows over the window (timeseries.csv)",
        unit="Mbit/s", scales=True, accepts=PATH_WINDOW)
declare("path_pps", "mean",
        "the path's data packets per second over the window (the paper's Wireshark graph; timeseries.csv packets)",
        unit="packets/s", scales=True, accepts=PATH_WINDOW)
declare("path_pps_cv", "mean",
        "the coefficient of variation (std / mean) of the path's packets per 100 ms bin over the window: how steady "
        "the flow is", accepts=PATH_WINDOW)
declare("path_idle_share", "median",
        "the share of the path's 100 ms bins in which it stopped (at most one data packet, metrics/series.py "
        "IDLE_PACKETS) between its first and last sending bin, within the window (timeseries.csv packets): on/off "
        "sending, 0 when the path never stops for a whole bin; none when it never sent", accepts=PATH_WINDOW)

# cwnd.py: the congestion window over time (tcp_probe's probes/subflow_series.csv)
declare("cwnd_median", "median",
        "the median congestion window (segments) of the flow's subflow senders on the path, one sample per 100 ms bin"
        " (tcp_probe, probes/subflow_series.csv; samples above 2^21 left out)",
        unit="segments", accepts=PATH_FLOW_WINDOW)
declare("cwnd_p95", "median",
        "the 95th percentile of the congestion window (segments), as cwnd_median",
        unit="segments", accepts=PATH_FLOW_WINDOW)
declare("cwnd_max", "median",
        "the largest congestion window (segments) of the flow's subflow senders on the path, over the same per-bin "
        "samples as cwnd_median (the cwnd at each 100 ms bin's last ACK: a peak inside a bin that falls before the "
        "bin's end is not seen)", unit="segments", accepts=PATH_FLOW_WINDOW)
declare("cwnd_initial_share", "mean",
        f"the fraction of 100 ms bins whose congestion window is at or below the initial window ({INITIAL_CWND} "
        "segments), as cwnd_median", accepts=PATH_FLOW_WINDOW)
declare("cwnd_implausible", "max",
        "per-ACK tcp_probe samples of the flow's senders on the path with a cwnd above 2^21 segments (no TCP window "
        "is that large; probes.tcp_probe.cwnd_implausible); the most of any repetition", accepts=PATH_FLOW)

# delivery.py: receiver reordering, head-of-line delay, one-way delay (capture)
declare("ooo_share", "mean",
        "the share of data bytes that reached the receiver with a hole before them in data sequence space (capture at"
        " the receiver, analysis/delivery.py)", accepts=PATH)
declare("hol_p50_ms", "median",
        "the median head-of-line delay of the data segments at the receiver: arrival until all data before it had "
        "arrived (0 when in order)", unit="ms", accepts=PATH)
declare("hol_p95_ms", "median",
        "the 95th percentile of the head-of-line delay at the receiver", unit="ms", accepts=PATH)
declare("hol_p99_ms", "median",
        "the 99th percentile of the head-of-line delay at the receiver", unit="ms", accepts=PATH)
declare("hol_max_ms", "max", "the largest head-of-line delay at the receiver", unit="ms", accepts=PATH)
declare("owd_median_ms", "median",
        "the median one-way delay of the path's data segments between the sender's and the receiver's capture points "
        "(one clock); the largest over the subflows", unit="ms", accepts=PATH)
declare("owd_p95_ms", "median",
        "the 95th percentile of the path's one-way delay between the capture points", unit="ms", accepts=PATH)

# buffers.py: the buffer labs': wire minus application bytes, re-sends per path, DSS checksum, OFO queue
declare("wire_minus_app_bytes", "median",
        "payload bytes on all subflows (capture) minus goodput x duration (iperf3 receiver)", unit="bytes")
declare("tcp_retrans_bytes", "median",
        "TCP-level retransmitted payload bytes of the path's subflows (capture)", unit="bytes", accepts=PATH)
declare("mptcp_retrans_bytes", "median",
        "MPTCP-level re-sent bytes on the path's subflows: data mapped again (capture, depth.py)",
        unit="bytes", accepts=PATH)
declare("dss_checksum", "mean", "1 when the capture shows DSS mappings carrying a checksum, else 0")
declare("ofo_tail_share", "median",
        "MPTcpExtOFOQueueTail / MPTcpExtOFOQueue over the traffic (nstat probe, the receiver)")

# cc_depth.py: the send-buffer lab's: goodput spread, Eq (1), retransmissions, cwnd reductions
declare("goodput_min_mbps", "min",
        "the measured flow's receiver-side goodput (lowest repetition)", unit="Mbit/s", scales=True)
declare("goodput_max_mbps", "max",
        "the measured flow's receiver-side goodput (highest repetition)", unit="Mbit/s", scales=True)
declare("goodput_sd_mbps", "std",
        "the measured flow's receiver-side goodput (sample standard deviation over repetitions)",
        unit="Mbit/s", scales=True)
declare("eq1_required_bytes", "mean",
        "Eq (1) of Kato et al.: the sum of the used paths' configured rates x the largest capture-measured base RTT "
        "(rtt_min_ms) x 2", unit="bytes")
declare("mptcp_retransmissions", "mean",
        "MPTCP-level re-sends on the path's subflows: data mapped before, mapped again (capture, analysis/depth.py)",
        accepts=PATH)
declare("nstat_mptcp_retrans", "mean",
        "the kernel's MPTcpExtMPTCPRetrans delta over the repetition, summed over the flow's end nodes (nstat probe)")
declare("tcp_retransmissions", "mean",
        "TCP-level retransmitted segments of the path's subflows (capture)", accepts=PATH)
declare("cwnd_reductions", "mean",
        "cwnd reductions of the path's subflow senders (tcp_probe; analysis/cwnd_events.py)", accepts=PATH)
declare("cwnd_reductions_no_loss", "mean",
        "cwnd reductions of the path's subflow senders with no TCP retransmission from 2 srtt before to their end "
        "(tcp_probe; analysis/cwnd_events.py)", accepts=PATH)

# memory.py: the ss_interval probe's socket memory
declare("skmem_rcv_max_bytes", "max",
        "at the flow's receiver (the server of an upload), the largest sum over one connection's subflows and MPTCP "
        "socket of rmem_alloc (received, not yet read) in one ss sample", unit="bytes", accepts=FLOW)
declare("skmem_snd_max_bytes", "max",
        "at the flow's sender (the client of an upload), the largest sum over one connection's subflows and MPTCP "
        "socket of wmem_queued (written, not yet acknowledged) in one ss sample", unit="bytes", accepts=FLOW)

# handshake.py: SYN -> SYN/ACK at the server (labs/setup)
declare("syn_synack_us_p50", "median",
        "the median of the flow's per-connection SYN -> SYN/ACK time at the server's capture", unit="us", accepts=FLOW)
declare("syn_synack_us_p91", "median",
        "the 91st percentile of the flow's per-connection SYN -> SYN/ACK time at the server's capture",
        unit="us", accepts=FLOW)
declare("syn_synack_us_p99", "median",
        "the 99th percentile of the flow's per-connection SYN -> SYN/ACK time at the server's capture",
        unit="us", accepts=FLOW)
declare("syn_synack_within_6us", "mean",
        "the fraction of the flow's connections whose SYN was answered within 6 us at the server's capture",
        accepts=FLOW)

# connections.py: connection shares (the kinds that open many), MP_JOINs; and the iperf3 kind's client CPU
# (computed in traffic/iperf3_metrics.py: it reads FlowResult's own numbers, so it has no result module)
declare("mptcp_connection_share", "min",
        "connections proven MPTCP from the capture / connections that completed their handshake", accepts=FLOW)
declare("joined_connection_share", "median",
        "completed connections that got an MP_JOIN subflow (capture)", accepts=FLOW)
declare("striped_connection_share", "median",
        "completed connections whose initial subflow carried data on 2+ capture points (capture)", accepts=FLOW)
declare("client_cpu_per_gbit", "median",
        "the client's iperf3 process CPU (% of a core) per Gbit/s of goodput (a download's receiver): relative only",
        unit="%/Gbit/s", accepts=FLOW)
declare("mp_joins", "median",
        "MP_JOIN handshakes completed by the SYN sender (nstat MPTcpExtMPJoinSynAckRx: the extra subflows)")

# middlebox.py: the middlebox lab: SYN fallback, rule counters, MIB counters per end
declare("syn_fallback_s", "median",
        "first SYN (MP_CAPABLE) -> first SYN without MPTCP option on the initial subflow (capture)", unit="s")
declare("middlebox_packets", "min",
        "packets the routers' middlebox rules counted (nft counters after the traffic)", unit="packets")
declare("mbox_split", "min",
        "data segments the rewriting middleboxes split in two (mptcplab-mbox's counters after the traffic)",
        unit="segments")
declare("mbox_merged", "min",
        "pairs of data segments the rewriting middleboxes merged into one (mptcplab-mbox's counters)",
        unit="segments")

for _side in SIDES:
    for _counter in COUNTERS:
        declare(f"mib_{_side}_{_counter}", "min",
                f"MPTcpExt{_counter} delta over the traffic on node {_side} (nstat probe); "
                "min over reps: > 0 holds in every repetition", unit="events")


def extreme_reading(statistic: str, op: str) -> str:
    """What a claim on an extreme over repetitions says in words: ``max <= v`` is about every
    repetition, ``max >= v`` about some; the reverse for ``min``."""
    if statistic == "std":
        return "standard deviation over repetitions, percentile-bootstrap interval (checks/stats.py)"
    upper = op in ("<", "<=")
    lower = op in (">", ">=")
    if (statistic == "max" and upper) or (statistic == "min" and lower):
        return f"{statistic} over repetitions: every repetition"
    if (statistic == "max" and lower) or (statistic == "min" and upper):
        return f"{statistic} over repetitions: some repetition"
    return f"{statistic} over repetitions, no interval"
