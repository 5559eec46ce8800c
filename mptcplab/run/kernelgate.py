"""Which of the selected scenarios this kernel can judge.

A scenario whose every finding needs something of the kernel that this one lacks
(published.yml ``requires``: a release range, a project patch, kernel symbols) and says
``otherwise: skip`` is not run,
as mptcp_join.sh's ``continue_if mptcp_lib_kallsyms_has ...`` skips a case on a kernel
without the feature: running it would only fail at set-up (an endpoint flag the kernel
refuses) or measure what nothing judges. The run says so before it starts, records the
scenarios left and why (manifest.json ``not_on_this_kernel``), and their findings read
"not measurable here: needs ..." (results/findings.unmet). A scenario no finding reads
always runs.
"""

from __future__ import annotations

import platform
from dataclasses import dataclass, field

from ..kernelreq import kallsyms
from ..lab.model import Lab, ScenarioRun
from ..lab.schema import Finding
from ..record.manifest import kernel_patches
from ..results.findings import KernelFacts, unmet


def required_symbols(lab: Lab) -> list[str]:
    """Every kernel symbol name the lab's findings require, sorted."""
    pub = lab.published
    if pub is None:
        return []
    return sorted({s for f in pub.all_findings() if f.requires is not None for s in f.requires.symbols()})


def kernel_symbols(lab: Lab) -> dict[str, str | None] | None:
    """The running kernel's answer for the lab's required symbols (manifest.json
    ``kernel_symbols``): {} when the lab names none, None when /proc/kallsyms is unreadable."""
    return kallsyms(required_symbols(lab))


def running_kernel(lab: Lab) -> KernelFacts:
    """This host's kernel as the lab's ``requires`` read it."""
    release = platform.uname().release
    pub = lab.published
    wants_patch = pub is not None and any(f.requires is not None and f.requires.kernel_patch
                                          for f in pub.all_findings())
    patches = [p["name"] for p in kernel_patches(release) if p["present"]] if wants_patch else []
    return KernelFacts(release, patches, kernel_symbols(lab))


def _readers(lab: Lab, name: str) -> list[Finding]:
    """The findings (and setup checks) one of whose checks reads scenario ``name``."""
    pub = lab.published
    if pub is None:
        return []
    return [f for f in pub.all_findings() if name in f.scenarios_referenced()]


@dataclass(frozen=True)
class KernelGate:
    """The selected scenarios split: those to run, and those left with why."""

    run: list[ScenarioRun]
    left: dict[str, str] = field(default_factory=dict)

    def lines(self) -> list[str]:
        """What the dry run and the run say before measuring."""
        return [f"not on this kernel, not run: {name}: {why}" for name, why in self.left.items()]


def gate(lab: Lab, scenarios: list[ScenarioRun], kernel: KernelFacts) -> KernelGate:
    """Split ``scenarios``: a scenario is left when findings read it and every one of them
    has a requirement this kernel does not meet and ``otherwise: skip`` (the first one's
    reason is its why)."""
    run: list[ScenarioRun] = []
    left: dict[str, str] = {}
    for sc in scenarios:
        readers = _readers(lab, sc.name)
        whys = [unmet(f.requires, kernel) if f.requires is not None and f.requires.otherwise == "skip" else None
                for f in readers]
        if readers and all(whys):
            left[sc.name] = str(whys[0])
        else:
            run.append(sc)
    return KernelGate(run, left)
