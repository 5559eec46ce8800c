"""Runs one controller on a thread during the traffic: every ``interval`` it samples
the node (probes/ss.SsSampler), calls ``step``, resolves the returned actions
(timeline/actions.resolve) and runs them through the scheduler, so they are
recorded in events.csv with source ``controller:<name>``.

Starts at the timeline's zero and stops when told (end of traffic). A controller
that raises is recorded as an event with its error, and stops deciding: the
repetition is not lost to a controller's bug, and events.csv says what happened.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace

from ..controllers.base import Controller, Decision, View
from ..lab.events import Event
from ..record import model as results
from ..tools.ss import SsSampler, busiest_connection
from .actions import resolve
from .env import ActionEnv, Resolved
from .scheduler import Scheduler


class ControllerThread:
    def __init__(self, controller: Controller, sampler: SsSampler, env: ActionEnv, scheduler: Scheduler,
                 zero_event: threading.Event, zero: Callable[[], float | None]) -> None:
        self.controller = controller
        self.sampler = sampler
        self.env = env
        self.scheduler = scheduler
        self._zero_event = zero_event
        self._zero = zero
        self._stop = threading.Event()
        self.steps = 0
        self.errors: list[results.Event] = []
        self._thread = threading.Thread(target=self._run, name=f"controller-{controller.name}", daemon=True)

    @property
    def source(self) -> str:
        return f"controller:{self.controller.name}"

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        while not self._zero_event.wait(0.05):
            if self._stop.is_set():
                return
        t0 = self._zero()
        if t0 is None:
            return
        interval = self.controller.spec.interval_s
        next_t = time.time() + interval
        while not self._stop.wait(max(0.0, next_t - time.time())):
            next_t += interval
            now = time.time() - t0
            try:
                seen = self.sampler.sample()
                actions = self.controller.step(View(now, self.sampler.node, busiest_connection(seen), seen))
                todo = [self._resolve(a, round(now, 6)) for a in actions]
            except Exception as e:  # noqa: BLE001 - recorded, the repetition goes on
                self.errors.append(self.scheduler.submit(
                    Resolved(round(now, 6), "controller_error", self.controller.name, source=self.source,
                             call=_raise(e), call_text="(the controller raised)"), t0))
                return
            self.steps += 1
            for item in todo:
                self.scheduler.submit(item, t0)

    def _resolve(self, a: Event | Decision, now: float) -> Resolved:
        if not isinstance(a, Decision):
            return resolve(self.env, a, source=self.source, planned_s=now)
        if a.action is None:  # a decision with nothing to run: recorded all the same
            return Resolved(now, "decision", a.target, source=self.source, detail=a.detail)
        return replace(resolve(self.env, a.action, source=self.source, planned_s=now), detail=a.detail)


def _raise(e: Exception) -> Callable[[], str]:
    def call() -> str:
        raise e

    return call
