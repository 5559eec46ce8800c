"""Whether this machine's CPU is emulated in software, and what that makes a run.

On a software-emulated CPU (QEMU's TCG, i.e. a QEMU virtual machine without KVM, as the
Vagrant appliance is with the libvirt "qemu" driver on a host without /dev/kvm) every
instruction is translated, so throughput, RTTs and anything timed measure the emulator, not
the kernel. Such a run still shows whether the lab works (addresses, routes, MPTCP
negotiation, subflows), so it is kept, but labelled a functional check, never a measurement.

The evidence is `systemd-detect-virt --vm`: it reads the CPUID hypervisor signature, which
KVM sets to "KVMKVMKVM" and TCG to "TCGTCGTCGTCG", and answers "kvm" or "qemu" accordingly
(DMI, which says "QEMU" either way, only where CPUID gives no answer). Without the tool nothing
else here tells the two apart (DMI's sys_vendor is "QEMU" and /proc/cpuinfo has the
"hypervisor" flag under both), so the answer is then unknown, never a guess.
"""

from __future__ import annotations

import os
import subprocess
from typing import Any

from .errors import LabInputError

#: software | hardware: overrides detection (e.g. a VM whose CPUID the tool does not know)
ENV = "MPTCPLAB_CPU_EMULATION"
DETECT = "systemd-detect-virt"

FUNCTIONAL_CHECK = "functional-check"
MEASUREMENT = "measurement"
_NOT_MEASURED = ("throughput, RTT and timing numbers are not measurements of the kernel; "
                 "the run checks plumbing, MPTCP negotiation and subflows")


def _result(virtualization: str | None, emulated: bool | None, source: str) -> dict[str, Any]:
    return {"virtualization": virtualization, "software_emulated_cpu": emulated, "source": source}


def cpu_emulation() -> dict[str, Any]:
    """{"virtualization", "software_emulated_cpu" (True, False or None = unknown), "source"}."""
    declared = os.environ.get(ENV, "").strip().lower()
    if declared:
        if declared not in ("software", "hardware"):
            raise LabInputError("environment", ENV, f"must be 'software' or 'hardware', not {declared!r}")
        return _result(None, declared == "software", ENV)
    try:
        p = subprocess.run([DETECT, "--vm"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return _result(None, None, "unknown")
    answer = p.stdout.strip()
    if answer == "none":  # bare metal: printed with exit status 1
        return _result("none", False, DETECT)
    if p.returncode != 0 or not answer:
        return _result(None, None, "unknown")
    return _result(answer, answer == "qemu", DETECT)


def run_kind(cpu: dict[str, Any] | None) -> tuple[str, str]:
    """("functional-check" | "measurement", why) for a run on the CPU cpu_emulation() described."""
    cpu = cpu or {}
    source, virt = cpu.get("source"), cpu.get("virtualization")
    if source == ENV:
        evidence = f"declared by {ENV}={'software' if cpu.get('software_emulated_cpu') else 'hardware'}"
    else:
        evidence = f"{DETECT}: {virt}"
    if cpu.get("software_emulated_cpu") is True:
        what = "QEMU without KVM, " if virt == "qemu" else ""
        return FUNCTIONAL_CHECK, f"software-emulated CPU ({what}{evidence}): {_NOT_MEASURED}"
    if cpu.get("software_emulated_cpu") is False:
        return MEASUREMENT, f"CPU not software-emulated ({evidence})"
    return MEASUREMENT, (f"CPU emulation unknown ({DETECT} gave no answer); under QEMU without KVM, set "
                         f"{ENV}=software so the run is marked a functional check")
