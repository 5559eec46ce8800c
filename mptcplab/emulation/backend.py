"""Former home of the emulator interface, factory and host probes, split to break the
import cycle with tc.py and nfqueue.py: interface in base.py, choice in select.py,
kernel probes in hostprobe.py. These names stay importable from here."""

from .base import EMULATOR_NAMES, Daemon, Emulator, delayline_binary, repo_root
from .hostprobe import netem_available, nft_queue_available
from .select import select_emulator

__all__ = ["EMULATOR_NAMES", "Daemon", "Emulator", "delayline_binary", "netem_available", "nft_queue_available",
           "repo_root", "select_emulator"]
