"""Options that more than one command takes and means the same by."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import LabInputError

if TYPE_CHECKING:
    from ..emulation.base import Emulator


def rate_in_tbf(em: Emulator, asked: bool) -> Emulator:
    """``--rate-in-tbf`` (run, calibrate): the nfqueue emulator's rate and queue go back to tbf."""
    if asked:
        from ..emulation.nfqueue import NfqueueEmulator

        if not isinstance(em, NfqueueEmulator):
            raise LabInputError("command line", "--rate-in-tbf", "needs the nfqueue link emulator")
        em.rate_in_delayline = False
    return em
