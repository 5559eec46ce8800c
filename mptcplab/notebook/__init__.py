"""What the notebooks in notebooks/ call besides the result model: the lab catalogue of the
landing notebook (catalog.py), a quick run started from a cell (quickrun.py), and the list
of result fields a run lacks (gaps.py). Kept here, not in the notebooks, so that it is typed,
linted and unit-tested like the rest of the engine."""
