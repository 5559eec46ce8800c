"""Black-box fault injection: drive `mptcplab` through its CLI as a subprocess and
inspect the system from outside (namespaces, processes, state files, root-namespace
firewall, tracefs, results directories). Nothing here imports the engine, so the
suite holds while the engine's modules are reshaped."""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "mptcplab.cli"]
STATE_DIR = Path(os.environ.get("MPTCPLAB_STATE_DIR", "/run/mptcplab"))
TRACEFS_INSTANCES = Path("/sys/kernel/tracing/instances")
#: the run every fault case starts: the smallest lab with everything a run has
#: (delay lines, rate shaping, captures at two interfaces, MPTCP with two subflows)
LAB = "labs/sndbuf"
RUN_ARGS = ["--quick", "--no-calibrate", "--scenario", "mptcp-paper"]
NS_PREFIX_RE = re.compile(r"\bip netns add (mpl[0-9a-f]{6}-)")
#: processes a run starts in its nodes (comm is cut at 15 characters)
NODE_COMMS = {"iperf3", "tcpdump", "mptcplab-delayl", "mptcpize", "ping", "tshark", "dumpcap"}


def seed() -> int:
    """MPTCPLAB_FAULTS_SEED, else one drawn per session (printed in the header)."""
    env = os.environ.get("MPTCPLAB_FAULTS_SEED")
    return int(env) if env else SESSION_SEED


SESSION_SEED = random.SystemRandom().randrange(1, 2**31)


