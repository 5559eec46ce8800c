"""Running a lab's repetitions: measure one (measure.py), decide which attempt counts
(retry.py), turn it into its record (record.py), with the run's signal handling (signals.py).
labrun/run.py drives these over every scenario x repetition.

Teardown runs on every exit path (normal end, error, Ctrl-C, SIGTERM).
"""

from __future__ import annotations

from ..steps.base import RunContext
from .measure import AnalysisJob, Measured, RepRunner
from .record import analyse
from .retry import (
    REPETITION_RETRIED,
    attempt_failed,
    late_delay_lines,
    measure_repetition,
    setup_failure,
)
from .signals import DeferredSignals, Interrupted, install_signal_handlers, restore_signal_handlers

__all__ = ["REPETITION_RETRIED", "AnalysisJob", "DeferredSignals", "Interrupted", "Measured", "RepRunner",
           "RunContext", "analyse", "attempt_failed", "install_signal_handlers", "late_delay_lines",
           "measure_repetition", "restore_signal_handlers", "setup_failure"]
