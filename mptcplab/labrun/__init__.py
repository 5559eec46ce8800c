"""A whole lab run: scenarios x repetitions into a results directory (run.py), or a dry
run that prints every command and creates nothing (dryrun.py).

- options.py: the run's options, the scenarios it selects, their repetitions;
- run.py: the run, in the order that keeps its directory whole whatever stops it;
- worker.py: the nice-19 analysis worker that never outlives the run;
- verdicts.py: what makes a run's numbers wrong, and its summary;
- rundir.py: the run directory's form per backend, and cleaning what killed runs left.
"""

from .dryrun import dry_run
from .options import RunOptions, repetitions, select_scenarios, uniform_repetitions
from .run import REPO, run_lab
from .verdicts import daemon_problems, run_summary

__all__ = ["REPO", "RunOptions", "daemon_problems", "dry_run", "repetitions", "run_lab", "run_summary",
           "select_scenarios", "uniform_repetitions"]
