"""The tools a run drives and reads, by tool: argument builders, output readers and their
analysis. latency/: the project's own block-latency tool (native/latency); ss.py: iproute2's
``ss -tinM`` (MPTCP subflows, socket memory), read by the controllers, the timeline and the
memory probe."""
