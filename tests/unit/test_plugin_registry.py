"""Traffic kinds and probes are plug-ins (issue 34).

Traffic kinds: the registry (mptcplab/traffic/registry.py, and on the record's side
traffic/results.py) is the one place that lists them, and nothing that dispatches on flows
names one. Each kind's schema class, result model and runner live in its own modules
(traffic/<kind>_schema.py, <kind>_result.py, <kind>.py). The scan reads the package's source
with ast: a string literal equal to a kind's name, or a name of a kind-specific class (its
schema class, its TrafficKind, its result model), outside the kind's own modules is a failure,
except in the modules listed in LEFT below (a module leaves that list, none joins it).

Probes: the registry (mptcplab/probes/registry.py) builds the ``Probes`` schema, preflight's
probe checks and the analysis dispatch, so preflight.py and probes/analysis.py name no probe
(its key, its class or its module), and a probe added to the registry alone is checked and
analyzed."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
import typing
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import pandas as pd
import pytest

from mptcplab.checks.base import CheckKind
from mptcplab.checks.registry import CHECKS
from mptcplab.lab.schema import Probes
from mptcplab.lab.schema.experiment import probes_model
from mptcplab.lab.schema.published import Finding
from mptcplab.probes import registry as probe_registry
from mptcplab.probes.base import Joined, Probe, Setting
from mptcplab.record.model.repetition import FlowResult
from mptcplab.traffic.kinds import KINDS
from mptcplab.traffic.registry import FLOW_CLASSES, FLOW_KINDS
from mptcplab.traffic.results import KindResults

PKG = Path(__file__).resolve().parents[2] / "mptcplab"

#: modules allowed to name every kind: the registry (the lab schema's side) and the record's side
REGISTRY = {"traffic/registry.py", "traffic/results.py"}
#: must name no kind, whatever else moves (the acceptance of issue 34)
NEVER = {"traffic/flowresult.py", "lab/scale.py", "metricdecl.py", "steps/traffic.py", "traffic/base.py"}
#: known leftovers, module -> the kinds it still names (owned by other work or a later step);
#: this may only shrink: a module that no longer names a kind must leave it
LEFT: dict[str, set[str]] = {
    # "iperf3" as the program (version, link checks, calibration), not the kind
    "calibrate.py": {"iperf3"}, "doctor.py": {"iperf3"}, "emulation/testline.py": {"iperf3"},
    "linkcheck.py": {"iperf3"}, "record/manifest.py": {"iperf3"}, "preflight.py": {"iperf3"},
    # the protocol, not the kind (the trace check's iptables rule: -p udp)
    "tracecheck.py": {"udp"},
    # the word, not the kind ("holds" / "hold" in a verdict's text)
    "reproductions/render.py": {"hold"},
    # the latency tool's own name for itself
    "tools/latency/params.py": {"latency"},
    # the default kind of a flow record that names none (the record model is below the lab
    # schema's registry, which says the same)
    "record/model/flow.py": {"iperf3"},
}


def _own(kind: str) -> set[str]:
    """The kind's own modules: traffic/<kind>.py and the helpers only it imports."""
    extra = {"churn": {"traffic/churn_tool.py"}, "transfer": {"traffic/transfer_tool.py", "traffic/transfer_diff.py"},
             "latency": {"traffic/latency.py"}, "iperf3": set(), "udp": set(), "http": set(),
             # the hold client is a subcommand of the churn tool
             "hold": {"traffic/churn_tool.py"}}
    return {f"traffic/{kind}{part}.py" for part in ("", "_schema", "_result", "_metrics")} | extra.get(kind, set())


def _classes(kind: str) -> set[str]:
    schema = next(c for c in FLOW_CLASSES if c.model_fields["kind"].default == kind
                  or kind in str(c.model_fields["kind"].annotation))
    out = {schema.__name__, type(KINDS[kind]).__name__}
    field = KINDS[kind].result_field
    if field is not None:
        ann = FlowResult.model_fields[field].annotation
        out |= {getattr(a, "__name__", "") for a in getattr(ann, "__args__", (ann,)) if a is not type(None)}
    return out


