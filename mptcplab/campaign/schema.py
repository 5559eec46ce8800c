"""CAMPAIGN.yml: what to run where. A strict pydantic model; every error is one line naming
the file and the field (exit status 2), as for lab files."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..errors import LabInputError
from .debs import BadPackages, read_packages

#: target and campaign names become directory names and Ansible --limit patterns
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")
#: the slot of local and qemu targets: they run here, so never two at once
THIS_MACHINE = "this machine"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _name(v: str) -> str:
    if not _NAME.match(v):
        raise ValueError(f"{v!r}: letters, digits, '.', '_' and '-' only (a directory name), at most 63")
    return v


class LabEntry(_Strict):
    #: a lab directory (relative to the campaign file, else to the working directory) or a name
    lab: str
    #: the scenarios to run (default: all of the lab's)
    scenarios: list[str] | None = None
    #: or the lab's named subset (experiment.yml ``subsets:``): each item runs
    #: ``mptcplab run LAB --subset NAME``, the same selection and manifest record
    subset: str | None = None

    @field_validator("scenarios")
    @classmethod
    def _nonempty(cls, v: list[str] | None) -> list[str] | None:
        if v is not None and not v:
            raise ValueError("an empty list runs nothing; leave it out to run every scenario")
        return v

    @model_validator(mode="after")
    def _one_selection(self) -> LabEntry:
        if self.subset is not None and self.scenarios is not None:
            raise ValueError("scenarios and subset exclude each other (as run --scenario and --subset do)")
        return self


class HostClass(_Strict):
    """What every host of a pool must be, so that its hosts are interchangeable for
    measurement: checked against each item's manifest (shell-style patterns)."""

    #: the kernel release (``uname -r``), e.g. "6.18.*"
    kernel: str | None = None
    #: the CPU model (/proc/cpuinfo "model name"), e.g. "*EPYC 7763*"
    cpu_model: str | None = None
    cpu_count: int | None = Field(default=None, ge=1)

    def mismatch(self, kernel: str | None, cpu_model: str | None, cpu_count: int | None) -> str | None:
        """Why a host with these facts is not of this class (None: it is)."""
        for what, want, got in (("kernel", self.kernel, kernel), ("CPU model", self.cpu_model, cpu_model)):
            if want is not None and (got is None or not fnmatch.fnmatchcase(got, want)):
                return f"{what} {got or 'unknown'} is not {want!r}"
        if self.cpu_count is not None and cpu_count != self.cpu_count:
            return f"{cpu_count or 'unknown'} CPU(s), not {self.cpu_count}"
        return None


class Target(_Strict):
    """Where work items run: ``local`` (this host, the engine's netns backend), an
    ``ansible`` host of the campaign's inventory (the checkout is synced there, the item
    run, its result directory fetched back: ansible/campaign-item.yml) or a ``pool`` of
    them (interchangeable hosts: each item runs on whichever is free, one item per host at
    a time), or ``qemu`` (this host's userland on the kernel of a packages directory,
    booted for each item by images/kernel/qemu-run.sh)."""

    name: str
    kind: Literal["local", "ansible", "qemu"] = "local"
    #: the inventory host name (default: the target's name)
    host: str | None = None
    #: ansible: the inventory hosts of a pool (instead of one ``host``)
    pool: list[str] | None = None
    #: ansible: what its host(s) must be; a result measured on another kind of host is
    #: refused, and the item measured again on another host of the pool
    expect: HostClass | None = None
    #: a note for people: which kernel or machine this is
    description: str | None = None
    #: qemu: the kernel's packages directory (relative to the campaign file; what
    #: images/kernel/debs.sh accepts: `make kernel-deb`'s, or one distribution image .deb)
    debs: str | None = None
    #: qemu: QEMU's accelerator (qemu-run.sh's default: tcg, a software-emulated CPU)
    accel: Literal["tcg", "kvm"] | None = None
    #: qemu: the guest's memory in MB (qemu-run.sh's default: 2048)
    mem: int | None = Field(default=None, ge=256)
    #: qemu: the boot and the item, at most, in seconds (qemu-run.sh's default: 3600)
    timeout: int | None = Field(default=None, ge=1)

    @field_validator("name")
    @classmethod
    def _check_name(cls, v: str) -> str:
        return _name(v)

    @model_validator(mode="after")
    def _fields_of_kind(self) -> Target:
        for f in ("host", "pool", "expect"):
            if self.kind != "ansible" and getattr(self, f) is not None:
                raise ValueError(f"{f} is for kind ansible (a {self.kind} target is this host)")
        if self.pool is not None:
            if self.host is not None:
                raise ValueError("host and pool exclude each other (one host, or a pool of them)")
            if not self.pool:
                raise ValueError("an empty pool has no host to run on")
            for h in self.pool:
                _name(h)
            dup = sorted({h for h in self.pool if self.pool.count(h) > 1})
            if dup:
                raise ValueError(f"pool hosts must be unique: {', '.join(dup)} given twice")
        if self.kind == "qemu" and not self.debs:
            raise ValueError("a qemu target needs debs: the packages directory of its kernel")
        if self.kind != "qemu":
            given = [f for f in ("debs", "accel", "mem", "timeout") if getattr(self, f) is not None]
            if given:
                raise ValueError(f"{given[0]} is for kind qemu")
        return self

    @property
    def inventory_host(self) -> str:
        """The host (or, for a pool, the name the pool's items are keyed by: its hosts are
        interchangeable, so adding one does not make the items other measurements)."""
        return self.host or self.name

    @property
    def hosts(self) -> list[str]:
        """The machines the target's items may run on (campaign/pool.py's slots): the pool,
        the ansible host, or this machine (local and qemu targets share it)."""
        if self.pool:
            return list(self.pool)
        return [self.inventory_host] if self.kind == "ansible" else [THIS_MACHINE]


