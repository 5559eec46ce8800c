"""The containerlab backend: nodes are the containers ``containerlab deploy`` makes
from the lab's own topology.clab.yml, links are the veth pairs it wires; the engine
then configures the nodes from inside with ``docker exec`` (the appliance VM).

- Naming: every repetition deploys under its own lab name ``mpl<6 hex>-<lab>``, so
  containers are ``clab-mpl<6 hex>-<lab>-<node>`` and two runs never collide. The
  name goes into a copy of the topology written to the run directory (with the
  additions below); the lab's file, and the hash the manifest records, are untouched.
- The copy gives every node ``network-mode: none`` (a lab has only its own links:
  containerlab's management bridge would be a second path between every pair of
  nodes, with default routes through it), binds the run directory at the same path
  (tcpdump writes its capture straight into the run directory, so nothing is copied
  out after a stop), and the ``net.ipv{4,6}.conf.*`` sysctls, which Docker applies
  when it creates the container's network namespace, before containerlab adds the
  links: an interface copies net.ipv4.conf.default.* (rp_filter) when it is created.
- The engine's own stdlib-only programs (timeline/upm_tool.py for the userspace path
  manager, traffic/churn_tool.py, transfer_tool.py) are commands ``<engine's python> -I
  <path in the package>``; the copy binds the engine's package directory read-only at the
  same path in every node, and node_argv runs them with the node's ``python3`` (the host
  image has it) in place of the engine's interpreter, which is not in the container.
- Sysctls run inside the nodes with ``docker exec ... sysctl``: containerlab starts
  every node privileged (0.69: runtime/docker sets HostConfig.Privileged), so
  /proc/sys is writable, and net.* sysctls are per network namespace, i.e. the node's
  own. No nsenter from the host is needed.
- Routers get FRR static routes (``router_routes = "frr"``, netconfig.frr_route_cmds);
  hosts keep ip route/ip rule.
- Background processes: killing a ``docker exec`` client does not stop the process
  in the container. spawn() starts the process through a fixed wrapper script that
  writes its in-container PID to a file and execs the argument list (lab strings are
  arguments, never part of the script); signal() delivers the signal to that PID
  with ``docker exec <c> kill``. The client exits when the process does.
- ``deploy=False`` is for tests and pre-created labs: the containers
  ``clab-<lab>-<node>`` and their links already exist (made by someone else), so the
  backend neither deploys nor destroys them; it only configures the nodes, runs and
  stops its processes. Configuration stays in the containers: one repetition per
  pre-created lab.

A state file in /run/mptcplab (``clab-<lab>.json``: owner PID, lab, topology copy)
lets ``clean`` remove what a killed run deployed: ``containerlab destroy``, then any
container still carrying the lab's ``containerlab=<lab>`` label.
"""

from __future__ import annotations

import copy
import os
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, ClassVar

import yaml

from ..commands import Cmd, cmd
from ..errors import HostNotReady
from ..lab.network import Network
from ..runstate import owner_live, run_states
from .base import Backend, Log, state_path

if TYPE_CHECKING:
    from ..emulation.base import Emulator
    from ..lab.model import Lab, ScenarioRun

#: lab names of runs (new_lab_name): what `clean` may remove without a state file
RUN_LAB_RE = re.compile(r"^mpl[0-9a-f]{6}-")
#: containerlab's label naming a container's lab
LAB_LABEL = "containerlab"
#: sysctls given to Docker at container creation (see the module docstring)
CREATION_SYSCTL_PREFIXES = ("net.ipv4.conf.", "net.ipv6.conf.")
#: writes the PID of the shell, which then execs "$@" and so becomes the process:
#: $1 is the PID file, the rest is the argument list, never part of the script
PID_WRAPPER = 'echo $$ > "$1"; shift; exec "$@"'
NODE_TIMEOUT_S = 120.0     # one command on a node (a ping, an iperf3 rate check)
HOST_TIMEOUT_S = 600.0     # containerlab deploy/destroy
PID_WAIT_S = 5.0           # until a spawned process has written its PID file
#: the engine's package, bound read-only at the same path into every node: its stdlib-only
#: programs run there by path (the module docstring)
ENGINE_DIR = Path(__file__).parents[1]
#: the interpreter of a node (images/host) for a command the engine runs with its own
NODE_PYTHON = "python3"


