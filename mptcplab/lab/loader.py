"""Loading a lab directory: parse, validate, expand scenarios, check references.

Every problem becomes a LabInputError naming the file, the field path and the
problem, in one line; nothing is created before a lab has fully validated.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from ..errors import LabInputError
from ..values.fields import is_endpoint_ref
from .eventcheck import check_controllers, check_events, check_listeners
from .metriccheck import check_metrics
from .model import Lab, ScenarioRun
from .schema import ClabTopology, Experiment, ExperimentBody, Published
from .schema.flows import FLOW_KINDS
from .selection import is_pattern, matching

TOPOLOGY = "topology.clab.yml"
EXPERIMENT = "experiment.yml"
PUBLISHED = "published.yml"
LAB_FILES = (TOPOLOGY, EXPERIMENT, PUBLISHED)


_TYPE_TAGS = {"str", "int", "float", "bool", "list", "dict"}


def _loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _first_error(e: ValidationError) -> tuple[str, str]:
    err = e.errors()[0]
    # drop pydantic's union-member tags ("str", "int", "function-after[...]") from the path
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and (p in _TYPE_TAGS or "[" in p)))
    # and the flow kind's tag (traffic.flows.<name>.<kind>.field): the lab file has no such level
    loc = tuple(p for i, p in enumerate(loc) if not (i >= 2 and loc[i - 2] == "flows" and p in FLOW_KINDS))
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        msg = "unknown field"
    elif err["type"] == "missing":
        msg = "required field missing"
    elif err["type"] == "literal_error":
        msg = msg.replace("Input should be", "must be")
    return _loc(loc), msg


#: lab files are a few KiB; anything this large is a mistake or an attack on the parser
MAX_FILE_BYTES = 1 << 20
#: nesting deeper than any lab needs; PyYAML composes recursively and would overflow the stack
MAX_DEPTH = 64
#: expanded scenarios (override x sweep product) one lab may define
MAX_SCENARIOS = 1000


class _LabYamlError(Exception):
    def __init__(self, line: int | None, problem: str) -> None:
        super().__init__(problem)
        self.line = line
        self.problem = problem


#: libyaml when PyYAML has it: the pure-Python parser takes ~0.1 s per lab file
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _screen(text: str) -> None:
    """Refuse what a lab file never needs and an attacker would use, from the event
    stream, before anything is built: anchors and aliases (a "billion laughs" document
    expands exponentially in memory and in validation), nesting deeper than MAX_DEPTH,
    and duplicate mapping keys (which YAML would otherwise resolve to the last one)."""
    # per open collection: its keys seen (None for a sequence) and whether the next node is a key
    stack: list[tuple[set[str] | None, list[bool]]] = []
    for ev in yaml.parse(text, Loader=_Loader):
        line = ev.start_mark.line + 1 if ev.start_mark else None
        if isinstance(ev, yaml.AliasEvent):
            raise _LabYamlError(line, "YAML aliases (*name) are not allowed in lab files")
        if isinstance(ev, (yaml.ScalarEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            if ev.anchor is not None:
                raise _LabYamlError(line, "YAML anchors (&name) are not allowed in lab files")
            keys = stack[-1][0] if stack else None
            if keys is not None:
                is_key = stack[-1][1]
                if is_key[0] and isinstance(ev, yaml.ScalarEvent):
                    if ev.value in keys:
                        raise _LabYamlError(line, f"duplicate key {ev.value!r}")
                    keys.add(ev.value)
                is_key[0] = not is_key[0]
            if isinstance(ev, yaml.MappingStartEvent):
                stack.append((set(), [True]))
            elif isinstance(ev, yaml.SequenceStartEvent):
                stack.append((None, [False]))
            if len(stack) > MAX_DEPTH:
                raise _LabYamlError(line, f"nested deeper than {MAX_DEPTH} levels")
        elif isinstance(ev, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            stack.pop()


def read_yaml(path: Path) -> Any:
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise LabInputError(str(path), "", f"file is {size} bytes; lab files are limited to {MAX_FILE_BYTES}")
        raw = path.read_bytes()
    except FileNotFoundError:
        raise LabInputError(str(path), "", "file not found") from None
    except OSError as e:
        raise LabInputError(str(path), "", f"cannot read: {e.strerror or e}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise LabInputError(str(path), "", f"not UTF-8 text (byte {e.start})") from None
    try:
        _screen(text)
        data = yaml.load(text, Loader=_Loader)  # noqa: S506 - a safe loader (C or Python)
    except _LabYamlError as e:
        raise LabInputError(str(path), f"line {e.line}" if e.line else "", e.problem) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise LabInputError(str(path), where, f"invalid YAML: {problem}") from None
    except RecursionError:
        raise LabInputError(str(path), "", f"nested deeper than {MAX_DEPTH} levels") from None
    if not isinstance(data, dict):
        raise LabInputError(str(path), "", "expected a mapping at the top level")
    return data


def _validate(model: type[BaseModel], data: Any, file: Path, prefix: str = "") -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as e:
        field, msg = _first_error(e)
        raise LabInputError(str(file), prefix + field if field else prefix.rstrip("."), msg) from None


def deep_merge(base: Any, override: Any) -> Any:
    """Mappings merge key by key; anything else in the override replaces the base."""
    if isinstance(base, dict) and isinstance(override, dict):
        out = dict(base)
        for k, v in override.items():
            out[k] = deep_merge(base[k], v) if k in base else copy.deepcopy(v)
        return out
    return copy.deepcopy(override)


SCENARIO_NAME = re.compile(r"[a-z0-9][a-zA-Z0-9_.-]{0,80}")


def _set_path(data: dict[str, Any], path: list[str], value: Any) -> None:
    cur: Any = data
    for key in path[:-1]:
        # every step but the last must already exist: a typo must not create a new branch
        if not isinstance(cur, dict) or not isinstance(cur.get(key), dict):
            raise KeyError(key)
        cur = cur[key]
    if not isinstance(cur, dict):
        raise KeyError(path[-1])
    cur[path[-1]] = value


def expand_scenarios(raw: dict[str, Any], exp: Experiment, topo: ClabTopology, file: Path) -> tuple[ScenarioRun, ...]:
    # scenarios, the run-wide scale and the named subsets are not part of a scenario's body
    base = {k: v for k, v in raw.items() if k not in ("scenarios", "scale", "scale_reason", "subsets")}
    runs: list[ScenarioRun] = []
    names: set[str] = set()
    for i, sc in enumerate(exp.scenarios):
        count = 1
        for s in sc.sweep:
            count *= len(s.values)
        if count + len(runs) > MAX_SCENARIOS:
            raise LabInputError(str(file), f"scenarios[{i}].sweep", f"expands to {count + len(runs)} scenarios in all; "
                                f"a lab may define at most {MAX_SCENARIOS}")
        merged = deep_merge(base, sc.override)
        axes = [list(zip(s.values, s.labels or [str(v) for v in s.values], strict=True)) for s in sc.sweep]
        points = list(itertools.product(*axes)) if sc.sweep else [()]
        for point_vals in points:
            values = [v for v, _ in point_vals]
            data = copy.deepcopy(merged)
            point: dict[str, Any] = {}
            for sw, val in zip(sc.sweep, values, strict=True):
                try:
                    _set_path(data, sw.path, val)
                except KeyError:
                    raise LabInputError(str(file), f"scenarios[{i}].sweep.path",
                                        f"{'.'.join(sw.path)} does not lead to a field") from None
                point[".".join(sw.path)] = val
            name = sc.name + "".join(f"-{label}" for _, label in point_vals)
            if not SCENARIO_NAME.fullmatch(name):
                raise LabInputError(str(file), f"scenarios[{i}].sweep", f"scenario name {name!r} is not a valid name "
                                    "(letters, digits, . _ -): give the sweep `labels`")
            if name in names:
                raise LabInputError(str(file), f"scenarios[{i}].name", f"scenario {name!r} defined twice")
            names.add(name)
            body = _validate(ExperimentBody, data, file, prefix=f"scenarios[{i}] ({name}): ")
            check_references(body, topo, file, prefix=f"scenarios[{i}] ({name}): ")
            # named at the top level unless this scenario's override or sweep emptied it
            _check_capture(body, file, "" if not base.get("capture") else f"scenarios[{i}] ({name}): ")
            runs.append(ScenarioRun(name, sc.description, body, point))
    return tuple(runs)


def _check_capture(body: ExperimentBody, file: Path, prefix: str) -> None:
    """Every scenario captures somewhere: MPTCP is proven from the capture (probes/tcpdump.py),
    so a run without one could not say whether it measured MPTCP at all."""
    if not body.capture:
        raise LabInputError(str(file), prefix + "capture",
                            "no capture point: a run is analyzed from its capture (MPTCP is proven there); "
                            "give at least one, e.g. [{point: client:eth1}]")


def endpoints_of(topo: ClabTopology) -> set[str]:
    return {ep for link in topo.topology.links for ep in link.endpoints}


def check_references(body: ExperimentBody, topo: ClabTopology, file: Path, prefix: str = "") -> None:
    """Every name in experiment.yml must exist in the topology, and be consistent."""

    def fail(field: str, problem: str) -> None:
        raise LabInputError(str(file), prefix + field, problem)

    nodes = set(topo.topology.nodes)
    eps = endpoints_of(topo)
    for n in nodes - set(body.nodes):
        fail(f"nodes.{n}", "node of the topology has no entry (give it a role: host or router)")
    for n in set(body.nodes) - nodes:
        fail(f"nodes.{n}", "no such node in topology.clab.yml")
    for ep in body.links:
        if ep not in eps:
            fail(f"links.{ep}", "no link of topology.clab.yml has this endpoint")
    seen_links: dict[int, str] = {}
    for ep in body.links:
        idx = next(i for i, link in enumerate(topo.topology.links) if ep in link.endpoints)
        if idx in seen_links:
            fail(f"links.{ep}", f"same link as links.{seen_links[idx]}")
        seen_links[idx] = ep
    for fam, given in (("addresses", body.addressing.addresses), ("addresses6", body.addressing.addresses6)):
        for ep in given:
            if ep not in eps:
                fail(f"addressing.{fam}.{ep}", "no link of topology.clab.yml has this endpoint")
    path_of: dict[str, str] = {}
    for label, ep in body.paths.items():
        if ep not in eps:
            fail(f"paths.{label}", f"{ep!r} is not an endpoint of topology.clab.yml")
        if ep in path_of:
            fail(f"paths.{label}", f"{ep} is already path {path_of[ep]}")
        path_of[ep] = label
    for name, node in body.nodes.items():
        if node.mptcp:
            addrs: dict[str, int] = {}
            ids: dict[int, int] = {}
            for j, e in enumerate(node.mptcp.endpoints):
                if is_endpoint_ref(e.address) and (e.address not in eps or not e.address.startswith(name + ":")):
                    fail(f"nodes.{name}.mptcp.endpoints[{j}].address", f"{e.address!r} is not an interface of {name}")
                key = e.address if e.port is None else f"{e.address} port {e.port}"
                if key in addrs:
                    fail(f"nodes.{name}.mptcp.endpoints[{j}].address",
                         f"{key} already in endpoints[{addrs[key]}]")
                addrs[key] = j
                if e.id is not None:
                    if e.id in ids:
                        fail(f"nodes.{name}.mptcp.endpoints[{j}].id",
                             f"id {e.id} already used by endpoints[{ids[e.id]}]")
                    ids[e.id] = j
        rr = node.balance_rr
        if rr is not None:
            for iface in rr.via:
                if f"{name}:{iface}" not in eps:
                    fail(f"nodes.{name}.balance_rr.via", f"{iface!r} is not an interface of {name}")
            if is_endpoint_ref(rr.to) and (rr.to not in eps or rr.to.startswith(name + ":")):
                fail(f"nodes.{name}.balance_rr.to", f"{rr.to!r} is not an interface of another node")
    for fname, flow in body.traffic.flows.items():
        for role in ("client", "server"):
            n = getattr(flow, role)
            if n not in body.nodes:
                fail(f"traffic.flows.{fname}.{role}", f"no such node {n!r}")
            elif body.nodes[n].role != "host":
                fail(f"traffic.flows.{fname}.{role}", f"{n!r} is a router; traffic runs between hosts")
        if flow.client == flow.server:
            fail(f"traffic.flows.{fname}.server", f"{flow.server!r} is also the client; a flow runs between two hosts")
        for field in ("server_address", *flow.server_addresses):
            ref = getattr(flow, field)
            if ref is not None and is_endpoint_ref(ref) and (ref not in eps or not ref.startswith(flow.server + ":")):
                fail(f"traffic.flows.{fname}.{field}", f"{ref!r} is not an interface of {flow.server}")
        if flow.bind and (flow.bind not in eps or not flow.bind.startswith(flow.client + ":")):
            fail(f"traffic.flows.{fname}.bind", f"{flow.bind!r} is not an interface of {flow.client}")
    measured = [f for f in body.traffic.flows.values() if f.role == "measured"]
    if not measured:
        fail("traffic.flows", "at least one flow must have role 'measured' (each is analyzed on its own)")
    ports = [(f.server, f.port) for f in body.traffic.flows.values()]
    if len(set(ports)) != len(ports):
        fail("traffic.flows", "two flows use the same server and port")
    check_events(body, eps, fail)
    check_controllers(body, fail, eps)
    check_listeners(body, fail)
    points: dict[str, int] = {}
    for k, cp in enumerate(body.capture):
        if cp.point not in eps:
            fail(f"capture[{k}].point", f"{cp.point!r} is not an endpoint of topology.clab.yml")
        if cp.point in points:
            fail(f"capture[{k}].point", f"{cp.point} is already captured by capture[{points[cp.point]}]")
        points[cp.point] = k


def _check_topology(topo: ClabTopology, file: Path) -> None:
    seen: dict[str, int] = {}
    for i, link in enumerate(topo.topology.links):
        a, b = link.endpoints
        if a.split(":")[0] == b.split(":")[0]:
            raise LabInputError(str(file), f"topology.links[{i}].endpoints", "a link must join two different nodes")
        for ep in link.endpoints:
            node = ep.split(":")[0]
            if node not in topo.topology.nodes:
                raise LabInputError(str(file), f"topology.links[{i}].endpoints", f"node {node!r} is not defined")
            if ep in seen:
                raise LabInputError(str(file), f"topology.links[{i}].endpoints",
                                    f"{ep} already used by links[{seen[ep]}]")
            seen[ep] = i


def _check_subsets(exp: Experiment, names: list[str], file: Path) -> None:
    """Every scenario name or pattern of a subset selects at least one expanded scenario."""
    for sub_name, sub in exp.subsets.items():
        for j, wanted in enumerate(sub.scenarios):
            if not matching(names, wanted):
                raise LabInputError(str(file), f"subsets.{sub_name}.scenarios[{j}]",
                                    f"no scenario {'matches' if is_pattern(wanted) else 'is named'} {wanted!r}")


def _check_published(pub: Published, names: set[str], file: Path, flows: set[str] | None = None) -> None:
    # findings and setup checks share one id space: a report row names either
    groups: list[list[tuple[str, str, str | None]]] = [
        [(f"values[{i}]", v.id, v.scenario) for i, v in enumerate(pub.values)],
        [(where, f.id, f.scenario) for where, f in pub.located_findings()],
    ]
    if flows is not None:
        _check_published_flows(pub, flows, file)
    for items in groups:
        ids: set[str] = set()
        for where, item_id, scenario in items:
            if item_id in ids:
                raise LabInputError(str(file), f"{where}.id", f"duplicate id {item_id!r}")
            ids.add(item_id)
            if scenario is not None and scenario not in names:
                raise LabInputError(str(file), f"{where}.scenario", f"no scenario {scenario!r} in experiment.yml")


def _check_published_flows(pub: Published, flows: set[str], file: Path) -> None:
    """A finding or value naming a flow names one of experiment.yml's (in some scenario)."""
    def bad(flow: str | None) -> bool:
        return flow is not None and flow not in flows

    for i, v in enumerate(pub.values):
        if bad(v.flow):
            raise LabInputError(str(file), f"values[{i}].flow", f"no flow {v.flow!r} in experiment.yml")
    for at, f in pub.located_findings():
        for place, e in f.located():
            for use in e.flow_uses():  # each kind says which flows it names (mptcplab/checks/)
                if bad(use.flow):
                    raise LabInputError(str(file), f"{at}.{place}{use.field}",
                                        f"no flow {use.flow!r} in experiment.yml")


