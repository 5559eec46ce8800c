"""The repetition's step that registers the engine congestion controls its flows ask
for (``cc: mptcp_lia``), first of all steps, and the teardown that lets go of them, last
(after the nodes are gone: their sockets no longer use it). Holding and registering is
holds.py's job; this module only ties it to a repetition."""

from __future__ import annotations

import hashlib

from .. import runstate
from ..steps.base import Planned, Rep, Step
from ..warncodes import CLEANUP_FAILED
from . import holds
from .bpfcc import BpfCc, wanted


def _wanted(rep: Rep) -> list[BpfCc]:
    return wanted(rep.body.traffic.flows.values())


def _sha256(cc: BpfCc) -> str | None:
    try:
        return hashlib.sha256(cc.object_path.read_bytes()).hexdigest()
    except OSError:
        return None


class RegisterCongestionControls(Step):
    title = "engine congestion controls (BPF struct_ops, host-wide, held while this run uses them)"

    def commands(self, rep: Rep) -> list[Planned]:
        return [Planned(cc.register_cmd(), note=f"unless the kernel lists {cc.name} already (another run holds "
                                                f"it); hold: {runstate.STATE_DIR}/cc-{cc.name}-<hex>.json")
                for cc in _wanted(rep)]

    def run(self, rep: Rep) -> None:
        record = {}
        for cc in _wanted(rep):
            hold = holds.acquire(cc, str(rep.out), execute=lambda c: rep.backend.run([c]))
            rep.cc_holds.append(hold)
            record[cc.name] = {"kind": "bpf struct_ops", "object": cc.object_name,
                               "object_sha256": _sha256(cc), "registered_by_this_repetition": hold.registered_here}
        if record:
            rep.extra["congestion_controls"] = record


def release_commands(rep: Rep) -> list[Planned]:
    """What teardown prints for them (sequence.Teardown)."""
    return [Planned(cc.unregister_cmd(), note="unless another live run holds it") for cc in _wanted(rep)]


def release_all(rep: Rep) -> None:
    """Every exit path (sequence.Teardown, after the nodes are gone); never raises."""
    while rep.cc_holds:
        hold = rep.cc_holds.pop()
        try:
            # the framework types it by what it reads (steps/base.RepHold); only this package's
            # RegisterCongestionControls adds to it, and release() wants the whole Hold back
            assert isinstance(hold, holds.Hold)
            holds.release(hold, execute=lambda c: rep.backend.run([c]))
        except Exception as e:  # noqa: BLE001 - teardown goes on; `mptcplab clean` retries
            rep.warn(CLEANUP_FAILED, f"congestion control {hold.cc.name}: unregistering failed: {e}")