def _for_lab(lab: Lab, run_dir: Path, log: Log | None, lab_name: str | None = None) -> ContainerlabBackend:
    from ..lab.loader import TOPOLOGY

    # the run directory is bound into every node at the same path: tcpdump in a node
    # writes its capture where the runner expects it (the path must be absolute)
    return ContainerlabBackend(lab.path / TOPOLOGY, lab_name=lab_name, workdir=run_dir / "clab",
                               binds=[run_dir], log=log)


def new_lab_name(lab: str) -> str:
    return f"mpl{secrets.token_hex(3)}-{lab}"


def container_name(lab_name: str, node: str) -> str:
    """What containerlab names a node's container."""
    return f"clab-{lab_name}-{node}"


@dataclass
class _Spawned:
    p: subprocess.Popen[bytes]
    node: str
    pidfile: str
    pid: int | None = None


class ContainerlabBackend(Backend):
    name = "containerlab"
    # deploy creates the links with the nodes, so the sysctls a new interface copies
    # (net.ipv4.conf.default.*) are given to Docker at container creation instead
    node_creators = (("containerlab", "deploy"),)
    #: routers run FRR (images/router): the plan gives them FRR static routes
    router_routes = "frr"
    #: links are emulated with tc: the NFQUEUE delay line is not in the lab images
    emulators = ("netem",)
    cleans = "container(s)"
    # processes run through `docker exec`: their host PIDs are the exec clients (no CAP_NODE_PIDS)
    capabilities: ClassVar[frozenset[str]] = frozenset()
    absolute_paths = True

    def __init__(self, topology: Path, *, lab_name: str | None = None, workdir: Path | None = None,
                 binds: Sequence[Path] = (), log: Log | None = None, deploy: bool = True,
                 docker: str = "docker", containerlab: str = "containerlab") -> None:
        """``topology``: the lab's topology.clab.yml. ``workdir``: where the topology copy
        (and containerlab's lab directory next to it) go; required with ``deploy``.
        ``binds``: host directories mounted at the same path in every node (the run
        directory). ``deploy=False``: the lab is pre-created (tests): no deploy/destroy."""
        super().__init__(log)
        self.source = Path(topology)
        self._raw: dict[str, Any] = yaml.safe_load(self.source.read_text())
        self.lab = lab_name or new_lab_name(str(self._raw["name"]))
        if deploy and workdir is None:
            raise ValueError("a deploying containerlab backend needs a workdir for its topology copy")
        self.workdir = Path(workdir) if workdir is not None else None
        self.binds = [Path(b).absolute() for b in binds]
        self.deploy = deploy
        self.docker = docker
        self.containerlab = containerlab
        self._net: Network | None = None
        self._nodes: list[str] = []
        self._began = False
        self._spawned: dict[int, _Spawned] = {}
        self._token = secrets.token_hex(4)
        self._seq = 0
        self._state = state_path(f"clab-{self.lab}")

    # ---------------------------------------------------------------- registry side
    @classmethod
    def available(cls) -> tuple[bool, str]:
        return containerlab_status()

    @classmethod
    def for_run(cls, lab: Lab, run_dir: Path, log: Log | None) -> ContainerlabBackend:
        return _for_lab(lab, run_dir, log)

    @classmethod
    def for_dry_run(cls, lab: Lab, run_dir: Path) -> tuple[ContainerlabBackend, str]:
        name = f"mpl000000-{lab.name}"
        return (_for_lab(lab, run_dir, None, lab_name=name),
                f"containerlab lab name is random per repetition (shown as {name})")

    @classmethod
    def clean(cls, all_runs: bool = False) -> list[str]:
        return clean(all_runs)

    @classmethod
    def choose_emulator(cls, force: str | None, scenarios: Sequence[ScenarioRun], dry_run: bool) -> Emulator:
        """Links in containers are emulated with tc (netem, tbf): the NFQUEUE delay line
        is not in the lab images. Rate-only links are tbf alone, which needs no sch_netem."""
        from ..emulation import hostprobe
        from ..emulation.tc import NetemEmulator

        if force == "nfqueue":
            raise HostNotReady("the nfqueue link emulation cannot run on the containerlab backend (the delay line "
                               "is not in the lab images); use netem (the appliance VM's kernel has it) or "
                               "--backend netns")
        needs_netem = any(link.delay or link.jitter or link.loss for sc in scenarios for link in sc.body.links.values())
        if dry_run or not needs_netem or hostprobe.netem_available():
            return NetemEmulator()
        raise HostNotReady("the containerlab backend emulates delay and loss with netem, and this kernel has no "
                           "sch_netem; run in the appliance VM, or use --backend netns (NFQUEUE delay line)")

    def dry_run_notes(self, net: Network) -> list[str]:
        out = [f"# topology deployed: {self.topology_file} (written before deploy; the lab's file is unchanged)"]
        out += [f"#   {line}" for line in yaml.safe_dump(self.clab_topology(net), sort_keys=False).splitlines()]
        out.append(f"# background processes (&) start as: docker exec <c> sh -c {shlex.quote(PID_WRAPPER)} sh "
                   f"/tmp/mptcplab-<id>-<n>.pid <argv...>, and are signalled as: docker exec <c> kill -<SIG> <pid>")
        return out

    # ---------------------------------------------------------------- naming
    @property
    def topology_file(self) -> Path:
        """The copy containerlab deploys (only with deploy)."""
        assert self.workdir is not None
        return self.workdir / f"{self.lab}.clab.yml"

    def container(self, node: str) -> str:
        return container_name(self.lab, node)

    def node_argv(self, node: str, argv: Sequence[str]) -> list[str]:
        return [self.docker, "exec", self.container(node), *in_node(argv)]

    # ---------------------------------------------------------------- topology
    def clab_topology(self, net: Network) -> dict[str, Any]:
        """The topology containerlab deploys: the lab's, renamed, with every node on
        no management network, the binds and the creation-time sysctls."""
        topo = copy.deepcopy(self._raw)
        topo["name"] = self.lab
        for name, node in topo["topology"]["nodes"].items():
            node["network-mode"] = "none"
            binds = [self._absolute_bind(str(b)) for b in node.get("binds") or []]
            binds += [f"{b}:{b}" for b in self.binds]
            node["binds"] = [*binds, f"{ENGINE_DIR}:{ENGINE_DIR}:ro"]
            if name in net.nodes:
                early = {k: str(v) for k, v in net.nodes[name].sysctls.items()
                         if k.startswith(CREATION_SYSCTL_PREFIXES)}
                if early:
                    node["sysctls"] = {**(node.get("sysctls") or {}), **early}
        return topo

    def _absolute_bind(self, bind: str) -> str:
        # the copy lives elsewhere: a relative source meant the lab directory
        src, sep, rest = bind.partition(":")
        if sep and not src.startswith("/"):
            return f"{(self.source.parent / src).absolute()}:{rest}"
        return bind

    # ---------------------------------------------------------------- lifecycle
    def create_cmds(self, net: Network) -> list[Cmd]:
        if not self.deploy:
            return []
        return [cmd(self.containerlab, "deploy", "-t", str(self.topology_file),
                    why=f"nodes and links of lab {self.lab} (containers {container_name(self.lab, '<node>')})")]

    def teardown_cmds(self, net: Network) -> list[Cmd]:
        if not self.deploy:
            return []
        return [cmd(self.containerlab, "destroy", "-t", str(self.topology_file), "--cleanup")]

    def begin(self, net: Network) -> None:
        """Record ownership before anything exists."""
        self._net = net
        self._nodes = list(net.nodes)
        self._began = True
        self.write_state(self._state, {
            "lab": self.lab, "owned": self.deploy, "nodes": self._nodes,
            "containers": [self.container(n) for n in self._nodes],
            "topology": str(self.topology_file) if self.deploy else None})

    def pre_start(self, net: Network) -> None:
        """Write the topology copy (deploy), or check that the pre-created containers exist."""
        if self.deploy:
            self.topology_file.parent.mkdir(parents=True, exist_ok=True)
            self.topology_file.write_text(yaml.safe_dump(self.clab_topology(net), sort_keys=False))
            return
        names = [self.container(n) for n in self._nodes]
        p = subprocess.run([self.docker, "inspect", "-f", "{{.Name}} {{.State.Running}}", *names],
                           capture_output=True, text=True, timeout=60)
        running = {line.split()[0].lstrip("/") for line in p.stdout.splitlines() if line.endswith(" true")}
        missing = [n for n in names if n not in running]
        if missing:
            raise RuntimeError(f"pre-created lab {self.lab}: container(s) not running: {', '.join(missing)}")

    def destroy(self) -> None:
        """Stop every process spawned here, then (deploy) destroy the lab. Every exit path."""
        for rec in list(self._spawned.values()):
            self._stop(rec)
        if self._began and self.deploy:
            for c in self.teardown_cmds(self._net) if self._net else []:
                self.log(self.render(c))
            remove_lab(self.lab, self.topology_file, docker=self.docker, containerlab=self.containerlab)
        elif self._began:
            self._remove_pidfiles()
        self._spawned.clear()
        self._began = False
        self._state.unlink(missing_ok=True)

    def _remove_pidfiles(self) -> None:
        # a pre-created lab outlives this backend: leave no file of ours in it
        by_node: dict[str, list[str]] = {}
        for rec in self._spawned.values():
            by_node.setdefault(rec.node, []).append(rec.pidfile)
        for node, files in by_node.items():
            subprocess.run(self.node_argv(node, ["rm", "-f", *files]), capture_output=True, timeout=60)

    # ---------------------------------------------------------------- execution
    def command_timeout(self, c: Cmd) -> float:
        return HOST_TIMEOUT_S if c.node is None else NODE_TIMEOUT_S

    def batch_argv(self, node: str | None) -> list[str]:
        assert node is not None  # host commands are never batched here (batchable)
        return [self.docker, "exec", "-i", self.container(node), "ip", "-batch", "-"]

    def spawn_argv(self, node: str, pidfile: str, argv: Sequence[str]) -> list[str]:
        return self.node_argv(node, ["sh", "-c", PID_WRAPPER, "sh", pidfile, *in_node(argv)])

    def spawn(self, node: str, argv: Sequence[str], stdout: IO[bytes] | int | None = None,
              stderr: IO[bytes] | int | None = None) -> subprocess.Popen[bytes]:
        self._seq += 1
        pidfile = f"/tmp/mptcplab-{self._token}-{self._seq}.pid"
        full = self.spawn_argv(node, pidfile, argv)
        self.log(shlex.join(full) + " &")
        # its own session: a Ctrl-C at the terminal reaches the runner, which decides
        p = subprocess.Popen(full, stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL, start_new_session=True)
        self._spawned[id(p)] = _Spawned(p, node, pidfile)
        return p

    def kill_argv(self, node: str, pid: int, sig: int) -> list[str]:
        return self.node_argv(node, ["kill", f"-{signal.Signals(sig).name.removeprefix('SIG')}", str(pid)])

    def signal(self, p: subprocess.Popen[bytes], sig: int) -> None:
        """Deliver sig to the process in the container (tcpdump needs SIGINT itself to
        flush its file and print its counters; its docker exec client would not pass it)."""
        rec = self._spawned.get(id(p))
        if rec is None or p.poll() is not None:
            return
        pid = self._container_pid(rec)
        if pid is None:
            if p.poll() is None:  # the wrapper never ran: the client is all there is
                _killpg(p, sig)
            return
        subprocess.run(self.kill_argv(rec.node, pid, sig), capture_output=True, timeout=60)

    def _container_pid(self, rec: _Spawned) -> int | None:
        if rec.pid is not None:
            return rec.pid
        deadline = time.monotonic() + PID_WAIT_S
        while time.monotonic() < deadline:
            out = subprocess.run(self.node_argv(rec.node, ["cat", rec.pidfile]), capture_output=True, text=True,
                                 timeout=60).stdout.strip()
            if out.isdigit():
                rec.pid = int(out)
                return rec.pid
            if rec.p.poll() is not None:
                return None
            time.sleep(0.05)
        return None

    def _stop(self, rec: _Spawned, grace: float = 2.0) -> None:
        if rec.p.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
            self.signal(rec.p, sig)
            try:
                rec.p.wait(timeout=wait)
                return
            except subprocess.TimeoutExpired:
                continue
        _killpg(rec.p, signal.SIGKILL)  # the Docker daemon does not answer: at least the client goes
        rec.p.wait(timeout=5)


