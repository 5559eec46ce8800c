"""Where the core finds the plug-ins: the registries of the traffic kinds, their result
models, the probes and the controllers, loaded by module name.

The lab schema and the record model are built from these registries (a flow's schema class
by its ``kind``, a probe's field of ``probes:``, a kind's numbers in rep.json), while every
plug-in builds on the lab schema's base classes, the network and the analysis: each plug-in
package sits above the core it extends. So the core never imports a plug-in package by name
in its code; it asks here, when its models are built, and sees the plug-ins through their
base classes (FlowBase, FlowOutcome, the probe's ``Setting``, Controller). Entry points would
do the same for plug-ins outside this package; none exist yet, so a name table is enough.
docs/architecture.md, "Plug-ins".
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType
from typing import Literal

Registry = Literal["traffic", "traffic results", "traffic metrics", "probes", "controllers"]

#: each registry's module: the one place that lists its plug-ins
REGISTRIES: dict[Registry, str] = {
    "traffic": "mptcplab.traffic.registry",
    "traffic results": "mptcplab.traffic.results",
    "traffic metrics": "mptcplab.traffic.kind_metrics",
    "probes": "mptcplab.probes.registry",
    "controllers": "mptcplab.controllers",
}


def registry(name: Registry) -> ModuleType:
    """The registry module (imported on first use; Python keeps it after that)."""
    return import_module(REGISTRIES[name])
