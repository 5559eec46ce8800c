"""The result model carries every field the analysis produces: a field the model does not
declare is dropped from summary.json (its readers ignore unknown keys), which is how
`contributed` once went missing between the analysis and the report."""

from __future__ import annotations

import dataclasses

from mptcplab.analysis.model import SubflowResult
from mptcplab.record.model import Subflow


def test_every_analysis_subflow_field_is_in_the_result_model() -> None:
    produced = {f.name for f in dataclasses.fields(SubflowResult)}
    declared = set(Subflow.model_fields)
    assert produced - declared == set(), f"add to record/model/flow.py Subflow: {sorted(produced - declared)}"
