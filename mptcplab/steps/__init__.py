"""The steps of one repetition, each with ``commands()`` (what it will run) and ``run()``
(running it). The run executes the steps in order; ``--dry-run`` walks the same steps and
prints their ``commands()``: the dry run is the run minus execution, so the two cannot drift
apart (tests/integration/test_dry_run_matches_run.py holds them to it against a real run's
commands.log).

base.py is the framework (RunContext, Rep, Planned, Step); one module per engine step:
deploy, links (the link check), sysctls (read-back), traffic (with flows.py, the flows'
timing), daemons (stopping the link-emulation daemons), counters (firewall and middlebox
counters). The congestion-control, probe and timeline steps build on base.py in their own
packages; run/sequence.py (above them all) puts every step in its order. Why that order:
docs/architecture.md.
"""