class RunSettings(_Strict):
    """Options handed to every `mptcplab run` of the campaign."""

    quick: bool = False
    #: skip the per-run link checks (results are marked so)
    no_calibrate: bool = False
    emulation: Literal["netem", "nfqueue"] | None = None
    #: every item at this scale (`run --scale F`), instead of the lab's own
    scale: float | None = Field(default=None, gt=0, le=1)
    #: the measurement that shows the links need ``scale`` (`run --scale-reason`); required with it
    scale_reason: str | None = Field(default=None, min_length=20)

    @model_validator(mode="after")
    def _reasoned(self) -> RunSettings:
        if self.scale is not None and self.scale < 1 and not self.scale_reason:
            raise ValueError("scale below 1 needs scale_reason: the measurement that shows the links need it")
        if self.scale_reason is not None and self.scale is None:
            raise ValueError("scale_reason is the reason of a scale; no scale was given")
        return self

    def key_fields(self) -> dict[str, object]:
        """What the work items' keys hash: the fields left unset are not, so the keys of
        campaigns made before a field existed stay as they were."""
        return self.model_dump(exclude={f for f in ("scale", "scale_reason") if getattr(self, f) is None})


class Campaign(_Strict):
    name: str
    description: str | None = None
    labs: list[LabEntry] = Field(min_length=1)
    targets: list[Target] = Field(min_length=1)
    #: rounds per lab and target; each round is one work item running every selected
    #: scenario once (`--reps 1`), so repetitions of one lab interleave with other items
    repetitions: int = Field(default=3, ge=1, le=1000)
    #: extra rounds a lab x target may get when repetitions of its planned rounds were
    #: dropped (a problem of their own: campaign/repvalid.py), until every scenario has
    #: ``repetitions`` valid ones; at most ``repetitions`` (a bound, not a retry loop)
    remeasure: int = Field(default=0, ge=0, le=1000)
    #: Flent's default: the order of work items is shuffled, with a recorded seed
    shuffle: bool = True
    #: the shuffle's seed (default: drawn once and recorded in campaign.json)
    seed: int | None = None
    #: the Ansible inventory (relative to the campaign file); required by ansible targets
    inventory: str | None = None
    run: RunSettings = Field(default_factory=RunSettings)

    @field_validator("name")
    @classmethod
    def _check_name(cls, v: str) -> str:
        return _name(v)

    @model_validator(mode="after")
    def _consistent(self) -> Campaign:
        names = [t.name for t in self.targets]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"target names must be unique: {', '.join(dup)} given twice")
        if any(t.kind == "ansible" for t in self.targets) and not self.inventory:
            raise ValueError("ansible targets need an inventory (inventory: FILE)")
        if self.remeasure > self.repetitions:
            raise ValueError(f"remeasure ({self.remeasure}) is at most repetitions ({self.repetitions})")
        return self


def _where(e: ValidationError) -> tuple[str, str]:
    err = e.errors()[0]
    loc = ".".join(str(x) for x in err["loc"])
    msg = str(err["msg"]).removeprefix("Value error, ")
    return loc, msg


def load_campaign(path: str | Path) -> tuple[Campaign, Path]:
    """The campaign of a YAML file and the directory its relative paths start from."""
    p = Path(path)
    try:
        raw = yaml.safe_load(p.read_text())
    except OSError as e:
        raise LabInputError(str(p), "", f"cannot read: {e.strerror or e}") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else ""
        raise LabInputError(str(p), where, f"not YAML: {getattr(e, 'problem', None) or e}") from None
    if not isinstance(raw, dict):
        raise LabInputError(str(p), "", "a campaign is a mapping (name, labs, targets, ...)")
    try:
        c = Campaign.model_validate(raw)
    except ValidationError as e:
        field, msg = _where(e)
        raise LabInputError(str(p), field, msg) from None
    base = p.resolve().parent
    return c.model_copy(update={"targets": [_checked_debs(str(p), base, i, t) for i, t in enumerate(c.targets)]}), base


def _checked_debs(campaign_file: str, base: Path, index: int, t: Target) -> Target:
    """A qemu target with its packages directory made absolute (relative to the campaign
    file), after images/kernel/debs.sh has found its kernel image there."""
    if t.kind != "qemu" or t.debs is None:
        return t
    d = (base / t.debs).resolve()
    try:
        read_packages(d)
    except BadPackages as e:
        raise LabInputError(campaign_file, f"targets.{index}.debs", str(e)) from None
    return t.model_copy(update={"debs": str(d)})


def resolve_lab_dir(entry: LabEntry, base: Path) -> Path:
    """A lab entry's directory: relative to the campaign file, else the working directory,
    else labs/<name> (as `mptcplab run` accepts a bare name)."""
    for cand in (base / entry.lab, Path(entry.lab), Path("labs") / entry.lab):
        if (cand / "experiment.yml").is_file():
            return cand.resolve()
    return Path(entry.lab)  # load_lab says "no such lab directory" in one line
