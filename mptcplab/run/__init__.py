"""A lab run: scenarios x repetitions into a results directory (lab.py), or a dry run that
prints every command and creates nothing (dryrun.py); one repetition at a time, its steps in
their order (run/sequence.py).

- options.py: the run's options, the scenarios it selects, their repetitions;
- lab.py: the run, in the order that keeps its directory whole whatever stops it;
- run/sequence.py: a repetition's steps in their order, and the teardown that ends every one;
- measure.py: one repetition measured; retry.py: which attempt counts; record.py: the
  measured repetition turned into its record (in the analysis worker, worker.py);
- signals.py: the run's signal handling (teardown on every exit path: normal end, error,
  Ctrl-C, SIGTERM);
- verdicts.py: what makes a run's numbers wrong, and its summary;
- rundir.py: the run directory's form per backend, and cleaning what killed runs left.
"""

from .dryrun import dry_run
from .lab import REPO, run_lab
from .measure import AnalysisJob, Measured, RepRunner
from .options import RunOptions, repetitions, select_scenarios, uniform_repetitions
from .record import analyze
from .retry import REPETITION_RETRIED, attempt_failed, late_delay_lines, measure_repetition, setup_failure
from .signals import DeferredSignals, Interrupted, install_signal_handlers, restore_signal_handlers
from .verdicts import daemon_problems, run_summary

__all__ = ["REPETITION_RETRIED", "REPO", "AnalysisJob", "DeferredSignals", "Interrupted", "Measured", "RepRunner",
           "RunOptions", "analyze", "attempt_failed", "daemon_problems", "dry_run", "install_signal_handlers",
           "late_delay_lines", "measure_repetition", "repetitions", "restore_signal_handlers", "run_lab",
           "run_summary", "select_scenarios", "setup_failure", "uniform_repetitions"]
