"""published.yml's metrics against their declarations (mptcplab/metricdecl.py): a name
no metric has, or a selection (path, flow, window) the metric does not take.

The schema checks the file's shape only; the loader runs this right after it, before its
own reference checks. The declarations need nothing of the package: the computations
(mptcplab/metrics/, which read the result model and the capture analysis) stay above the
lab model, and the lab package imports none of them.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import LabInputError
from ..metricdecl import Select, refusal
from .schema import Published, Selected


def _refuse(file: Path, field: str, metric: str, chosen: Selected | None = None) -> None:
    # without a selection only the name is asked: an unknown one is the `metric` field's fault
    sel = Select() if chosen is None else Select(chosen.path, chosen.flow, chosen.window)
    why = refusal(metric, sel)
    if why is not None:
        raise LabInputError(str(file), field, why)


def check_metrics(pub: Published, file: Path) -> None:
    """Every metric of ``pub`` is declared and takes the selection given with it; the
    first that is not raises LabInputError naming its field. An item's name is checked
    before its selection, and a value's or an expectation's before the next one's."""
    for i, v in enumerate(pub.values):
        _refuse(file, f"values[{i}].metric", v.metric)
        _refuse(file, f"values[{i}]", v.metric, v)
    for where, f in pub.located_findings():
        for place, e in f.located():
            # each kind lists the metrics it reads (mptcplab/checks/): names before selections
            for use in e.metric_uses():
                _refuse(file, f"{where}.{place}{use.field}", use.metric, use.selected)
