"""Capture analysis: pcap files of one iperf3 run -> per-subflow tables and a verdict.

``analyze_flow(captures, spec)`` is the entry point; see analyze.py. Modules: pcapread.py
(the packet table from the native reader; packets.py defines it, tshark.py builds the same
from tshark and oracle.py compares the two), flows.py (subflows, connections, the data
connection), stats.py (numbers, time series, ICMP), depth.py (MPTCP depth: DSN, re-sends,
RTT, events), diagnose.py (one-line reasons), standalone.py (``mptcplab analyze``), tcpseq.py
(TCP sequence numbers per subflow), clean.py (``analyze --clean``), follow.py (``analyze
--follow``), aggregation.py (the aggregation benefit over the paths' rates).
"""

from .analyze import analyze_flow, analyze_packets
from .model import CaptureFile, FlowAnalysis, FlowSpec, SubflowResult

__all__ = ["CaptureFile", "FlowAnalysis", "FlowSpec", "SubflowResult", "analyze_flow", "analyze_packets"]
