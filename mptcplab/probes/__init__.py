"""Probes: what a run observes besides the capture (ss.py: MPTCP subflows from ss -tinM)."""
