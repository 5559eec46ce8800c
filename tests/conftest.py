"""Shared fixtures. Tests that build namespaces use the `netns` marker and clean up."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
LABS = REPO / "labs"


def _mptcp_enabled() -> bool:
    try:
        return Path("/proc/sys/net/mptcp/enabled").read_text().strip() == "1"
    except OSError:
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    can_netns = os.geteuid() == 0 and _mptcp_enabled() and shutil.which("ip") is not None
    skip = pytest.mark.skip(reason="needs root and an MPTCP kernel")
    for item in items:
        if "netns" in item.keywords and not can_netns:
            item.add_marker(skip)


@pytest.fixture
def copy_lab(tmp_path: Path):
    """A writable copy of a lab directory, to break on purpose."""

    def make(name: str = "mtu") -> Path:
        dst = tmp_path / name
        shutil.copytree(LABS / name, dst)
        return dst

    return make


def netns_list() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


@pytest.fixture(scope="module")
def delayline() -> Path:
    """The native delay line, built (make -C native) once per module that asks for it."""
    p = subprocess.run(["make", "-C", str(REPO / "native")], capture_output=True, text=True, timeout=300,
                       check=False)
    if p.returncode != 0:
        pytest.skip(f"cannot build the delay line: {p.stderr[-300:]}")
    return REPO / "native" / "build" / "mptcplab-delayline"
