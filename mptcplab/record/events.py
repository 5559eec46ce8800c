"""events.csv, a repetition's timeline and controller actions, read into typed Events
(record/model.Event): the only parser of its text, for every version of the file.

Below results/read.py (which gathers a whole run's events into one frame) and importing
only the model, so the metrics and the analysis read events without standing under the
summary readers, whose format-0 upgrade imports the metrics.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .model import EVENT_TYPED_COLUMNS, EVENTS_FILE, Event, ResultsFormatError, validation_where

#: flags of ``ip mptcp endpoint`` that an old events.csv's commands can carry
_ENDPOINT_FLAGS = ("subflow", "signal", "backup", "fullmesh", "nobackup")


def _old_event_fields(action: str, target: str, commands: str) -> dict[str, Any]:
    """The typed columns of a row written before they existed, from its text: ``target``
    as timeline/actions._target wrote it ('node:iface (both)', 'node address', 'node id N',
    'node key', a flow's name) and, for endpoint flags and ids, the commands' words after
    ``endpoint`` (the rendered ``ip mptcp endpoint ...``)."""
    words = target.split()
    if not words:
        return {}
    if action in ("link_down", "link_up", "link_change"):
        direction = words[1].strip("()") if len(words) > 1 else None
        return {"node": words[0].split(":", 1)[0], "link": words[0], "direction": direction}
    if action in ("flow_start", "flow_stop"):
        return {"flow": target}
    if action == "endpoint_delete":
        ok = len(words) == 3 and words[1] == "id" and words[2].isdigit()
        return {"node": words[0], "endpoint_id": int(words[2]) if ok else None}
    if action in ("endpoint_add", "endpoint_flags"):
        cmd = commands.split()
        cmd = cmd[cmd.index("endpoint") + 1:] if "endpoint" in cmd else []
        flags = [w for w in cmd if w in _ENDPOINT_FLAGS]
        out: dict[str, Any] = {"node": words[0], "address": words[1] if len(words) > 1 else None}
        if action == "endpoint_flags":
            out["flags"] = flags[-1] if flags else None
        else:
            out["flags"] = " ".join(flags) or None
            at = cmd.index("id") + 1 if "id" in cmd else len(cmd)
            out["endpoint_id"] = int(cmd[at]) if at < len(cmd) and cmd[at].isdigit() else None
        return out
    if action == "sysctl":
        return {"node": words[0]}
    return {}


def event_from_row(row: Mapping[str, str | None], source: str = EVENTS_FILE) -> Event:
    """One events.csv row as an Event: empty cells are None (or the field's default); a
    row without the typed columns (written before 2026-11-24) gets them from its text."""
    data: dict[str, Any] = {k: v for k, v in row.items() if k is not None and v not in (None, "")}
    if not any(c in row for c in EVENT_TYPED_COLUMNS):
        derived = _old_event_fields(data.get("action", ""), data.get("target", ""), data.get("commands", ""))
        data.update({k: v for k, v in derived.items() if v is not None})
    try:
        return Event.model_validate(data)
    except ValidationError as e:
        raise ResultsFormatError(source, validation_where(e), f"not a readable event: {e.errors()[0]['msg']}") from None


def read_events(path: str | Path) -> list[Event]:
    """A repetition's events.csv in file order, any version (the only parser of its text);
    none when the repetition had no timeline or controller (no file)."""
    path = Path(path)
    if not path.is_file():
        return []
    with path.open(newline="") as f:
        return [event_from_row(row, f"{path}, row {i}") for i, row in enumerate(csv.DictReader(f), 1)]
