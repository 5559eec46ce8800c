"""experiment.yml as a whole: capture points, probes, sweeps, scenarios, quick mode,
link calibration."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field, ValidationInfo, create_model, field_validator, model_validator

from ... import plugins
from ...units import parse_time
from ...values.fields import check_unit
from ...values.types import IPERF3_MAX_SECONDS, EndpointRef, Name, Strict, Sysctls
from ..events import ControllerSpec
from .flows import Traffic
from .links import LinkSpec
from .nodes import Addressing, NodeSpec


class CapturePoint(Strict):
    point: EndpointRef = Field(description="'node:iface'")
    snaplen: int = Field(default=128, ge=64, le=65535)
    #: tcpdump --time-stamp-precision: "nano" for handshakes timed in microseconds (labs/setup)
    timestamps: Literal["micro", "nano"] = "micro"


def probes_model(probes: Mapping[str, Any]) -> type[Strict]:
    """The ``probes:`` model: one field per probe a lab can choose, as the probe class declares
    it in its ``setting`` (type with validators, default, description; probes/base.py), in the
    registry's order."""
    fields: dict[str, Any] = {name: (cls.setting.type, Field(default=cls.setting.default,
                                                              description=cls.setting.description))
                              for name, cls in probes.items()}
    model: type[Strict] = create_model(
        "Probes", __base__=Strict, __module__=__name__,
        __doc__="What watches a repetition besides the capture (mptcplab/probes/, docs/lab-format.md).", **fields)
    return model


# The probes are plug-ins (mptcplab/probes/registry.py, found by name: mptcplab/plugins.py),
# so this module names none of them. mypy sees the base class (a probe reads its field with
# Probe.value); pydantic, the built model.
if TYPE_CHECKING:
    Probes = Strict
else:
    Probes = probes_model(plugins.registry("probes").REGISTRY)


class Sweep(Strict):
    path: list[str] = Field(min_length=1, description="keys into experiment.yml, "
                            "e.g. [nodes, client, sysctls, net.ipv4.tcp_mtu_probing]")
    values: list[Any] = Field(min_length=1)
    labels: list[str] | None = Field(default=None,
                                     description="names of the values in scenario names (default: the values)")

    @model_validator(mode="after")
    def _labels_match(self) -> Sweep:
        if self.labels is not None and len(self.labels) != len(self.values):
            raise ValueError(f"labels has {len(self.labels)} entries for {len(self.values)} values")
        return self


class Scenario(Strict):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]{0,60}$")
    description: str = ""
    override: dict[str, Any] = {}
    sweep: list[Sweep] = []


class Quick(Strict):
    duration: str | float = "3s"
    repetitions: int = Field(default=1, ge=1)

    _d = field_validator("duration")(classmethod(lambda cls, v: check_unit(parse_time, v)))

    @field_validator("duration")
    @classmethod
    def _range(cls, v: Any) -> Any:
        if not 0 < parse_time(v) <= IPERF3_MAX_SECONDS:
            raise ValueError(f"duration must be positive and at most {IPERF3_MAX_SECONDS} s")
        return v


class Calibration(Strict):
    enabled: bool = True
    rate_check: bool = True
    rate_seconds: str | float = "2s"
    #: the trace replay check's span (its flood, from the trace's start): None, the whole
    #: trace in a full run and tracecheck.QUICK_SECONDS in a quick one
    trace_seconds: str | float | None = None

    _t = field_validator("rate_seconds", "trace_seconds")(
        classmethod(lambda cls, v: v if v is None else check_unit(parse_time, v)))

    @field_validator("rate_seconds")
    @classmethod
    def _range(cls, v: Any) -> Any:
        if not 0 < parse_time(v) <= 600:
            raise ValueError("rate_seconds must be positive and at most 600 s")
        return v

    @field_validator("trace_seconds")
    @classmethod
    def _trace_range(cls, v: Any) -> Any:
        if v is not None and not 2 <= parse_time(v) <= IPERF3_MAX_SECONDS:
            raise ValueError(f"trace_seconds must be between 2 and {IPERF3_MAX_SECONDS} s (iperf3's limit)")
        return v


class ExperimentBody(Strict):
    """Everything a scenario can override (scenarios themselves excluded)."""

    description: str = ""
    paths: dict[Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,15}$")], EndpointRef] = Field(
        default={}, description="path label -> client-side 'node:iface'")
    addressing: Addressing = Addressing()
    sysctls: Sysctls = {}
    nodes: dict[Name, NodeSpec]
    links: dict[EndpointRef, LinkSpec] = {}
    traffic: Traffic
    #: controllers run during the traffic (mptcplab/controllers/)
    controllers: list[ControllerSpec] = []
    capture: list[CapturePoint] = []
    probes: Probes = Probes()
    calibration: Calibration = Calibration()
    repetitions: int = Field(default=3, ge=1, le=100)
    quick: Quick = Quick()
    #: the scenario measures what the CPUs carry (unshaped: labs/rcvbuf's DSS-checksum cost), so
    #: iperf3 at full CPU is its result, not a reason to void its timing (record/validity.py)
    cpu_bound: bool = False


class Subset(Strict):
    """A named subset of a lab's scenarios (``run --subset NAME``): the expanded scenario
    names or shell-style patterns it runs, and optionally how many repetitions each. It
    selects, never changes what a scenario measures: its results read like the full lab's."""

    description: str = ""
    scenarios: list[Annotated[str, Field(min_length=1, max_length=100)]] = Field(min_length=1)
    repetitions: int | None = Field(default=None, ge=1, le=100)


class Experiment(ExperimentBody):
    scenarios: list[Scenario] = Field(min_length=1)
    #: named subsets (the loader checks that each pattern selects a scenario: lab/selection.py)
    subsets: dict[Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,30}$")], Subset] = {}
    #: every rate (and queue given in bytes) times this factor, delays unchanged: a lab this
    #: machine cannot carry at full rate keeps its rate and delay ratios (lab/scale.py). Not
    #: per scenario: one run has one scale, stated next to every number it affects.
    scale: float | None = Field(default=None, gt=0, le=1,
                                description="rate scale factor in (0, 1]; `mptcplab run --scale` overrides it")
    #: why the lab runs below the paper's rates: the measurement that shows this machine cannot
    #: carry them (run, what failed); required with a scale below 1, printed in the report
    scale_reason: str | None = Field(default=None, min_length=20, validate_default=True,
                                     description="the measurement that makes a scale below 1 necessary")

    @field_validator("scale_reason")
    @classmethod
    def _scale_has_reason(cls, v: str | None, info: ValidationInfo) -> str | None:
        scale = info.data.get("scale")
        if scale is not None and scale < 1 and not v:
            raise ValueError("required with a scale below 1: the measurement that shows this machine cannot "
                             "carry the paper's rates")
        return v

    @field_validator("scenarios")
    @classmethod
    def _unique(cls, v: list[Scenario]) -> list[Scenario]:
        seen: set[str] = set()
        for s in v:
            if s.name in seen:
                raise ValueError(f"duplicate scenario name {s.name!r}")
            seen.add(s.name)
        return v
