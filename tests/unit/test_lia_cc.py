"""mptcp_lia without a kernel: the arithmetic the BPF program runs (native/lia/lia_math.h,
through its host build) against RFC 6356's formula written here in floating point; the
reference count of holders (cc/holds.py) with a made-up congestion control; the
preflight's refusal; the dry run's commands."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from mptcplab import runstate
from mptcplab.cc import BPF_CCS, BpfCc, holds, wanted
from mptcplab.commands import Cmd
from mptcplab.emulation.base import repo_root
from mptcplab.emulation.select import emulator_named
from mptcplab.errors import LabInputError
from mptcplab.lab.loader import load_lab
from mptcplab.preflight import TOOLS, HostFacts, preflight
from mptcplab.run import RunOptions, dry_run

NATIVE = repo_root() / "native"
HOST = HostFacts(euid=0, congestion_controls=frozenset({"reno", "cubic", "bbr"}), schedulers=frozenset({"default"}),
                 sysctls=None, tools=frozenset(TOOLS))


# ------------------------------------------------------------------ arithmetic
def rfc6356_w(cwnd: float, samples: Sequence[tuple[float, float]]) -> float:
    """ACKed segments per one-segment increase: 1 / min(alpha / cwnd_total, 1 / cwnd),
    alpha as RFC 6356 section 3 writes it."""
    total = sum(c for c, _ in samples)
    alpha = total * max(c / r**2 for c, r in samples) / sum(c / r for c, r in samples) ** 2
    return 1 / min(alpha / total, 1 / cwnd)


@pytest.fixture(scope="module")
def lia_math() -> Path:
    if shutil.which("make") is None or shutil.which("cc") is None:
        pytest.skip("needs make and a C compiler")
    subprocess.run(["make", "-s", "-C", str(NATIVE), "build/test_lia_math"], check=True, capture_output=True,
                   timeout=120)
    return NATIVE / "build" / "test_lia_math"


def evaluate(binary: Path, cases: list[tuple[int, list[tuple[int, int]]]]) -> list[int]:
    text = "".join(f"{cw} {' '.join(f'{c} {r}' for c, r in s)}\n" for cw, s in cases)
    out = subprocess.run([str(binary), "--eval"], input=text, capture_output=True, text=True, check=True, timeout=60)
    return [int(x) for x in out.stdout.split()]


def test_fixed_point_follows_rfc6356_on_random_connections(lia_math: Path) -> None:
    rng = random.Random(6356)
    cases = []
    for _ in range(3000):
        n = rng.randint(1, 8)
        s = [(rng.randint(1, 5000), rng.randint(50, 500_000)) for _ in range(n)]
        cases.append((rng.choice(s)[0], s))
    for (cwnd, s), got in zip(cases, evaluate(lia_math, cases), strict=True):
        want = rfc6356_w(cwnd, s)
        # integer: truncated, at most one ACK (plus 0.1 % for the 10 fractional bits) below
        assert want - 1 - 1e-3 * want <= got <= want + 1e-9 * want, (cwnd, s, got, want)


@pytest.mark.parametrize(("cwnd", "samples", "expected"), [
    (10, [(10, 1000)], 10),                        # one subflow: reno's w = cwnd
    (20, [(20, 5000), (20, 5000)], 80),            # two equal: alpha = 1/2, w = 4 c
    (30, [(30, 100), (30, 7000), (0, 0)], 30),     # an empty slot counts for nothing
    (7, [], 7),                                    # no sample yet (no RTT): reno
])
def test_fixed_point_known_answers(lia_math: Path, cwnd: int, samples: list[tuple[int, int]], expected: int) -> None:
    assert evaluate(lia_math, [(cwnd, samples)]) == [expected]


def test_equal_subflows_together_hold_one_tcp_window() -> None:
    """The property the shared-bottleneck lab test measures, in the RFC's own terms: n
    subflows with one RTT and loss probability p, each growing by 1/w per ACK and halving
    at a loss, balance where 1/w = p * c / 2. Solved numerically with the RFC's w, the
    total n * c is one reno flow's window sqrt(2/p), whatever n; with uncoupled subflows
    (w = c) it would be n times that."""
    p = 1e-3
    for n in range(1, 9):
        lo, hi = 1e-3, 1e6
        for _ in range(200):  # bisection: 1/w(c) - p c / 2 falls as c grows
            c = (lo + hi) / 2
            lo, hi = (c, hi) if 1 / rfc6356_w(c, [(c, 1000)] * n) > p * c / 2 else (lo, c)
        assert n * c == pytest.approx((2 / p) ** 0.5, rel=1e-6)


# ------------------------------------------------------------------ reference count
@dataclass(frozen=True)
class FakeCc(BpfCc):
    """A congestion control whose registration is a flag, and whose commands are recorded."""

    state: dict[str, Any] = field(default_factory=lambda: {"registered": False, "ran": []})

    def registered(self) -> bool:
        return bool(self.state["registered"])

    def execute(self, c: Cmd) -> None:
        self.state["ran"].append(c.argv[2])
        if c.argv[2] == "register" and self.state.get("fail"):
            raise RuntimeError("the verifier said no")
        self.state["registered"] = c.argv[2] == "register"


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeCc:
    monkeypatch.setattr(runstate, "STATE_DIR", tmp_path / "state")
    cc = FakeCc("fake_lia", "fake.bpf.o", "fake_lia")
    monkeypatch.setattr(holds, "BPF_CCS", {cc.name: cc})
    return cc


def test_first_holder_registers_last_one_unregisters(fake: FakeCc) -> None:
    a = holds.acquire(fake, "a", fake.execute)
    b = holds.acquire(fake, "b", fake.execute)
    assert (a.registered_here, b.registered_here) == (True, False)
    assert fake.state["ran"] == ["register"]
    assert not holds.release(a, fake.execute) and fake.registered()
    assert holds.release(b, fake.execute) and not fake.registered()
    assert fake.state["ran"] == ["register", "unregister"]
    assert list((runstate.STATE_DIR).glob("cc-fake_lia-*.json")) == []


def test_a_failed_registration_leaves_no_hold(fake: FakeCc) -> None:
    fake.state["fail"] = True
    with pytest.raises(RuntimeError, match="verifier"):
        holds.acquire(fake, "a", fake.execute)
    assert list(runstate.STATE_DIR.glob("cc-fake_lia-*.json")) == []


def test_clean_keeps_what_a_live_run_holds_and_drops_dead_holds(fake: FakeCc) -> None:
    live = subprocess.Popen(["sleep", "30"])
    dead = subprocess.Popen(["true"])
    dead.wait()
    try:
        h_live = holds.acquire(fake, "live", fake.execute)
        h_dead = holds.acquire(fake, "dead", fake.execute)
        for h, pid in ((h_live, live.pid), (h_dead, dead.pid)):
            h.path.write_text(json.dumps({**json.loads(h.path.read_text()), "pid": pid}))
        assert holds.clean(execute=fake.execute) == []
        assert fake.registered() and h_live.path.exists() and not h_dead.path.exists()
        live.kill()
        live.wait()
        assert holds.clean(execute=fake.execute) == ["fake_lia"]
        assert not fake.registered() and not h_live.path.exists()
    finally:
        live.kill()
        live.wait()


def test_clean_all_runs_unregisters_even_a_live_hold(fake: FakeCc) -> None:
    holds.acquire(fake, "mine", fake.execute)
    assert holds.clean(all_runs=True, execute=fake.execute) == ["fake_lia"]


def test_clean_counts_our_own_holds_as_left_over(fake: FakeCc) -> None:
    """As runstate.run_states: clean runs at a run's start and end, when this process
    holds nothing; a hold of ours then was left by an interrupted teardown."""
    holds.acquire(fake, "mine", fake.execute)
    assert holds.clean(execute=fake.execute) == ["fake_lia"]


# ------------------------------------------------------------------ lab side
def lia_lab(copy_lab: Any) -> Path:
    d: Path = copy_lab()
    data = yaml.safe_load((d / "experiment.yml").read_text())
    data["traffic"]["flows"]["main"]["cc"] = "mptcp_lia"
    (d / "experiment.yml").write_text(yaml.safe_dump(data, sort_keys=False))
    return d


def test_wanted_names_only_engine_congestion_controls(copy_lab: Any) -> None:
    assert wanted(load_lab(repo_root() / "labs" / "mtu").scenarios[0].body.traffic.flows.values()) == []
    lab = load_lab(lia_lab(copy_lab))
    assert wanted(lab.scenarios[0].body.traffic.flows.values()) == [BPF_CCS["mptcp_lia"]]


def test_preflight_refuses_in_one_line_when_it_cannot_be_registered(copy_lab: Any) -> None:
    d = lia_lab(copy_lab)
    lab = load_lab(d)
    why = "mptcp_lia is not built (native/build/mptcp_lia.bpf.o is missing): run make -C native bpf"
    problems = preflight(lab, lab.scenarios, dry_run=True, facts=replace(HOST, engine_ccs={"mptcp_lia": why}))
    assert len(problems) == 1 and isinstance(problems[0], LabInputError)
    p = problems[0]
    assert (p.file, p.field) == (str(d / "experiment.yml"), "traffic.flows.main.cc")
    assert why in p.problem and "\n" not in str(p)
    # registrable: fine, although the kernel does not list it (yet)
    assert preflight(lab, lab.scenarios, dry_run=True, facts=replace(HOST, engine_ccs={"mptcp_lia": None})) == []


def test_problem_names_what_is_missing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cc = FakeCc("fake_lia", "nothing-here.bpf.o", "fake_lia")
    monkeypatch.setenv("MPTCPLAB_BPF_DIR", str(tmp_path))
    assert cc.problem(euid=1000) is not None and "needs root" in str(cc.problem(euid=1000))
    if Path("/sys/kernel/btf/vmlinux").exists():
        assert "is not built" in str(cc.problem(euid=0)) and "make -C" in str(cc.problem(euid=0))
    (tmp_path / "nothing-here.bpf.o").write_bytes(b"")
    cc.state["registered"] = True  # registered already: nothing to load, nothing missing
    assert cc.problem(euid=1000) is None


def test_dry_run_prints_registration_first_and_unregistration_last(copy_lab: Any) -> None:
    lab = load_lab(lia_lab(copy_lab))
    lines: list[str] = []
    dry_run(lab, emulator_named("nfqueue"), RunOptions(scenarios=["mptcp-bottleneck"]), out=lines.append)
    commands = [line for line in lines if line.strip() and not line.lstrip().startswith("#")]
    register = f"struct_ops register {BPF_CCS['mptcp_lia'].object_path}"
    assert register in commands[0]
    assert commands[-1].split("    #")[0].endswith("struct_ops unregister name mptcp_lia")


def test_dry_run_of_a_lab_without_it_has_no_bpftool() -> None:
    lab = load_lab(repo_root() / "labs" / "mtu")
    lines: list[str] = []
    dry_run(lab, emulator_named("nfqueue"), RunOptions(scenarios=["mptcp-bottleneck"]), out=lines.append)
    assert not any("bpftool" in line for line in lines)
