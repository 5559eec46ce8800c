"""What makes a result self-describing: kernel, tool versions, git state, lab hashes."""

from __future__ import annotations

import functools
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

from ..kernelreq import detect
from ..platform import cpu_emulation

TOOLS: dict[str, list[str]] = {
    "iperf3": ["iperf3", "--version"],
    "tshark": ["tshark", "--version"],
    "tcpdump": ["tcpdump", "--version"],
    "iproute2": ["ip", "-V"],
    "nft": ["nft", "--version"],
    "ethtool": ["ethtool", "--version"],
    "mptcpize": ["dpkg-query", "-W", "-f", "${Version}", "mptcpize"],
}


def _first_line(argv: list[str]) -> str | None:
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (p.stdout or p.stderr).strip()
    return text.splitlines()[0] if text and p.returncode == 0 else None


@functools.cache
def tool_versions() -> dict[str, str | None]:
    out = {name: _first_line(argv) for name, argv in TOOLS.items()}
    out["python"] = sys.version.split()[0]
    for mod in ("pandas", "pydantic", "matplotlib"):
        try:
            out[mod] = __import__(mod).__version__
        except ImportError:
            out[mod] = None
    from .. import __version__

    out["mptcplab"] = __version__
    return out


def git_state(repo: Path) -> dict[str, Any]:
    def git(*args: str) -> str | None:
        try:
            # root reading a checkout another user owns (the VM's /vagrant): trust it for
            # this read; never rewrite its index (--no-optional-locks)
            p = subprocess.run(["git", "-C", str(repo), "-c", f"safe.directory={repo}", "--no-optional-locks", *args],
                               capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            # no git, or a checkout too slow to read (over 9p in a QEMU guest): unknown, not fatal
            return None
        return p.stdout.strip() if p.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


def host_facts() -> dict[str, Any]:
    """Facts about this host; its "platform" says whether the CPU is emulated in software."""
    u = platform.uname()
    return {"kernel": u.release, "kernel_version": u.version, "kernel_patches": kernel_patches(u.release),
            "machine": u.machine, "hostname": u.node,
            "cpu_count": os.cpu_count(), "cpu_model": cpu_model(), "os_release": _os_release(),
            "platform": cpu_emulation()}


def cpu_model() -> str | None:
    """/proc/cpuinfo's first "model name" (what a campaign's host pool declares; None where
    the architecture does not say, e.g. some ARM kernels)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    return value.strip() or None
    except OSError:
        return None
    return None


def kernel_patches(release: str) -> list[dict[str, Any]]:
    """Which of the project's patches this kernel carries (kernelreq.detect), from its release
    and its log: read again at the end of a run, when the run's own subflows have logged."""
    try:
        p = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=10, errors="replace")
        log = p.stdout if p.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired):
        log = None
    return detect(release, log)


def _os_release() -> str | None:
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip('"')
    except OSError:
        pass
    return None
