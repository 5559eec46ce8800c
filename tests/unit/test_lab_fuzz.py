"""Property: whatever a lab file says, loading it ends in a valid lab or one
LabInputError, never another exception (which the CLI would print as a traceback).

Valid labs (labs/mtu, labs/sndbuf) are mutated one edit at a time: a value replaced
(by numbers, huge and negative, floats, booleans, null, lists, mappings, strings with
shell metacharacters), a key deleted, a key inserted, a key renamed. A lab that still
loads also goes through the engine's next steps: unsupported(), the preflight (against a
made-up host), the reachability warnings and the command plan of every scenario, whose
sysctl and tbf arguments must be ones the tools accept ("valid" means "runs").
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mptcplab.backends.netns import NetnsBackend
from mptcplab.emulation.tc import NetemEmulator
from mptcplab.errors import LabInputError
from mptcplab.lab.joinwarnings import join_warnings
from mptcplab.lab.loader import LAB_FILES, load_lab, unsupported
from mptcplab.net.plan import build_plan
from mptcplab.preflight import HostFacts, preflight

LABS = Path(__file__).resolve().parents[2] / "labs"
FACTS = HostFacts(euid=0, congestion_controls=frozenset({"reno", "cubic"}), schedulers=frozenset({"default"}),
                  sysctls=None)

SHELLY = st.text(alphabet=st.sampled_from(list("abz09 .:-_/;|&$()`'\"\\<>*?~#!{}[],%\n\t")), max_size=24)
SCALARS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70), st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(), st.none(), SHELLY,
    st.sampled_from(["100tbit", "1bit", "0", "-1", "1e99", "10GB", "80ms", "client:eth1", "server:eth1", "ra:eth9",
                     "10.0.1.2", "10.0.1.0/24", "cubic", "kernel", "signal", "subflow", "tcp-a", "net.ipv4.x", ""]),
)
VALUES = st.recursive(SCALARS, lambda kids: st.one_of(st.lists(kids, max_size=3),
                                                      st.dictionaries(SHELLY, kids, max_size=3)), max_leaves=6)


HOT = {"sysctls", "links", "rate", "queue", "delay", "server_address", "addressing", "endpoints", "mtu", "cc"}


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, prefix + (i,))
    return out


def _at(doc: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        doc = doc[p]
    return doc


@st.composite
def mutated(draw: st.DrawFn, lab: str) -> dict[str, Any]:
    docs = {f: yaml.safe_load((LABS / lab / f).read_text()) for f in LAB_FILES}
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        f = draw(st.sampled_from(["experiment.yml", "experiment.yml", "topology.clab.yml", "published.yml"]))
        paths = _paths(docs[f])[1:]
        # half the edits go where lab values reach commands: sysctls, link shapes, addresses
        hot = [p for p in paths if any(str(k) in HOT for k in p)]
        use_hot = bool(hot) and draw(st.booleans())
        path = draw(st.sampled_from(hot if use_hot else paths))
        parent, key = _at(docs[f], path[:-1]), path[-1]
        op = draw(st.sampled_from(["set", "set", "delete", "insert", "rename"]))
        if op == "set":
            parent[key] = draw(VALUES)
        elif op == "delete":
            del parent[key]
        elif op == "insert" and isinstance(parent, dict):
            parent[draw(SHELLY)] = draw(VALUES)
        elif op == "insert":
            parent.insert(key, draw(VALUES))
        elif isinstance(parent, dict):
            parent[draw(SHELLY) + str(key)] = parent.pop(key)
    return docs


SYSCTL_ARG = re.compile(r"net(?:[./][a-z0-9_-]+)+=[A-Za-z0-9_.,:/+-]+(?:[ \t][A-Za-z0-9_.,:/+-]+)*")


def _plans_are_runnable(lab: Any, workdir: Path) -> None:
    for sc in lab.scenarios:
        plan = build_plan(lab.topology, sc, NetemEmulator(), NetnsBackend(prefix="mplfuzz-"), workdir)
        for c in plan.sysctls:
            for arg in c.argv[3:]:
                assert SYSCTL_ARG.fullmatch(str(arg)), arg
        for c in plan.emulation:
            argv = [str(a) for a in c.argv]
            if "tbf" in argv:
                for opt in ("burst", "limit"):
                    assert 0 < int(argv[argv.index(opt) + 1]) <= 2**32 - 1, argv


def _check(docs: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory(prefix="mpl-fuzz-") as d:
        for f, doc in docs.items():
            (Path(d) / f).write_text(yaml.safe_dump(doc, sort_keys=False))
        try:
            lab = load_lab(d)
            unsupported(lab)
            preflight(lab, lab.scenarios, dry_run=True, facts=FACTS)
            join_warnings(lab)
            _plans_are_runnable(lab, Path(d))
        except LabInputError as e:
            assert "\n" not in str(e)
            assert e.file.startswith(d)


FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow],
                database=None)


@pytest.mark.parametrize("lab", ["mtu", "sndbuf"])
def test_mutated_lab_is_valid_or_one_line_error(lab: str) -> None:
    @FUZZ
    @given(mutated(lab))
    def prop(docs: dict[str, Any]) -> None:
        _check(docs)

    prop()
