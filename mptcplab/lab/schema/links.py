"""A link's impairments (rate or a delivery trace, delay, jitter, loss, queue), per direction."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from ...units import parse_fraction, parse_rate, parse_time
from ...values.fields import check_unit
from ...values.types import MAX_DELAY_SECONDS, Strict


class _ShapeFields(Strict):
    """The impairments of a link direction (see emulation/linkmodel.py LinkShape)."""

    rate: str | int | None = None
    delay: str | float | None = None
    jitter: str | float | None = None
    loss: str | float | None = None
    queue: str | int | None = Field(default=None, description="bytes ('150KB') or time at the link rate ('80ms')")
    trace: str | None = Field(default=None, min_length=1,
                              description="a packet-delivery trace replayed as the link's capacity (Mahimahi format): "
                                          "a shipped trace's name (traces/NAME.trace) or a path relative to the lab; "
                                          "excludes rate")
    trace_offset: str | float | None = Field(default=None, description="where in the trace the link starts ('12s')")

    _rate = field_validator("rate")(classmethod(lambda cls, v: check_unit(parse_rate, v)))
    _delay = field_validator("delay", "jitter", "trace_offset")(
        classmethod(lambda cls, v: check_unit(parse_time, v)))
    _loss = field_validator("loss")(classmethod(lambda cls, v: check_unit(parse_fraction, v)))

    @field_validator("delay", "jitter")
    @classmethod
    def _delay_range(cls, v: Any) -> Any:
        if v is not None and parse_time(v) > MAX_DELAY_SECONDS:
            raise ValueError(f"{v!r} is longer than the {MAX_DELAY_SECONDS:g} s a delay stage can hold")
        return v

    @field_validator("queue")
    @classmethod
    def _queue(cls, v: Any) -> Any:
        from ...emulation.linkmodel import QueueLimit

        return check_unit(QueueLimit.parse, v)

    def shape_values(self) -> dict[str, Any]:
        """The impairment fields that are set, by name."""
        return {k: getattr(self, k) for k in SHAPE_FIELDS if getattr(self, k) is not None}


#: the fields a direction can set (and override one by one)
SHAPE_FIELDS = ("rate", "delay", "jitter", "loss", "queue", "trace", "trace_offset")


class DirectionSpec(_ShapeFields):
    """One direction's impairments; a field it leaves out keeps the link's value."""


#: the two directions of a link, relative to the endpoint that names it in ``links:``
Direction = Literal["egress", "ingress"]


class LinkSpec(_ShapeFields):
    """Impairments of a link. The fields at the top apply to each direction; ``egress``
    (packets leaving the endpoint that names the link) and ``ingress`` (packets arriving
    at it) override them field by field for one direction (see emulation/linkmodel.py)."""

    mtu: int | None = Field(default=None, ge=68, le=65535, description="overrides the topology's mtu")
    egress: DirectionSpec | None = Field(default=None, description="from this endpoint to its peer")
    ingress: DirectionSpec | None = Field(default=None, description="from the peer to this endpoint")

    @model_validator(mode="after")
    def _trace_excludes_rate(self) -> LinkSpec:
        both: tuple[Direction, Direction] = ("egress", "ingress")
        for which in both:
            d = self.direction(which)
            if "trace" in d and "rate" in d:
                raise ValueError(f"{self.field_of(which, 'trace')}: a trace is the link's rate, it excludes "
                                 f"{self.field_of(which, 'rate')} (give each direction one of them)")
            if "trace_offset" in d and "trace" not in d:
                raise ValueError(f"{self.field_of(which, 'trace_offset')}: an offset needs a trace")
        return self

    def direction(self, which: Direction) -> dict[str, Any]:
        """The impairment fields of one direction: the link's, overridden by the direction's."""
        own = self.egress if which == "egress" else self.ingress
        return {**self.shape_values(), **(own.shape_values() if own else {})}

    def field_of(self, which: Direction, name: str) -> str:
        """Where ``name`` of direction ``which`` comes from: 'egress.rate' or 'rate'."""
        own = self.egress if which == "egress" else self.ingress
        return f"{which}.{name}" if own is not None and getattr(own, name) is not None else name
