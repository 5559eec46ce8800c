"""What a finding may require of the kernel it runs on (published.yml ``requires``), and
whether a kernel has it: a release range (``kernel: ">=6.1,<6.7"``) or one of the project's
kernel patches (``kernel_patch: mptcp-pmtu-probing``, images/kernel/patches/).

Whether the running kernel carries a patch is read from what the kernel exposes (detect(),
recorded by every run in manifest.json ``kernel_patches``): its release, since the project's
build names itself (CONFIG_LOCALVERSION="-mptcplab", images/kernel/mptcplab.config), and its
log, where patch 0002 prints each MPTCP subflow's probing range. Imports nothing of the
package: the lab schema validates names and ranges with it, the findings check judges with it.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Patch:
    name: str
    #: what it changes, for people (the report's "needs ..." line)
    description: str
    #: the release of a kernel built with it ends so (the project's build only)
    release_suffix: str
    #: a kernel-log line only this patch prints
    log_marker: re.Pattern[str]


PATCHES: dict[str, Patch] = {p.name: p for p in (
    Patch("mptcp-pmtu-probing",
          "the thesis' tcp_mtup_init change, MTU probing on for every socket (images/kernel/patches)",
          "-mptcplab", re.compile(r"mptcplab: subflow \S+ -> \S+ mtup enabled=\d")),
)}

_OPS: dict[str, Callable[[Any, Any], bool]] = {
    ">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt, "==": operator.eq, "!=": operator.ne}
_TERM = re.compile(r"^\s*(>=|<=|==|!=|>|<)\s*(\d+(?:\.\d+){0,2})\s*$")
_RELEASE = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?")


def parse_range(spec: str) -> list[tuple[str, tuple[int, ...]]]:
    """A release range, comma-separated comparisons with a dotted version: ">=6.1,<6.7".
    ValueError names the bad part."""
    terms = []
    for part in spec.split(","):
        m = _TERM.match(part)
        if not m:
            raise ValueError(f"{part.strip()!r}: a comparison (>= <= > < == !=) with a version such as 6.1 "
                             "(comma-separated: '>=6.1,<6.7')")
        terms.append((m.group(1), tuple(int(x) for x in m.group(2).split("."))))
    return terms


def release_version(release: str) -> tuple[int, int, int] | None:
    """6.1.0-56-amd64 -> (6, 1, 0); 6.12.117+deb12-amd64 -> (6, 12, 117); None when the
    release does not start with a version."""
    m = _RELEASE.match(release)
    return (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)) if m else None


def in_range(release: str, spec: str) -> bool | None:
    """Whether the release is in the range; None when it has no version. A comparison
    reads as many components as it gives: "==6.1" holds for every 6.1.x."""
    v = release_version(release)
    if v is None:
        return None
    return all(_OPS[op](v[:len(want)], want) for op, want in parse_range(spec))


def detect(release: str, kernel_log: str | None) -> list[dict[str, Any]]:
    """Per known patch: {name, present, evidence} (manifest.json ``kernel_patches``). The
    log's line is proof; the release's suffix names the project's build; neither: absent
    (an unpatched kernel never prints the line)."""
    out = []
    for p in PATCHES.values():
        line = next((m.group(0) for m in p.log_marker.finditer(kernel_log or "")), None)
        if line:
            present, evidence = True, f"the kernel log has the patch's line: {line!r}"
        elif release.endswith(p.release_suffix):
            present, evidence = True, (f"release {release} ends in {p.release_suffix}: the project's patched build "
                                       "(images/kernel/mptcplab.config)")
        else:
            present = False
            evidence = (f"release {release} is not the project's build, which ends in {p.release_suffix}, and the "
                        + ("kernel log has no line of the patch" if kernel_log is not None
                           else "kernel log could not be read"))
        out.append({"name": p.name, "present": present, "evidence": evidence})
    return out
