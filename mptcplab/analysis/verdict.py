"""The transfer half of the verdict: a repetition whose traffic failed verifies nothing.

The capture can show a perfect MPTCP handshake and subflows on every path while iperf3 lost
its control connection and counted 0 bytes; "verified" must never be printed on that.
"""

from __future__ import annotations

from .model import Finding


def exit_text(rc: int) -> str:
    """A process's non-zero exit status in words (a negative one: killed by that signal)."""
    return f"killed by signal {-rc}" if rc < 0 else f"exit status {rc}"


def transfer_failure(error: str | None, goodput_mbps: float, rc: int | None,
                     server_rc: int | None = None) -> Finding | None:
    """A ``transfer-failed`` finding when the measured client reported an error, counted no
    goodput, or exited non-zero, or its server exited non-zero by itself (a negative status:
    killed by that signal); None when the transfer succeeded."""
    why: list[str] = []
    if error:
        why.append(f"iperf3 error: {error}")
    if not goodput_mbps or goodput_mbps <= 0:
        why.append("goodput 0")
    if rc not in (0, None):
        why.append(f"iperf3 exit status {rc}")
    if server_rc is not None and server_rc != 0:
        why.append(f"server {exit_text(server_rc)}")
    if not why:
        return None
    return Finding("transfer-failed", "transfer failed (" + "; ".join(why) + "): not verified",
                   evidence={"iperf3_error": error, "goodput_mbps": goodput_mbps, "rc": rc,
                             "server_rc": server_rc})
