"""Traffic kinds: one set of modules per ``kind:`` of experiment.yml, listed once in
registry.py (the lab schema's ``Flow`` union is built from it); kinds.py maps each name to
its ``TrafficKind`` (base.py), the object that turns a flow into commands and reads its output.

Kinds: iperf3 (bulk TCP/MPTCP, duration or byte count), udp (iperf3 -u at a rate),
http (busybox httpd + wrk), churn (many short connections, traffic/churn_tool.py),
latency (the project's block-latency tool, native/latency), hold (N connections held open
while the other flows run: a background flow, traffic/hold.py), transfer (a verified transfer:
SHA-256 of what arrived against what was sent, traffic/transfer_tool.py).
Adding one: docs/architecture.md, "How to add a traffic kind".

This package's face imports nothing: the lab schema imports the kinds' schema modules and the
record model their result modules, so loading them must not load the runners.
"""
