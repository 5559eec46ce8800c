"""Choosing the link-emulation implementation (the only module that imports both)."""

from __future__ import annotations

from ..errors import HostNotReady
from .base import EMULATOR_NAMES, Emulator
from .nfqueue import NfqueueEmulator
from .tc import NetemEmulator


def select_emulator(force: str | None, netem_available: bool) -> Emulator:
    """The emulator to use: ``force`` ("netem"/"nfqueue") wins, else netem when the
    kernel has it (it needs no helper process), else the NFQUEUE delay line."""
    if force is not None and force not in EMULATOR_NAMES:
        raise ValueError(f"unknown link emulator {force!r}; use one of {', '.join(EMULATOR_NAMES)}")
    if force == "netem" and not netem_available:
        raise HostNotReady(
            "the netem emulator was forced but this kernel has no sch_netem "
            "(tc answers 'Specified qdisc kind is unknown'); use --emulation nfqueue"
        )
    if force == "netem" or (force is None and netem_available):
        return NetemEmulator()
    return NfqueueEmulator()


def emulator_named(name: str) -> Emulator:
    """The implementation called ``name``, without asking the kernel (dry runs)."""
    if name not in EMULATOR_NAMES:
        raise ValueError(f"unknown link emulator {name!r}; use one of {', '.join(EMULATOR_NAMES)}")
    return NetemEmulator() if name == "netem" else NfqueueEmulator()
