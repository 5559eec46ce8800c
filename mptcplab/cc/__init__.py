"""Congestion controls the engine itself provides (BPF struct_ops, registered host-wide
while a run uses them), as opposed to the kernel's own reno/cubic/bbr.

- bpfcc.py: what one such congestion control is (its object file, the commands that
  register and unregister it, whether it is registered, why it cannot be);
- holds.py: who uses it (a reference count of live runs under /run/mptcplab), so two
  concurrent runs never unregister it under each other, and ``mptcplab clean`` removes
  what a killed run left registered;
- step.py: the repetition's step that registers what the lab's flows ask for, and the
  teardown that lets go of it.

The congestion control itself is native/lia (docs/cc-lia.md).
"""

from __future__ import annotations

from .bpfcc import BPF_CCS, BpfCc, wanted

__all__ = ["BPF_CCS", "BpfCc", "wanted"]
