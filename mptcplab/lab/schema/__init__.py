"""Schemas of the three lab files: topology.clab.yml, experiment.yml, published.yml.

The topology is a real containerlab file; we validate the subset the engine uses
and let containerlab's own fields through. experiment.yml says what containerlab
cannot (impairments, addressing, MPTCP, traffic, capture, scenarios) and is strict:
an unknown key is an error, because a typo in a lab file must not pass silently.

One module per part of the files; this package's face names every model, so code
imports ``from mptcplab.lab.schema import ...`` without knowing which module holds it:

- base.py: the strict base model, field types, the tools' limits;
- topology.py: topology.clab.yml;
- links.py: a link's impairments; middleboxes.py; nodes.py: a node, its MPTCP, addressing;
- flowbase.py: what every flow kind has; flows.py: traffic, the union of the kinds' schema
  classes (each in its kind's module, mptcplab/traffic/registry.py lists them);
- experiment.py: experiment.yml as a whole;
- published.py: published.yml.
"""

from .experiment import Calibration, CapturePoint, Experiment, ExperimentBody, Probes, Quick, Scenario, Subset, Sweep
from .flows import Flow, TimelineZero, Traffic
from .links import SHAPE_FIELDS, Direction, DirectionSpec, LinkSpec
from .middleboxes import (
    REWRITING_KINDS,
    BlockTcp,
    CoalesceSegments,
    DropAddAddr,
    DropMpCapableSyn,
    DropMpJoin,
    Middlebox,
    ModifyPayload,
    Nat,
    RewriteIsn,
    SplitSegments,
    StrictFirewall,
    StripMptcpData,
    StripMptcpMid,
    StripMptcpSyn,
    StripMptcpSynAck,
    StripMptcpSynOnly,
    StripMptcpThirdAck,
)
from .nodes import Addressing, BalanceRr, MptcpEndpoint, MptcpLimits, MptcpNode, NodeSpec
from .published import (
    CaptureFact,
    Check,
    Expectation,
    Finding,
    MetricName,
    Operand,
    Published,
    PublishedSource,
    PublishedValue,
    Requires,
    Selected,
    Window,
)
from .topology import ClabLink, ClabNode, ClabTopology, ClabTopologyBody

__all__ = [
    "ClabLink",
    "ClabNode",
    "ClabTopology",
    "ClabTopologyBody",
    "SHAPE_FIELDS",
    "Direction",
    "DirectionSpec",
    "LinkSpec",
    "REWRITING_KINDS",
    "BlockTcp",
    "CoalesceSegments",
    "DropAddAddr",
    "DropMpCapableSyn",
    "DropMpJoin",
    "Middlebox",
    "ModifyPayload",
    "Nat",
    "RewriteIsn",
    "SplitSegments",
    "StrictFirewall",
    "StripMptcpData",
    "StripMptcpMid",
    "StripMptcpSyn",
    "StripMptcpSynAck",
    "StripMptcpSynOnly",
    "StripMptcpThirdAck",
    "Addressing",
    "BalanceRr",
    "MptcpEndpoint",
    "MptcpLimits",
    "MptcpNode",
    "NodeSpec",
    "Flow",
    "TimelineZero",
    "Traffic",
    "Calibration",
    "CapturePoint",
    "Experiment",
    "ExperimentBody",
    "Probes",
    "Quick",
    "Scenario",
    "Subset",
    "Sweep",
    "CaptureFact",
    "Check",
    "Expectation",
    "Finding",
    "MetricName",
    "Operand",
    "Published",
    "PublishedSource",
    "PublishedValue",
    "Requires",
    "Selected",
    "Window",
]
