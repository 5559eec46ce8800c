"""The finding checks' registry: the one place that lists the kinds of check. Adding a kind
is its module (a CheckKind subclass) and one line in CHECKS."""

from __future__ import annotations

from typing import TYPE_CHECKING, Union

from .base import CheckKind
from .counter import CounterCheck
from .fact import CaptureFact
from .metric import Expectation

#: every kind, in the order published.yml's ``expect`` union tries them (pydantic's smart
#: union: an item is the kind whose fields it has)
CHECKS: tuple[type[CheckKind], ...] = (Expectation, CaptureFact, CounterCheck)

if TYPE_CHECKING:
    #: any check, as the code sees it: the interface
    AnyCheck = CheckKind
else:
    # as published.yml is validated: the union of the kinds
    AnyCheck = Union[CHECKS]  # noqa: UP007  (built from a tuple)
