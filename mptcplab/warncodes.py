"""Codes of the warnings the runner's steps and probes give (docs/results-format.md, Warning).

A leaf module: the steps, probes, runner and the report's policy import it, it imports
nothing. A warning is a dict as the result model reads it (record/model/base.py Warning); the
code is for programs (the policy, check-vm-results.py), the message for people.
"""

from __future__ import annotations

from typing import Any

#: an emulated link's check (RTT, rate) outside its tolerance (steps/links.py)
LINK_OUT_OF_TOLERANCE = "link-out-of-tolerance"
#: a sysctl the lab sets reads back otherwise (steps/sysctls.py)
SYSCTL_NOT_APPLIED = "sysctl-not-applied"
#: a server, background flow or monitor did not exit when told to and was killed
PROCESS_DID_NOT_EXIT = "process-did-not-exit"
#: a byte-count flow reached its duration limit before sending all its bytes
FLOW_STOPPED_AT_LIMIT = "flow-stopped-at-limit"
#: a flow waiting for a flow_start event never started
FLOW_NOT_RUN = "flow-not-run"
#: a capture dropped packets or did not end as the run stopped it
CAPTURE_INCOMPLETE = "capture-incomplete"
#: a probe's samples are fewer, slower or less exact than asked (tcp_probe, ss_interval)
PROBE_DEGRADED = "probe-degraded"
#: a timeline event failed, or did not run before the traffic ended
EVENT_FAILED = "event-failed"
EVENT_NOT_RUN = "event-not-run"
#: ``traffic.timeline_zero: connection`` and the measured flow's connection was not seen
#: ESTABLISHED (timeout, or its client exited first): the timeline ran from the client's spawn
TIMELINE_ZERO_FALLBACK = "timeline-zero-fallback"
#: teardown of a step, a probe or a congestion-control hold failed (`mptcplab clean` retries)
CLEANUP_FAILED = "cleanup-failed"


def coded(code: str, message: str, path: str | None = None) -> dict[str, Any]:
    """A warning as the result model holds it (record/model/base.py Warning)."""
    return {"code": code, "message": message, "path": path}
