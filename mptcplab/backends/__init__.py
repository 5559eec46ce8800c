"""The backend registry: where a lab's nodes run.

``get("netns")`` gives the backend class; ``status()`` says, per backend, whether
this host can use it, and which link emulators and capabilities it has;
``resolve("auto")`` picks one, ``default()`` is the one every host can use. Nothing
outside this package constructs a backend by its class. A new backend is a subclass of backends.base.Backend
plus one line in ``_REGISTRY``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import HostNotReady

if TYPE_CHECKING:
    from .base import Backend

#: name -> "module:class", imported on first use (containerlab pulls in yaml and docker logic)
_REGISTRY: dict[str, str] = {
    "netns": "mptcplab.backends.netns:NetnsBackend",
    "containerlab": "mptcplab.backends.containerlab:ContainerlabBackend",
}
#: what each one is, for the command line's help (without importing it)
DESCRIPTIONS: dict[str, str] = {
    "netns": "network namespaces",
    "containerlab": "containers deployed by containerlab",
}
#: what "auto" tries, in order: containers where they can deploy, else namespaces
AUTO_ORDER = ("containerlab", "netns")


def names() -> tuple[str, ...]:
    return tuple(_REGISTRY)


def get(name: str) -> type[Backend]:
    try:
        module, cls = _REGISTRY[name].split(":")
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; use one of {', '.join(_REGISTRY)}") from None
    backend: type[Backend] = getattr(importlib.import_module(module), cls)
    return backend


@dataclass(frozen=True)
class Status:
    name: str
    available: bool
    why: str
    emulators: tuple[str, ...]
    capabilities: frozenset[str]


def status() -> list[Status]:
    out = []
    for name in _REGISTRY:
        cls = get(name)
        ok, why = cls.available()
        out.append(Status(name, ok, why, cls.emulators, cls.capabilities))
    return out


def default() -> type[Backend]:
    """The backend every host can use (auto's last resort): what a run that names none gets
    (steps.base.RunContext) and where the link calibration builds its line."""
    return get(AUTO_ORDER[-1])


def resolve(choice: str, dry_run: bool = False) -> type[Backend]:
    """The backend for ``--backend choice``: "auto" is the first of AUTO_ORDER this host
    can use (netns as the last resort); a named one must be usable unless this is a
    dry run (printing needs nothing)."""
    if choice == "auto":
        for name in AUTO_ORDER[:-1]:
            if get(name).available()[0]:
                return get(name)
        return get(AUTO_ORDER[-1])
    cls = get(choice)
    if not dry_run:
        ok, why = cls.available()
        if not ok:
            raise HostNotReady(f"--backend {choice}: {why} (docs/appliance.md)")
    return cls
