"""The probes of a repetition as two steps of sequence.measurement_steps: StartProbes
right before traffic (after the capture is listening) and StopProbes right after it
(before the capture stops), so the probes cover the whole transfer and nothing of the
link checks. close_probes() runs at teardown on every exit path: a tracefs instance
is host-wide and must not outlive the repetition."""

from __future__ import annotations

from ..steps import Planned, Rep, Step
from .base import Probe, probes_dir
from .registry import enabled
from .tcp_probe import DRY_RUN_TOKEN, TcpProbe


def _build(rep: Rep) -> list[Probe]:
    dry = rep.supervisor is None
    # a dry run shows fixed placeholders for what a run draws at random
    return [TcpProbe(DRY_RUN_TOKEN) if cls is TcpProbe and dry else cls() for cls in enabled(rep.body)]


def probes_of(rep: Rep) -> list[Probe]:
    if not rep.probes and enabled(rep.body):
        rep.probes = _build(rep)
    return rep.probes


def close_probes(rep: Rep) -> None:
    """Every exit path (sequence.Teardown): release what the probes hold; never raises."""
    for p in rep.probes:
        try:
            p.close()
        except Exception as e:  # noqa: BLE001 - teardown goes on; say what stayed
            rep.warnings.append(f"probe {p.name}: cleanup failed: {e}")


class StartProbes(Step):
    """Starts the scenario's probes; its commands are every probe's, start and stop
    (the stop step prints none, like the capture's)."""

    title = "start probes (their stop commands run after traffic)"

    def commands(self, rep: Rep) -> list[Planned]:
        return [c for p in probes_of(rep) for c in p.commands(rep)]

    def run(self, rep: Rep) -> None:
        probes = probes_of(rep)
        if probes:
            probes_dir(rep.out).mkdir(exist_ok=True)
        for p in probes:
            p.start(rep)


class StopProbes(Step):
    title = "stop probes"

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
