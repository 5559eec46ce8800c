"""A row of events.csv: one action of the timeline or a controller."""

from __future__ import annotations

from pydantic import ConfigDict

from ...values.types import Lenient


class Event(Lenient):
    """One action a repetition executed, or planned and did not run: a row of events.csv
    (timeline/record.py writes it; record/events.read_events reads it, older files too).

    The first eleven fields are the columns of every events.csv; ``target`` and ``commands``
    are for people. The typed fields after them say what the action acted on, so readers
    need not parse that text: in files written before they existed they are absent and the
    reader derives them from ``target`` and ``commands``. ``capture_s`` is the analysis's.
    """

    model_config = ConfigDict(extra="ignore", frozen=True)

    planned_s: float
    actual_s: float | None = None  # None: never ran (the traffic ended first)
    action: str
    target: str = ""
    commands: str = ""  # the rendered commands, " ; "-separated (or the in-process call)
    rc: int | None = None  # first non-zero exit status, 0 when all succeeded; None: not run
    duration_ms: float | None = None
    result: str = ""  # stderr of a failed command, or the call's result
    source: str = "timeline"  # timeline | controller:<name>
    epoch_s: float | None = None  # actual time, time.time()
    detail: str = ""  # a controller's reason for the action, with its numbers
    #: the node acted on (endpoint_*, sysctl), or the node of ``link``'s end (link_*)
    node: str | None = None
    #: link_*: 'node:iface' of the end the lab named
    link: str | None = None
    #: link_*: both | one
    direction: str | None = None
    #: endpoint_add / endpoint_flags / endpoint_delete (when given): the address as the lab
    #: names it ('node:iface' or IPv4)
    address: str | None = None
    #: endpoint_delete: the id deleted; endpoint_add: the id given (None: the kernel's choice)
    endpoint_id: int | None = None
    #: endpoint_flags: backup | nobackup | fullmesh | nofullmesh; endpoint_add: its flags,
    #: space-separated
    flags: str | None = None
    #: flow_start / flow_stop: the flow's name
    flow: str | None = None
    #: the same instant on the time-series axis (added by the analysis; None before it)
    capture_s: float | None = None

    @property
    def done(self) -> bool:
        """It ran, and every command succeeded."""
        return self.rc == 0 and self.epoch_s is not None

    def row(self) -> dict[str, object]:
        """The row events.csv holds (None as an empty cell), without ``capture_s``."""
        return self.model_dump(exclude={"capture_s"})


EVENTS_FILE = "events.csv"
#: events.csv's columns as written (the analysis appends ``capture_s``)
EVENT_COLUMNS = [f for f in Event.model_fields if f != "capture_s"]
#: the typed columns: absent from files written before they existed
EVENT_TYPED_COLUMNS = EVENT_COLUMNS[EVENT_COLUMNS.index("detail") + 1:]