def _mentions(tree: ast.AST, kind: str) -> list[int]:
    names = _classes(kind)
    return sorted({n.lineno for n in ast.walk(tree)
                   if (isinstance(n, ast.Constant) and n.value == kind)
                   or (isinstance(n, ast.Name) and n.id in names)
                   or (isinstance(n, ast.Attribute) and n.attr in names)
                   or (isinstance(n, ast.alias) and n.name.rsplit(".", 1)[-1] in names)})


def _scan() -> dict[str, dict[str, list[int]]]:
    found: dict[str, dict[str, list[int]]] = {}
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        if rel in REGISTRY:
            continue
        tree = ast.parse(path.read_text(), rel)
        for kind in KINDS:
            if rel in _own(kind):
                continue
            lines = _mentions(tree, kind)
            if lines:
                found.setdefault(rel, {})[kind] = lines
    return found


def test_registry_matches_schema_and_result_model() -> None:
    assert tuple(KINDS) == FLOW_KINDS, "the runners and traffic/registry.py's AnyFlow list other kinds"
    for name, kind in KINDS.items():
        assert kind.name == name
        if kind.result_field is not None:
            assert kind.result_field in FlowResult.model_fields, f"{name}: FlowResult has no {kind.result_field}"


def test_each_kind_lives_in_its_own_modules() -> None:
    """A kind's schema class, runner and result model are defined in its own modules, and the
    record's kind fields are exactly the kinds' ``result_field``s."""
    for cls in FLOW_CLASSES:
        name = typing.get_args(cls.model_fields["kind"].annotation)[0]
        assert cls.__module__ == f"mptcplab.traffic.{name}_schema", cls
        assert type(KINDS[name]).__module__ == f"mptcplab.traffic.{name}", name
        field = KINDS[name].result_field
        if field is not None:
            model = typing.get_args(KindResults.model_fields[field].annotation)[0]
            assert model.__module__ == f"mptcplab.traffic.{name}_result", (name, model)
    own = {k.result_field for k in KINDS.values()} - {None}
    assert set(KindResults.model_fields) - set(FlowResult.model_fields) == set()
    kind_fields = {f for f in KindResults.model_fields if f in own}
    assert kind_fields == own, "traffic/results.py's fields are not the kinds' result_field"
    # the lab schema's package face names no kind: it takes them from the registry
    from mptcplab.lab import schema

    assert not {c.__name__ for c in FLOW_CLASSES} & set(schema.__all__)


#: what each entry point must not load: the lab schema no runner, the record model no lab schema
_ENTRIES = {
    "mptcplab.lab.schema": ("mptcplab.traffic.iperf3", "mptcplab.traffic.kinds", "mptcplab.lab.network"),
    "mptcplab.record.model": ("mptcplab.lab.schema", "mptcplab.traffic.registry", "mptcplab.traffic.iperf3"),
    "mptcplab.metricdecl": ("mptcplab.record", "mptcplab.lab"),
    "mptcplab.metrics": ("mptcplab.lab.schema",),
    "mptcplab.traffic.kinds": (),
    "mptcplab.probes.registry": (),
}


