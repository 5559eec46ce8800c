"""A congestion control written in BPF (a ``tcp_congestion_ops`` struct_ops object built
by native/Makefile): the commands that register and unregister it with bpftool, whether
it is registered now, and why it cannot be on this host.

Registering it makes its name available to every socket of the host, in every network
namespace (the kernel has one list of congestion controls), so it is a host-wide
resource: holds.py counts who uses it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..commands import Cmd, cmd
from ..emulation.base import repo_root

AVAILABLE = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
KERNEL_BTF = Path("/sys/kernel/btf/vmlinux")


def _bpftool() -> str:
    # Debian installs it in /usr/sbin, which a non-login root shell may not have on PATH
    return shutil.which("bpftool") or "/usr/sbin/bpftool"


@dataclass(frozen=True)
class BpfCc:
    #: the tcp_congestion_ops name (what a flow's ``cc:`` and TCP_CONGESTION say)
    name: str
    #: the object under native/build/
    object_name: str
    #: the struct_ops map's name in the object (bpftool unregisters by it)
    map_name: str

    @property
    def object_path(self) -> Path:
        env = os.environ.get("MPTCPLAB_BPF_DIR")
        return (Path(env) if env else repo_root() / "native" / "build") / self.object_name

    def register_cmd(self) -> Cmd:
        return cmd(_bpftool(), "struct_ops", "register", str(self.object_path),
                   why=f"register congestion control {self.name} host-wide (BPF struct_ops)")

    def unregister_cmd(self) -> Cmd:
        # not checked: bpftool also tries the struct_ops maps of earlier registrations that
        # sockets still pin (TIME_WAIT, a namespace being torn down) and exits 255 after
        # unregistering ours; whether it is gone is read back instead (holds.py)
        return cmd(_bpftool(), "struct_ops", "unregister", "name", self.map_name, check=False,
                   why=f"unregister congestion control {self.name}")

    def registered(self) -> bool:
        """Whether the kernel lists it now (whoever registered it)."""
        try:
            return self.name in AVAILABLE.read_text().split()
        except OSError:
            return False

    def problem(self, euid: int | None = None) -> str | None:
        """Why it cannot be registered here, in one line; None when it can."""
        if self.registered():
            return None  # already there (another run holds it): nothing to load
        if (os.geteuid() if euid is None else euid) != 0:
            return f"registering {self.name} (BPF struct_ops) needs root"
        if not KERNEL_BTF.exists():
            return f"{self.name} needs BPF struct_ops with kernel BTF, and this kernel has no {KERNEL_BTF}"
        if not self.object_path.is_file():
            return (f"{self.name} is not built ({self.object_path} is missing): run `make -C "
                    f"{repo_root() / 'native'} bpf`, which needs clang, llvm, libbpf-dev and bpftool")
        if not Path(_bpftool()).exists():
            return f"bpftool not found, which registers {self.name} (apt-get install bpftool)"
        return None


#: the congestion controls the engine registers itself, by name
BPF_CCS: dict[str, BpfCc] = {
    "mptcp_lia": BpfCc("mptcp_lia", "mptcp_lia.bpf.o", "mptcp_lia"),
}


def wanted(flows: Iterable[object]) -> list[BpfCc]:
    """The engine's congestion controls these flows ask for (``cc:``), in a stable order."""
    names = {getattr(f, "cc", None) for f in flows}
    return [c for n, c in sorted(BPF_CCS.items()) if n in names]
