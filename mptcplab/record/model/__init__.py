"""The typed result model: what a run writes (summary.json, rep.json) and what every reader
reads (report, figures, notebooks, the VM check). docs/results-format.md is its contract.

One set of classes both writes and reads a file, so a field cannot mean one thing to the
runner and another to the report. summary.json carries ``format_version``; a file without
one (written before the model existed) is read through a documented compatibility path, a
file from a newer engine is refused with one line: both in results/read.py, the files' only
reader, which stands above the aggregates a format-0 file needs recomputed.

One module per file part (base, flow, connections, repetition, summary, manifest, event); this
package's face names every model but the traffic kinds' own (each in its kind's module,
mptcplab/traffic/<kind>_result.py, gathered by mptcplab/traffic/results.py). That registry
and those modules are the one import from outside record/: they build on this package's
base alone, so metrics/ may still type their records with it.
"""

from .base import (
    FORMAT_VERSION,
    ICMP_COLUMNS,
    TIMESERIES_COLUMNS,
    UNCLASSIFIED,
    ResultsFormatError,
    Warning,
    validation_where,
)
from .connections import ConnectionsCheck
from .event import EVENT_COLUMNS, EVENT_TYPED_COLUMNS, EVENTS_FILE, Event
from .flow import Flow, FlowOutcome, HolNumbers, MptcpVerdict, Subflow
from .manifest import CalibrationCheck, Git, LinkCalibration, Manifest, TraceReplay, load_manifest
from .repetition import CaptureStats, CpuTime, Fairness, FlowResult, HostCpu, Repetition
from .summary import (
    VERDICTS,
    CheckStat,
    FindingRow,
    KernelPatch,
    PathAggregate,
    PublishedRow,
    PublishedSource,
    ScenarioAggregate,
    Summary,
    Verdict,
)

__all__ = [
    "FORMAT_VERSION",
    "ICMP_COLUMNS",
    "TIMESERIES_COLUMNS",
    "UNCLASSIFIED",
    "ResultsFormatError",
    "Warning",
    "validation_where",
    "Flow",
    "FlowOutcome",
    "HolNumbers",
    "MptcpVerdict",
    "Subflow",
    "ConnectionsCheck",
    "CaptureStats",
    "CpuTime",
    "Fairness",
    "FlowResult",
    "HostCpu",
    "Repetition",
    "VERDICTS",
    "CheckStat",
    "FindingRow",
    "Verdict",
    "KernelPatch",
    "PathAggregate",
    "PublishedRow",
    "PublishedSource",
    "ScenarioAggregate",
    "Summary",
    "CalibrationCheck",
    "Git",
    "LinkCalibration",
    "TraceReplay",
    "Manifest",
    "load_manifest",
    "EVENTS_FILE",
    "EVENT_COLUMNS",
    "EVENT_TYPED_COLUMNS",
    "Event",
]
