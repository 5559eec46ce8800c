"""What every part of the result model shares: the format version, the file error, the
base model (readers ignore what they do not know) and Warning."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError, model_validator

from ...errors import LabInputError
from ...values.types import Lenient

#: Bump on any change a reader of the previous version would misread (docs/results-format.md).
FORMAT_VERSION = 2
#: Code of a warning given as plain text (the runner's warnings before they had codes).
UNCLASSIFIED = "unclassified"

TIMESERIES_COLUMNS = ["t", "path", "subflow", "bytes", "mbps"]
ICMP_COLUMNS = ["t", "src", "dst", "type", "code", "mtu", "quoted_src", "quoted_sport", "path", "icmp6"]


class ResultsFormatError(LabInputError):
    """A results file this engine cannot read: one line naming the file, the field and the
    problem; the CLI exits 2 with it, like any other bad input."""


def validation_where(e: ValidationError) -> str:
    """The first bad field of a validation error, as a dotted path (scenarios.3.mptcp): the
    field of a ResultsFormatError."""
    return ".".join(str(x) for x in e.errors()[0]["loc"])


class Warning(Lenient):  # noqa: A001 - the model's name in docs/results-format.md
    """One problem, one line. ``code`` is stable and machine-readable (policy decides on it),
    ``message`` is for people and carries the reason; ``path`` names the path it concerns."""

    code: str = UNCLASSIFIED
    message: str
    path: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, data: Any) -> Any:
        # a plain string is today's runner warning: kept verbatim, code unknown
        return {"code": UNCLASSIFIED, "message": data} if isinstance(data, str) else data

    def __str__(self) -> str:
        return self.message