def start_ticks(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    after = stat.rsplit(")", 1)[1].split()
    if after[0] == "Z":  # a zombie has exited: only its parent's wait is missing
        return None
    return int(after[19])


def _ppid_comm(pid: str) -> tuple[int, str] | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    comm = stat[stat.index("(") + 1:stat.rindex(")")]
    return int(stat.rsplit(")", 1)[1].split()[1]), comm


def descendants(root: int) -> dict[int, tuple[int | None, str]]:
    """pid -> (start time, comm) of every process under root (root included)."""
    tree: dict[int, list[int]] = {}
    comms: dict[int, str] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        pc = _ppid_comm(d)
        if pc:
            tree.setdefault(pc[0], []).append(int(d))
            comms[int(d)] = pc[1]
    out: dict[int, tuple[int | None, str]] = {}
    todo = [root]
    while todo:
        pid = todo.pop()
        if pid in out:
            continue
        out[pid] = (start_ticks(pid), comms.get(pid, "?"))
        todo += tree.get(pid, [])
    return out


@dataclass
class Seen:
    """What a run was seen to own while it ran."""

    prefixes: set[str] = field(default_factory=set)
    namespaces: set[str] = field(default_factory=set)
    state_files: set[Path] = field(default_factory=set)
    processes: dict[int, tuple[int | None, str]] = field(default_factory=dict)


class Watcher(threading.Thread):
    """Polls, while a run lives, the state files it owns and its process tree."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.seen = Seen()
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            self.poll()
            self._halt.wait(0.03)

    def poll(self) -> None:
        for f in STATE_DIR.glob("*.json") if STATE_DIR.is_dir() else []:
            try:
                data = json.loads(f.read_text())
            except (OSError, ValueError):
                continue
            if int(data.get("pid", 0)) == self.pid:
                self.seen.state_files.add(f)
                self.seen.namespaces.update(data.get("namespaces", []))
                if data.get("prefix"):
                    self.seen.prefixes.add(str(data["prefix"]))
        for pid, info in descendants(self.pid).items():
            if info[0] is not None:
                self.seen.processes.setdefault(pid, info)

    def stop(self) -> Seen:
        self._halt.set()
        self.join(timeout=5)
        return self.seen


def root_firewall() -> set[str]:
    """Rule lines of the root namespace that a run could have left."""
    out = subprocess.run(["nft", "list", "ruleset"], capture_output=True, text=True).stdout
    out += subprocess.run(["iptables-save"], capture_output=True, text=True).stdout
    out += subprocess.run(["ip6tables-save"], capture_output=True, text=True).stdout
    return {line.strip() for line in out.splitlines() if line.strip() and not line.startswith("#")
            and not re.match(r"^\[?\d+:\d+\]?$", line.strip())}


def tracefs_instances() -> set[str]:
    try:
        return set(os.listdir(TRACEFS_INSTANCES))
    except OSError:
        return set()


def netns() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


@dataclass
class Before:
    firewall: set[str]
    tracefs: set[str]

    @classmethod
    def take(cls) -> Before:
        return cls(root_firewall(), tracefs_instances())


def hash_tree(root: Path) -> dict[str, str]:
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_symlink():
            out[str(p.relative_to(root))] = "-> " + os.readlink(p)
        elif p.is_file():
            out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def prefixes_in_results(results: Path) -> set[str]:
    out: set[str] = set()
    for log in results.rglob("commands.log"):
        out.update(NS_PREFIX_RE.findall(log.read_text(errors="replace")))
    return out


@dataclass
class Outcome:
    rc: int | None
    seen: Seen
    stdout: str
    stderr: str
    seconds: float


def start(results: Path, lab: str = LAB, args: list[str] = RUN_ARGS) -> subprocess.Popen[bytes]:
    """The runner, its output in files beside the results directory: a pipe would be
    held open by any process the run leaves behind, and reading it would hang."""
    logs = LOGS
    logs.mkdir(parents=True, exist_ok=True)
    n = len(list(logs.glob("*.out")))
    with open(logs / f"{n:03d}.out", "wb") as out, open(logs / f"{n:03d}.err", "wb") as err:
        p = subprocess.Popen([*CLI, "run", lab, *args, "--results", str(results)], cwd=REPO,
                             stdout=out, stderr=err, stdin=subprocess.DEVNULL)
    _LOGS[p.pid] = logs / f"{n:03d}"
    return p


_LOGS: dict[int, Path] = {}
#: not beside the results: a results directory under test may be full or read-only
LOGS = Path(tempfile.mkdtemp(prefix="mptcplab-faults-logs-"))


def output(p: subprocess.Popen[bytes]) -> tuple[str, str]:
    base = _LOGS[p.pid]
    return (base.with_suffix(".out").read_text(errors="replace"), base.with_suffix(".err").read_text(errors="replace"))


def run_and_signal(results: Path, at: float | None, sig: int = signal.SIGKILL,
                   timeout: float = 240) -> Outcome:
    """Start a run; at `at` seconds after its start send `sig` to the runner process
    (if it still runs); wait for it; return what was seen."""
    t0 = time.monotonic()
    p = start(results)
    w = Watcher(p.pid)
    w.start()
    try:
        if at is not None:
            try:
                p.wait(timeout=at)
            except subprocess.TimeoutExpired:
                w.poll()  # the newest children, just before the signal
                p.send_signal(sig)
        p.wait(timeout=timeout)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        seen = w.stop()
    out, err = output(p)
    return Outcome(p.returncode, seen, out, err, time.monotonic() - t0)


def clean(results: Path) -> subprocess.CompletedProcess[str]:
    p = subprocess.run([*CLI, "clean", "--results", str(results)], cwd=REPO, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    return p


def leftovers(seen: Seen, results: Path, before: Before) -> list[str]:
    """Everything of the run still on the system (empty when it left nothing)."""
    problems = []
    prefixes = seen.prefixes | prefixes_in_results(results)
    left_ns = {n for n in netns() if n in seen.namespaces or any(n.startswith(px) for px in prefixes)}
    if left_ns:
        problems.append(f"namespaces left: {sorted(left_ns)}")
    left_state = sorted(str(f) for f in seen.state_files if f.exists())
    left_state += sorted(str(f) for f in STATE_DIR.glob("*.json")
                         if any(f.name.startswith(px.rstrip("-")) for px in prefixes) and str(f) not in left_state)
    if left_state:
        problems.append(f"state files left: {left_state}")
    # a process sent SIGKILL (by clean, or by the analysis worker on its way out) takes a
    # moment to exit on a busy machine: 3 s, then anything of the run still there is a leak
    deadline = time.monotonic() + 3.0
    while True:
        alive = [f"{pid} ({comm})" for pid, (st, comm) in seen.processes.items()
                 if st is not None and start_ticks(pid) == st]
        if not alive or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    if alive:
        problems.append(f"processes left: {alive}")
    fw = {line for line in root_firewall() - before.firewall
          if "mptcplab" in line or any(px.rstrip("-") in line for px in prefixes)}
    if fw:
        problems.append(f"root-namespace firewall rules left: {sorted(fw)}")
    tr = {i for i in tracefs_instances() - before.tracefs
          if "mptcplab" in i or i.startswith("mpl")}
    if tr:
        problems.append(f"tracefs instances left: {sorted(tr)}")
    return problems


def run_dirs(results: Path) -> list[Path]:
    """Every directory under results/<lab>/ except the latest link."""
    return sorted(d for lab in results.iterdir() if lab.is_dir()
                  for d in lab.iterdir() if d.is_dir() and not d.is_symlink())


def results_problems(results: Path, complete_runs: dict[str, dict[str, str]]) -> list[str]:
    """The results directory after a fault: complete runs untouched; every other run
    directory whole (a manifest), marked incomplete with a reason, not latest; no
    staging directory, owner record or temporary file left."""
    problems = []
    for name, hashes in complete_runs.items():
        now = hash_tree(results / name)
        if now != hashes:
            changed = sorted(k for k in set(now) | set(hashes) if now.get(k) != hashes.get(k))
            problems.append(f"complete run {name} changed: {changed[:5]}")
    for d in run_dirs(results):
        rel = str(d.relative_to(results))
        if rel in complete_runs:
            continue
        if d.name.startswith("."):
            problems.append(f"staging directory left: {rel}")
            continue
        m = d / "manifest.json"
        if not m.is_file():
            problems.append(f"run directory without a manifest: {rel} ({sorted(x.name for x in d.iterdir())})")
            continue
        manifest = json.loads(m.read_text())
        latest = d.parent / "latest"
        is_latest = latest.is_symlink() and os.readlink(latest) == d.name
        if manifest.get("complete"):
            # killed after its last write (report written, owner record released):
            # complete in every respect but the latest link
            if not (d / "report.md").is_file():
                problems.append(f"{rel}: complete without report.md")
        else:
            if not manifest.get("incomplete_reason"):
                problems.append(f"{rel}: incomplete without incomplete_reason")
            if is_latest:
                problems.append(f"{rel}: incomplete run is latest")
        if (d / ".owner").exists():
            problems.append(f"{rel}: owner record left (run not marked)")
    for tmp in results.rglob("*.tmp"):
        problems.append(f"temporary file left: {tmp.relative_to(results)}")
    for tmp in results.glob("*/.latest-*"):
        problems.append(f"temporary latest link left: {tmp.relative_to(results)}")
    return problems


def new_capture_bytes(results: Path, known: set[str]) -> int:
    """Bytes the captures of the run under way have written (runs in `known` are earlier)."""
    total = 0
    try:
        found = list(results.rglob("*.pcap"))
    except FileNotFoundError:
        # the run renamed its .partial directory under the walk (it became the final run
        # directory): nothing is counted this time, the next poll reads the new name
        return 0
    for f in found:
        if str(f.relative_to(results)).split("/scenarios/")[0] in known:
            continue
        try:
            total += f.stat().st_size
        except OSError:
            continue
    return total


def phase(results: Path, known: set[str]) -> str:
    """How far the newest run got, from its files (for the printed kill table)."""
    new = [d for d in run_dirs(results) if str(d.relative_to(results)) not in known]
    if not new:
        return "before the run directory"
    d = new[-1]
    rep = next(iter(d.glob("scenarios/*/rep1")), None)
    if (d / "report.md").exists():
        return "report written"
    if rep is None:
        return "run directory created"
    if (rep / "rep.json").exists():
        return "analyzed"
    if (rep / "iperf3.json").exists() and (rep / "iperf3.json").stat().st_size > 0:
        return "traffic done"
    if any(rep.glob("*.pcap")):
        return "capture/traffic"
    return "deploy/link checks"


def finished_complete(results: Path, o: Outcome) -> str | None:
    """None when the run ended on its own with a complete run directory (valid, or
    invalid only for timing reasons this busy machine may cause); else the problem."""
    if o.rc not in (0, 1):
        return f"rc {o.rc}: {o.stderr[-2000:]}"
    if o.rc == 1 and not o.stderr.startswith("RUN INVALID"):
        return f"rc 1 without RUN INVALID: {o.stderr[-2000:]}"
    return None


@dataclass
class Session:
    results: Path
    #: seconds a whole undisturbed run takes here, now: the range fault moments are drawn from
    run_seconds: float
    #: run directory (relative to results) -> hash of every file in it
    complete: dict[str, dict[str, str]] = field(default_factory=dict)
    #: kill -9s that hit a running runner
    kills: int = 0
    kill_cases: int = 0

    def add_complete(self) -> None:
        """Hash every complete run directory not hashed yet."""
        for d in run_dirs(self.results):
            rel = str(d.relative_to(self.results))
            if rel not in self.complete and (d / "report.md").is_file() and not (d / ".owner").exists():
                self.complete[rel] = hash_tree(d)