@pytest.mark.parametrize("entry", sorted(_ENTRIES))
def test_each_side_imports_alone_without_the_layers_above(entry: str) -> None:
    """The kinds' schema and result modules sit below the lab schema and the record model:
    each entry point loads in a fresh interpreter (no import cycle) without the layers above."""
    code = (f"import sys, {entry}\n"
            f"print(' '.join(m for m in {_ENTRIES[entry]!r} if m in sys.modules))\n"
            "from mptcplab.metricdecl import DECLARED\n"
            "print('latency_p50_ms' in DECLARED)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    loaded, declared = out.stdout.splitlines()
    assert loaded == "", f"importing {entry} loads {loaded}"
    # a kind's metrics are declared by its result module, loaded with the record model
    assert declared == str(entry not in ("mptcplab.metricdecl",)), entry


@pytest.mark.parametrize("module", sorted(NEVER))
def test_dispatch_modules_name_no_kind(module: str) -> None:
    found = _scan().get(module, {})
    assert not found, f"{module} names traffic kinds (line numbers): {found}"


def test_no_kind_named_outside_its_module() -> None:
    found = _scan()
    new = {m: {k: v for k, v in ks.items() if k not in LEFT.get(m, set())} for m, ks in found.items()}
    new = {m: ks for m, ks in new.items() if ks}
    assert not new, f"kinds named outside their module and the registry (module -> kind -> lines): {new}"
    gone = {m: ks - set(found.get(m, {})) for m, ks in LEFT.items()}
    assert not {m: ks for m, ks in gone.items() if ks}, f"LEFT lists what no longer names a kind: {gone}"



def test_kind_metrics_are_computed_in_the_kinds_modules() -> None:
    """A kind's metrics are computed in traffic/<kind>_metrics.py and registered by metrics/
    (metrics/kinds.py, which finds them by name): every one is declared, registered once,
    reads only flows of its kind, and metrics/ imports no plug-in package."""
    from mptcplab import plugins
    from mptcplab.metricdecl import DECLARED, Select
    from mptcplab.metrics import METRICS
    from mptcplab.record.model import Repetition

    kind_metrics = plugins.registry("traffic metrics")
    assert {m.removesuffix("_metrics") for m in kind_metrics.MODULES} <= set(KINDS)
    table = kind_metrics.flow_metrics()
    assert table and set(table) <= set(DECLARED)
    for name in table:
        assert METRICS[name].per_rep.__module__ == "mptcplab.metrics.kinds", name
    # a flow of another kind (a bulk iperf3 flow with goodput) has none of them except its own
    rep = Repetition.model_validate({"name": "s", "rep": 1, "goodput_mbps": 100.0, "flows": [
        {"name": "bulk", "kind": "udp", "goodput_mbps": 100.0, "cpu": {"client": 50.0}}]})
    assert {n: METRICS[n].per_rep(rep, Select()) for n in table} == dict.fromkeys(table)
    rep.flows[0].kind = "iperf3"
    assert METRICS["client_cpu_per_gbit"].per_rep(rep, Select()) == 500.0
    assert METRICS["client_cpu_per_gbit"].per_rep(rep, Select(flow="other")) is None
    for path in (PKG / "metrics").glob("*.py"):
        tree = ast.parse(path.read_text())
        imported = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert not {m for m in imported if "traffic" in m.split(".")}, f"{path.name} imports traffic/"


def test_progress_line_and_headline_are_kind_hooks() -> None:
    """The progress line and the reproductions' table ask the kind (TrafficKind.progress, the
    result model's HEADLINE), so run/lab.py and reproductions/render.py name none."""
    from mptcplab.traffic.results import headline

    report = {"attempted": 20000, "completed": 19998, "rate_per_s": 1227.2}
    lines = {name: k.progress(report) for name, k in KINDS.items() if k.result_field}
    assert lines.pop("churn") == "19,998 of 20,000 connections (1227/s)"
    assert set(lines.values()) == {None}
    assert KINDS["churn"].progress({"attempted": None}) is None
    web = FlowResult.model_validate({"name": "web", "kind": "http", "http": {"requests_per_s": 812.5}})
    assert headline(web) == (812.5, "requests/s")
    assert headline(FlowResult.model_validate({"name": "web", "http": {}})) is None
    assert headline(FlowResult.model_validate({"name": "c", "churn": {"attempted": 3}})) is None


# --- probes -------------------------------------------------------------------------------

#: modules that dispatch over probes and must name none (issue 34)
PROBE_DISPATCH = {"preflight.py", "probes/analysis.py", "lab/schema/experiment.py", "probes/step.py"}


def _probe_mentions(tree: ast.AST) -> dict[str, list[int]]:
    """probe name -> lines naming it: its key as a string, its class, or an import of its module."""
    out: dict[str, list[int]] = {}
    for name, cls in probe_registry.REGISTRY.items():
        module = cls.__module__.rsplit(".", 1)[-1]
        lines = sorted({n.lineno for n in ast.walk(tree)
                        if (isinstance(n, ast.Constant) and n.value == name)
                        or (isinstance(n, ast.Name) and n.id == cls.__name__)
                        or (isinstance(n, ast.Attribute) and n.attr in (cls.__name__, name))
                        or (isinstance(n, ast.alias) and n.name.rsplit(".", 1)[-1] in (cls.__name__, module))
                        or (isinstance(n, ast.ImportFrom) and (n.module or "").rsplit(".", 1)[-1] == module)})
        if lines:
            out[name] = lines
    return out


def test_probe_registry_matches_the_probes_schema() -> None:
    reg = probe_registry.REGISTRY
    assert list(Probes.model_fields) == list(reg), "the Probes schema's fields are not the registry's probes"
    assert probe_registry.names() == tuple(reg)
    for name, cls in reg.items():
        assert cls.name == name
        field = Probes.model_fields[name]
        assert field.default == cls.setting.default
        assert field.description == cls.setting.description and cls.setting.description, name
        assert cls.setting.default in (None, False), f"{name}: a lab that says nothing turns it on"
        for tp in cls.tracepoints:
            assert tp.count("/") == 1, f"{name}: tracepoint {tp!r} is not group/event"
    body = SimpleNamespace(probes=Probes())
    assert probe_registry.enabled(body) == []  # type: ignore[arg-type]


@pytest.mark.parametrize("module", sorted(PROBE_DISPATCH))
def test_probe_dispatch_modules_name_no_probe(module: str) -> None:
    tree = ast.parse((PKG / module).read_text(), module)
    found = _probe_mentions(tree)
    assert not found, f"{module} names probes (line numbers): {found}; declare it on the probe instead"


def test_a_repetition_runs_the_registry_probes_in_order() -> None:
    """The mandatory probes come from the registry too: the capture first, host CPU last, the
    lab's choices between them; a dry run's tcp_probe shows its fixed token."""
    on = Probes.model_validate({"tcp_probe": True, "nstat": True})
    body: Any = SimpleNamespace(probes=on)
    order = probe_registry.for_repetition(body)
    assert order[0].__module__.endswith(".tcpdump") and order[-1].__module__.endswith(".hostcpu")
    assert [c.name for c in order[1:-1]] == ["tcp_probe", "nstat"]
    assert probe_registry.for_repetition(SimpleNamespace(probes=Probes())) == [  # type: ignore[arg-type]
        *probe_registry.MANDATORY_FIRST, *probe_registry.MANDATORY_LAST]
    tcp = probe_registry.REGISTRY["tcp_probe"]
    dry, real = tcp.for_run(dry_run=True), tcp.for_run(dry_run=False)
    assert dry.token == "00000001" and real.token != dry.token  # type: ignore[attr-defined]
    for cls in order:
        assert type(cls.for_run(dry_run=True)) is cls


def test_the_scan_sees_a_probe_named() -> None:
    # the scan itself: each way of naming a probe is caught
    src = ('from .probes.nstat import blackholes\nfrom .probes.tcp_probe import TcpProbe\n'
           'x = "mptcp_monitor"\ny = body.probes.ss_interval\n')
    assert set(_probe_mentions(ast.parse(src))) == {"nstat", "tcp_probe", "mptcp_monitor", "ss_interval"}


class _Fake(Probe):
    """A probe as a newcomer adds it: one class, one registry entry, nothing else."""

    name = "fake"
    setting = Setting(bool, False, "a probe made up for the test")
    tools: ClassVar[dict[str, str]] = {"fakestat": "fake-tools"}
    tracepoints = ("fake/event",)

    def commands(self, rep: Any) -> list[Any]:
        return []

    def start(self, rep: Any) -> None: ...

    def stop(self, rep: Any) -> None: ...

    def artifacts(self) -> list[str]:
        return []

    @classmethod
    def analyze(cls, rep_dir: Path) -> pd.DataFrame:
        return pd.DataFrame({"n": [1, 2]})

    @classmethod
    def summarise(cls, table: pd.DataFrame, joined: Joined) -> tuple[Any, list[str]]:
        return {"rows": len(table)}, ["fake: a warning"]


def test_a_probe_in_the_registry_alone_is_schema_preflight_and_analysis(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from mptcplab import preflight
    from mptcplab.probes.analysis import analyze_probes

    reg: dict[str, type[Probe]] = {**probe_registry.REGISTRY, _Fake.name: _Fake}
    model = probes_model(reg)
    assert model.model_fields["fake"].description == "a probe made up for the test"
    on = model.model_validate({"fake": True})
    monkeypatch.setattr(probe_registry, "REGISTRY", reg)
    body: Any = SimpleNamespace(probes=on)
    assert probe_registry.enabled(body) == [_Fake]

    facts = preflight.HostFacts(euid=0, congestion_controls=None, schedulers=None, sysctls=None,
                                tools=frozenset(), tracepoints=frozenset())
    msgs = [str(p) for p in preflight._probe_problems([SimpleNamespace(body=body)], facts)]  # type: ignore[list-item]
    assert msgs == ["fakestat not found on PATH (apt-get install fake-tools); probes.fake needs it",
                    "this kernel has no tracepoint fake:event, which probes.fake reads"]

    (tmp_path / "probes").mkdir()
    summary, warnings = analyze_probes(tmp_path, body, fa=SimpleNamespace(), upload=True)  # type: ignore[arg-type]
    assert summary == {"fake": {"rows": 2}} and warnings == ["fake: a warning"]
    assert (tmp_path / "probes" / "fake.csv").read_text().splitlines() == ["n", "1", "2"]


# -- finding checks

#: the checks' registry: the one module that names every kind
CHECK_REGISTRY = "checks/registry.py"
#: the lab schema's face: it re-exports the kinds' classes (tests and labs' tools import them from
#: there) and may name them in its imports only, never use them
CHECK_FACES = {"lab/schema/__init__.py", "lab/schema/published.py"}


def _check_names() -> dict[str, set[str]]:
    """Each kind's module -> the class names it owns: its kind and the models defined beside it
    (the metric comparison's Operand)."""
    out: dict[str, set[str]] = {}
    for cls in CHECKS:
        path = Path(inspect.getfile(cls))
        owned = {n.name for n in ast.parse(path.read_text()).body if isinstance(n, ast.ClassDef)}
        out[path.relative_to(PKG).as_posix()] = owned
    return out


def _check_uses(tree: ast.AST, names: set[str], face: bool) -> list[int]:
    """The lines naming one of ``names``; a ``face`` may import them (to re-export), not use them."""
    return sorted({n.lineno for n in ast.walk(tree)
                   if (isinstance(n, ast.Name) and n.id in names)
                   or (isinstance(n, ast.Attribute) and n.attr in names)
                   or (not face and isinstance(n, ast.alias) and n.name.rsplit(".", 1)[-1] in names)})


def _check_scan() -> dict[str, list[int]]:
    owners = _check_names()
    found: dict[str, list[int]] = {}
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        if rel == CHECK_REGISTRY:
            continue
        names = set().union(*(owned for mod, owned in owners.items() if mod != rel))
        lines = _check_uses(ast.parse(path.read_text(), rel), names, rel in CHECK_FACES)
        if lines:
            found[rel] = lines
    return found


def test_check_registry_builds_the_expect_union() -> None:
    assert CHECKS, "no check kind registered"
    assert len({c.__name__ for c in CHECKS}) == len(CHECKS)
    for cls in CHECKS:
        assert issubclass(cls, CheckKind), f"{cls.__name__} is not a CheckKind"
        assert {"scenario", "source"} <= set(cls.model_fields), f"{cls.__name__}: every check has scenario, source"
        assert not getattr(cls, "__abstractmethods__", None), f"{cls.__name__} leaves {cls.__abstractmethods__} open"
    # published.yml's expect accepts exactly the registered kinds, in the registry's order
    # Check | list[Check] | None flattens to the kinds, list[Check] and None
    members: tuple[Any, ...] = typing.get_args(Finding.model_fields["expect"].annotation)
    kinds = tuple(a for a in members if a is not type(None) and typing.get_origin(a) is not list)
    listed = next(a for a in members if typing.get_origin(a) is list)
    assert kinds == CHECKS and typing.get_args(typing.get_args(listed)[0]) == CHECKS


def test_check_kinds_dispatch_through_the_registry() -> None:
    """An item of ``expect`` becomes its kind; each kind answers the lab's questions itself."""
    f = Finding.model_validate({"id": "x", "scenario": "a", "statement": "s", "where": "w", "expect": [
        {"metric": "goodput_mbps", "op": ">", "than": {"scenario": "b", "flow": "f2"}, "flow": "f1"},
        {"fact": "established", "path": "A", "equals": True, "scenario": "c"},
        {"counter": "MPTcpExtRmAddr", "node": "server", "op": "==", "value": 1}]})
    metric, fact, counter = f.expectations
    assert [type(e) for e in f.expectations] == list(CHECKS)
    assert metric.scenarios("a") == ["a", "b"] and fact.scenarios("a") == ["c"]
    assert f.scenarios_referenced() == ["a", "b", "c"]
    assert [(u.field, u.flow) for u in metric.flow_uses()] == [(".flow", "f1"), (".than.flow", "f2")]
    assert fact.flow_uses() == [] and fact.metric_uses() == []
    assert counter.scenarios("a") == ["a"] and counter.metric_uses() == [] and counter.flow_uses() == []
    assert [(u.field, u.counter, u.node) for u in counter.counter_uses()] == [(".counter", "MPTcpExtRmAddr", "server")]
    assert [u.field for u in metric.metric_uses()] == [".metric", "", ""]


def test_no_check_class_named_outside_its_module() -> None:
    found = _check_scan()
    assert not found, f"check classes named outside their module and the registry (module -> lines): {found}"


def test_check_scan_sees_a_dispatch() -> None:
    """The scan is not blind: an isinstance dispatch on a kind is a finding."""
    names = set().union(*_check_names().values())
    tree = ast.parse("from mptcplab.lab.schema import Expectation\nok = isinstance(e, Expectation)\n")
    assert _check_uses(tree, names, face=False) == [1, 2]
    assert _check_uses(tree, names, face=True) == [2]


# ----------------------------------------------------------------------------- backends
#: modules that must ask the registry instead of naming a backend
BACKEND_DISPATCH = {"net/plan.py", "cli/lab.py", "calibrate.py", "steps/base.py"}


def _backend_mentions(tree: ast.AST, names: set[str]) -> list[int]:
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value in names:
            hits.append(node.lineno)
        elif isinstance(node, ast.Name | ast.Attribute):
            ident = node.id if isinstance(node, ast.Name) else node.attr
            if ident in {"NetnsBackend", "ContainerlabBackend"}:
                hits.append(node.lineno)
    return hits


def test_every_registered_backend_loads_and_declares_its_node_commands() -> None:
    from mptcplab import backends

    assert set(backends.DESCRIPTIONS) == set(backends.names())
    for name in backends.names():
        cls = backends.get(name)
        assert cls.name == name and cls.node_creators, name
        assert all(len(c) == 2 for c in cls.node_creators), name


@pytest.mark.parametrize("module", sorted(BACKEND_DISPATCH))
def test_backend_dispatch_modules_name_no_backend(module: str) -> None:
    from mptcplab import backends

    tree = ast.parse((PKG / module).read_text())
    assert _backend_mentions(tree, set(backends.names()) - {"auto"}) == [], module
