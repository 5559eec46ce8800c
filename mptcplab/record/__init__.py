"""A run's record as it is stored: the typed result model (model/, the contract of
docs/results-format.md), events.csv (events.py), run directories that are never
overwritten (store.py), the manifest that makes a run self-describing (manifest.py),
the packed record without captures (archive.py) and the CPU-bound validity rule
(validity.py).

It sits below everything that reads or derives from a run: the metrics, the analysis
and results/ (aggregates, findings, tables, figures, report) import it, never the
other way round.
"""
