"""Controllers: project modules run during the traffic that read live subflow data
and act through the timeline's typed actions (base.py: the interface). A lab names
one by its module: ``controllers: [{name: backup_slowest, node: client, ...}]``
loads mptcplab/controllers/backup_slowest.py, whose ``CONTROLLER`` is the class.
A module whose name starts with ``_`` is a helper of controllers, not one."""

from __future__ import annotations

import importlib
import pkgutil

from .base import Controller, View

__all__ = ["Controller", "ControllerNotFound", "View", "available", "controller_class"]


class ControllerNotFound(LookupError):
    pass


def available() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(__path__)
                  if m.name not in ("base", "runner") and not m.name.startswith("_"))


def controller_class(name: str) -> type[Controller]:
    if name not in available():
        raise ControllerNotFound(f"no controller {name!r} (mptcplab/controllers/ has: {', '.join(available())})")
    mod = importlib.import_module(f"{__name__}.{name}")
    cls = getattr(mod, "CONTROLLER", None)
    if not (isinstance(cls, type) and issubclass(cls, Controller)):
        raise ControllerNotFound(f"mptcplab/controllers/{name}.py defines no CONTROLLER (a Controller subclass)")
    return cls
