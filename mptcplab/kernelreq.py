"""What a finding may require of the kernel it runs on (published.yml ``requires``), and
whether a kernel has it: a release range (``kernel: ">=6.1,<6.7"``), one of the project's
kernel patches (``kernel_patch: mptcp-pmtu-probing``, images/kernel/patches/), or kernel
symbols it must have or lack (``kallsyms: [mptcp_pm_get_endp_laminar_max]``,
``kallsyms_absent: ["T mptcp_subflow_send_ack"]``): mptcp_join.sh's own guards
(``continue_if mptcp_lib_kallsyms_has``), which follow a feature into the stable kernels it
was backported to where a release range would not.

Which symbols a kernel has is read from /proc/kallsyms (kallsyms(), recorded by every run
in manifest.json ``kernel_symbols``, for the names the lab's findings require).

Whether the running kernel carries a patch is read from what the kernel exposes (detect(),
recorded by every run in manifest.json ``kernel_patches``): its release, since the project's
build names itself (CONFIG_LOCALVERSION="-mptcplab", images/kernel/mptcplab.config), and its
log, where patch 0002 prints each MPTCP subflow's probing range. Imports nothing of the
package: the lab schema validates names and ranges with it, the findings check judges with it.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Collection, Mapping
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


_SYMBOL = re.compile(r"^(?:(?P<type>[A-Za-z]) )?(?P<name>[A-Za-z_][A-Za-z0-9_.$]*)$")
KALLSYMS = "/proc/kallsyms"


def parse_symbol(spec: str) -> tuple[str | None, str]:
    """"T mptcp_subflow_send_ack" -> ("T", name); "name" -> (None, name): a symbol with an
    optional type letter (nm's: T text, t local text, D data ...), as mptcp_lib.sh's
    ``mptcp_lib_kallsyms_has "T name$"`` greps. ValueError names the bad spec."""
    m = _SYMBOL.match(spec.strip())
    if not m:
        raise ValueError(f"{spec!r}: a kernel symbol name, optionally after its type letter ('T name')")
    return m["type"], m["name"]


def kallsyms(names: Collection[str], path: str = KALLSYMS) -> dict[str, str | None] | None:
    """Per symbol name: its type letters in the running kernel ("T"; "tT" when a local and a
    global symbol share the name), None when it has no such symbol; None for the whole when
    /proc/kallsyms cannot be read. Module symbols count (mptcp is built in, but a lab may
    name a module's)."""
    want = set(names)
    if not want:
        return {}
    found: dict[str, str | None] = dict.fromkeys(want)
    try:
        with open(path, errors="replace") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and parts[2] in want:
                    have = found[parts[2]] or ""
                    if parts[1] not in have:
                        found[parts[2]] = "".join(sorted(have + parts[1]))
    except OSError:
        return None
    return found


def has_symbol(spec: str, table: Mapping[str, str | None]) -> bool | None:
    """Whether the kernel of ``table`` (kallsyms()) has the symbol (of the type, when the spec
    names one; its case too, since nm's lower case is a local symbol); None when the table
    does not say (the name was not read)."""
    typ, name = parse_symbol(spec)
    if name not in table:
        return None
    have = table[name]
    return have is not None and (typ is None or typ in have)


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
