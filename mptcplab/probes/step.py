"""The probes of a repetition as two steps of sequence.measurement_steps: StartProbes
right before traffic and StopProbes right after it, so the probes cover the whole
transfer and nothing of the link checks. Which probes, in which order, is the registry's
(registry.for_repetition): the packet capture first, whatever the lab turns on, so it is
listening before the others start and, stopped newest first, stops after them; the host's
CPU accounting last, so its interval is the traffic's. close_probes() runs at teardown on
every exit path: a tracefs instance is host-wide and must not outlive the repetition."""

from __future__ import annotations

from ..steps.base import Planned, Rep, RepProbe, Step
from ..warncodes import CLEANUP_FAILED
from .registry import for_repetition


def _build(rep: Rep) -> list[RepProbe]:
    # a dry run shows fixed placeholders for what a run draws at random (Probe.for_run)
    return [cls.for_run(dry_run=rep.supervisor is None) for cls in for_repetition(rep.body)]


def probes_of(rep: Rep) -> list[RepProbe]:
    if not rep.probes:
        rep.probes = _build(rep)
    return rep.probes


def close_probes(rep: Rep) -> None:
    """Every exit path (sequence.Teardown): release what the probes hold; never raises."""
    for p in rep.probes:
        try:
            p.close()
        except Exception as e:  # noqa: BLE001 - teardown goes on; say what stayed
            rep.warn(CLEANUP_FAILED, f"probe {p.name}: cleanup failed: {e}")


class StartProbes(Step):
    """Starts the capture and the scenario's probes; its commands are every probe's, start
    and stop (the stop step prints none)."""

    title = "start probes: the capture (tcpdump), then the lab's (their stop commands run after traffic)"

    def commands(self, rep: Rep) -> list[Planned]:
        return [c for p in probes_of(rep) for c in p.commands(rep)]

    def run(self, rep: Rep) -> None:
        probes = probes_of(rep)
        # probes/ only when a probe writes there (the capture writes beside it)
        for d in dict.fromkeys(p.artifacts_dir for p in probes if p.artifacts_dir):
            (rep.out / d).mkdir(exist_ok=True)
        for p in probes:
            p.start(rep)


class StopProbes(Step):
    title = "stop probes, newest first: the capture last (SIGINT: tcpdump flushes and prints its counters)"

    def commands(self, rep: Rep) -> list[Planned]:
        return []

    def run(self, rep: Rep) -> None:
        """Stop every probe (all of them, even when one fails), newest first; then
        raise the first failure."""
        first: Exception | None = None
        for p in reversed(rep.probes):
            try:
                p.stop(rep)
            except Exception as e:  # noqa: BLE001 - the others must still stop
                first = first or e
            finally:
                p.close()
        if first is not None:
            raise first
