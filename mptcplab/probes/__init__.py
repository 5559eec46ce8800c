"""Probes: what watches a repetition besides the packet capture (kernel tracepoints,
MIB counters, path-manager events), behind one interface (base.Probe), chosen by
experiment.yml's ``probes:`` (registry.py), run by the steps in step.py, and joined
with the capture into one per-subflow time series (join.py). ss.py samples MPTCP
subflows from ``ss -tinM`` for the controllers."""

from .base import PROBES_DIR, Probe, probes_dir

__all__ = ["PROBES_DIR", "Probe", "probes_dir"]