def in_node(argv: Sequence[str]) -> list[str]:
    """argv as a node runs it: the engine's interpreter becomes the node's python3 (its
    program's path is valid there: ENGINE_DIR is bound in)."""
    if argv and argv[0] == sys.executable:
        return [NODE_PYTHON, *argv[1:]]
    return list(argv)


def _killpg(p: subprocess.Popen[bytes], sig: int) -> None:
    try:
        os.killpg(p.pid, sig)
    except ProcessLookupError:
        pass


# -------------------------------------------------------------------- availability
def containerlab_status(docker: str = "docker", containerlab: str = "containerlab") -> tuple[bool, str]:
    """Whether this host can deploy labs with containerlab, and why not."""
    if shutil.which(containerlab) is None:
        return False, "no containerlab binary on PATH"
    if shutil.which(docker) is None:
        return False, "no docker client on PATH"
    try:
        ok = subprocess.run([docker, "version", "--format", "{{.Server.Version}}"], capture_output=True,
                            timeout=20).returncode == 0
    except subprocess.TimeoutExpired:
        ok = False
    if not ok:
        return False, "the Docker daemon does not answer"
    # measured (shared/MACHINE.md): deploy opens /proc/modules and stops without it
    if not Path("/proc/modules").exists():
        return False, "this kernel has no /proc/modules, which containerlab deploy needs"
    return True, "containerlab and Docker are usable"


