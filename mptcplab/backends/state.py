"""Moved to mptcplab/runstate.py (the host probes record ownership too); kept importable."""

from ..runstate import STATE_DIR, RunState, alive, owner_live, recorded_namespaces, run_states, write_state

__all__ = ["STATE_DIR", "RunState", "alive", "owner_live", "recorded_namespaces", "run_states", "write_state"]