def unsupported(lab: Lab) -> None:
    """Fields the schema accepts for coming labs but this engine does not run yet:
    refuse them rather than run a lab without what it asked for. This version runs every
    field it accepts (probes.ss_interval was the last one), so it refuses nothing; the
    check stays where run, check and the dry run call it, for the next such field."""
    del lab


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_lab(path: str | Path) -> Lab:
    lab_dir = Path(path)
    if not lab_dir.is_dir():
        # accept a bare lab name too: labs/<name>
        alt = Path("labs") / str(path)
        if alt.is_dir():
            lab_dir = alt
        else:
            raise LabInputError(str(path), "", "no such lab directory")
    tfile, efile, pfile = (lab_dir / f for f in LAB_FILES)
    topo: ClabTopology = _validate(ClabTopology, read_yaml(tfile), tfile)
    _check_topology(topo, tfile)
    raw = read_yaml(efile)
    exp: Experiment = _validate(Experiment, raw, efile)
    check_references(exp, topo, efile)
    scenarios = expand_scenarios(raw, exp, topo, efile)
    _check_subsets(exp, [s.name for s in scenarios], efile)
    from .limits import check_network
    from .network import build_network

    # addressing and link-shape problems surface now, before anything is created: those of
    # the experiment itself without a scenario's name, then what an override or sweep changed
    check_network(build_network(topo, exp, str(efile)), exp, str(efile))
    for sc in scenarios:
        try:
            check_network(build_network(topo, sc.body, str(efile)), sc.body, str(efile))
        except LabInputError as e:
            raise LabInputError(str(efile), e.field, e.problem + f" (scenario {sc.name})") from None
    published: Published | None = None
    if pfile.exists():
        published = _validate(Published, read_yaml(pfile), pfile)
        check_metrics(published, pfile)
        _check_published(published, {s.name for s in scenarios}, pfile,
                         {f for s in scenarios for f in s.body.traffic.flows})
    hashes = {f: sha256(lab_dir / f) for f in LAB_FILES if (lab_dir / f).exists()}
    lab = Lab(topo.name, lab_dir, topo, exp, published, scenarios, hashes)
    if exp.scale is not None and exp.scale != 1:
        from .scale import apply_scale

        lab = apply_scale(lab, exp.scale, "lab")  # the lab's own factor; `run --scale` replaces it
    return lab
