"""Probes: what watches a repetition, behind one interface (base.Probe), run by the
steps in step.py: the packet capture (tcpdump.py), mandatory in every repetition, and
those experiment.yml's ``probes:`` chooses (registry.py: kernel tracepoints, MIB
counters, path-manager events, socket memory), joined with the capture into one
per-subflow time series (join.py). ss.py samples MPTCP subflows from ``ss -tinM`` for
the controllers."""

from .base import PROBES_DIR, Probe, probes_dir

__all__ = ["PROBES_DIR", "Probe", "probes_dir"]
