"""Capture analysis: pcap files of one iperf3 run -> per-subflow tables and a verdict.

``analyze_flow(captures, spec)`` is the entry point; see analyze.py. Modules: tshark.py
(field extraction), flows.py (subflows, connections, the data connection), stats.py
(numbers, time series, ICMP), diagnose.py (one-line reasons).
"""

from .analyze import analyze_flow, analyze_packets
from .model import CaptureFile, FlowAnalysis, FlowSpec, SubflowResult

__all__ = ["CaptureFile", "FlowAnalysis", "FlowSpec", "SubflowResult", "analyze_flow", "analyze_packets"]
