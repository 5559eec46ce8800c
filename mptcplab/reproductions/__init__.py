"""docs/reproductions.md and the verdict sections of docs/labs/<lab>.md, generated from the
records kept in the repository (campaigns/records/): collect.py restores and merges them,
render.py writes the markdown, docs.py puts it in place or checks that it is there."""