# -------------------------------------------------------------------- cleanup
def lab_containers(lab: str | None = None, docker: str = "docker") -> list[tuple[str, str]]:
    """(container, lab) of containers carrying containerlab's lab label (of one lab)."""
    flt = f"label={LAB_LABEL}={lab}" if lab else f"label={LAB_LABEL}"
    try:
        p = subprocess.run([docker, "ps", "-a", "--filter", flt, "--format",
                            '{{.Names}}\t{{.Label "' + LAB_LABEL + '"}}'], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if p.returncode != 0:
        return []
    return [(n, lb) for n, _, lb in (line.partition("\t") for line in p.stdout.splitlines()) if n]


def remove_lab(lab: str, topology: Path | None, docker: str = "docker",
               containerlab: str = "containerlab") -> list[str]:
    """containerlab destroy (when it and the topology copy exist), then remove any
    container still labelled with the lab (a half-done deploy, or no containerlab).
    Returns the containers that existed."""
    names = [n for n, _ in lab_containers(lab, docker)]
    if topology is not None and topology.is_file() and shutil.which(containerlab):
        try:
            subprocess.run([containerlab, "destroy", "-t", str(topology), "--cleanup"], capture_output=True,
                           timeout=HOST_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            pass
    left = [n for n, _ in lab_containers(lab, docker)]
    if left:
        subprocess.run([docker, "rm", "-f", "-v", *left], capture_output=True, timeout=HOST_TIMEOUT_S)
    if topology is not None:
        # containerlab's lab directory, which destroy --cleanup removes when it runs
        shutil.rmtree(topology.parent / f"clab-{lab}", ignore_errors=True)
    return names


def clean(all_runs: bool = False, docker: str = "docker", containerlab: str = "containerlab") -> list[str]:
    """Remove the labs of runs whose process is gone (or every run's, with all_runs).
    Pre-created labs (deploy=False) belong to whoever made them and stay.

    Returns the containers removed."""
    removed: list[str] = []
    owned_alive: set[str] = set()
    done: set[str] = set()
    for st in run_states("clab-*.json", all_runs):
        lab = str(st.data.get("lab", ""))
        if st.live:
            owned_alive.add(lab)
            continue
        if st.data.get("owned") and lab:
            topo = Path(st.data["topology"]) if st.data.get("topology") else None
            removed += remove_lab(lab, topo, docker, containerlab)
            done.add(lab)
        st.path.unlink(missing_ok=True)
    if shutil.which(docker) is None:
        return removed
    orphans = sorted({lb for _, lb in lab_containers(None, docker)
                      if RUN_LAB_RE.match(lb)} - owned_alive - done)
    for lab in orphans:
        if not all_runs and owner_live(f"clab-{lab}"):
            continue  # a run that started after the state files above were read
        removed += remove_lab(lab, None, docker, containerlab)
    return removed
