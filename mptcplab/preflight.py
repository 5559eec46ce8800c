"""What only the host can say about a lab, asked before anything is created.

`mptcplab validate` checks everything the lab files alone can answer; this module
checks what depends on the machine: the congestion controls and MPTCP schedulers the
kernel has (for the engine's own BPF congestion controls: whether they can be
registered), the sysctls a fresh network namespace has, the tools on PATH, root, and
whether the results directory can be created. `mptcplab run` (and its --dry-run) calls
`preflight` after loading the lab and before the first namespace; `mptcplab validate
--host` calls it too. Problems with a lab file's value are LabInputError naming the
file and field (exit 2); problems of the host itself are HostNotReady (exit 3).

The host is read once into `HostFacts`, so tests can ask the same questions of a
made-up host.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .cc import BPF_CCS
from .checks.counter import known as known_counter
from .checks.kernel_counters import RELEASE as COUNTERS_RELEASE
from .errors import HostNotReady, LabInputError
from .kernelreq import in_range
from .lab.loader import EXPERIMENT, PUBLISHED
from .lab.model import Lab, ScenarioRun
from .lab.network import BASE_SYSCTLS, ROUTER_SYSCTLS
from .middlebox import rewrite
from .probes.registry import REGISTRY as PROBES
from .probes.registry import enabled as enabled_probes
from .record.counters import PROBE as COUNTER_PROBE
from .timeline.upm_tool import flag_problem
from .traffic.kinds import KINDS

PROC_SYS = Path("/proc/sys")
#: the kernel's extended MIB counters (TcpExt, MPTcpExt, IpExt, ...), read by nstat
PROC_NETSTAT = Path("/proc/net/netstat")
#: tools every run executes, with the Debian package that has them
TOOLS = {"ip": "iproute2", "tc": "iproute2", "sysctl": "procps", "ping": "iputils-ping", "iperf3": "iperf3",
         "tcpdump": "tcpdump", "tshark": "tshark", "nft": "nftables", "iptables": "iptables", "ethtool": "ethtool"}
#: tools some traffic kind runs (traffic/<kind>.py ``tools``), checked when a lab uses it
KIND_TOOLS = {t: p for k in KINDS.values() for t, p in k.tools.items()}
#: tools the probes run (probes/<probe>.py ``tools``), checked only for scenarios that turn that probe on
PROBE_TOOLS = {t: p for cls in PROBES.values() for t, p in cls.tools.items()}
# interface-specific sysctl directories: the interface does not exist yet when the
# preflight runs, so the key is checked under "default", which every interface copies
_PER_IFACE = re.compile(r"^(net\.ipv[46]\.(?:conf|neigh))\.([^.]+)\.(.+)$")

Problem = LabInputError | HostNotReady


def _words(path: Path) -> frozenset[str] | None:
    try:
        return frozenset(path.read_text().split())
    except OSError:
        return None


def _sysctl_names(fresh_namespace: bool) -> frozenset[str] | None:
    """Every sysctl name visible in a new network namespace (`unshare --net`, which
    leaves nothing behind: the namespace dies with the process), or in this one."""
    argv = ["sysctl", "-a", "-N"]
    if fresh_namespace:
        argv = ["unshare", "--net", "--", *argv]
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    names = frozenset(line.strip() for line in p.stdout.splitlines() if line.strip())
    return names or None


@dataclass(frozen=True)
class HostFacts:
    euid: int
    congestion_controls: frozenset[str] | None  # None: could not be read, not checked
    schedulers: frozenset[str] | None
    sysctls: frozenset[str] | None
    tools: frozenset[str] = field(default_factory=frozenset)  # those found on PATH
    #: tracepoints under tracefs as "group/event"; None: tracefs not mounted (a run mounts it), not checked
    tracepoints: frozenset[str] | None = None
    #: the engine's own congestion controls (cc/), each with why it cannot be registered
    #: here (None: it can, or it is registered already); a name not in it is not checked
    engine_ccs: dict[str, str | None] = field(default_factory=dict)
    #: the kernel's MPTcpExt*/TcpExt* MIB counter names (/proc/net/netstat, what nstat lists);
    #: None: could not be read, not checked
    counters: frozenset[str] | None = None
    #: the kernel release (``uname -r``), for findings that require a kernel range
    release: str = ""

    @classmethod
    def read(cls) -> HostFacts:
        euid = os.geteuid()
        sysctls = _sysctl_names(fresh_namespace=euid == 0)
        if sysctls is None and euid == 0:
            sysctls = _sysctl_names(fresh_namespace=False)
        return cls(
            euid=euid,
            congestion_controls=_words(PROC_SYS / "net/ipv4/tcp_available_congestion_control"),
            schedulers=_words(PROC_SYS / "net/mptcp/available_schedulers"),
            sysctls=sysctls,
            tools=frozenset(t for t in {*TOOLS, *KIND_TOOLS, *PROBE_TOOLS, "mptcpize", "unshare"}
                            if shutil.which(t)),
            tracepoints=_tracepoints(),
            # root is checked on its own below (a dry run needs none)
            engine_ccs={name: cc.problem(euid=0) for name, cc in BPF_CCS.items()},
            counters=counter_names(PROC_NETSTAT),
            release=os.uname().release,
        )


def counter_names(path: Path) -> frozenset[str] | None:
    """The MIB counters a kernel has, named as nstat names them (``MPTcpExtRmAddr``): each
    ``Family: name name ...`` header line of /proc/net/netstat, prefix joined to each name."""
    try:
        text = path.read_text()
    except OSError:
        return None
    out: set[str] = set()
    lines = text.splitlines()
    # header and values alternate; the header is the line whose words are not numbers
    for line in lines[0::2]:
        family, _, names = line.partition(":")
        out.update(f"{family.strip()}{n}" for n in names.split())
    return frozenset(out) or None


def _tracepoints() -> frozenset[str] | None:
    from .probes.tracefs import TRACEFS

    events = TRACEFS / "events"
    try:
        return frozenset(f"{g.name}/{e.name}" for g in events.iterdir() if g.is_dir() for e in g.iterdir()
                         if e.is_dir())
    except OSError:
        return None


def sysctl_lookup_name(key: str) -> str:
    """The name to look for in a fresh namespace: slashes as dots, an interface's
    directory as 'default'."""
    name = key.replace("/", ".")
    m = _PER_IFACE.match(name)
    if m and m.group(2) not in ("all", "default"):
        name = f"{m.group(1)}.default.{m.group(3)}"
    return name


def _scenario_checks(file: str, sc: ScenarioRun, facts: HostFacts) -> Iterable[Problem]:
    body = sc.body
    tag = f" (scenario {sc.name})"
    for fname, flow in body.traffic.flows.items():
        cc = getattr(flow, "cc", None)  # iperf3 and latency flows
        if cc in BPF_CCS:  # the engine registers it for the run (cc/): can it, here?
            why = facts.engine_ccs.get(cc)
            if why:
                yield LabInputError(file, f"traffic.flows.{fname}.cc", f"cannot be used on this host: {why}{tag}")
            continue
        if cc and facts.congestion_controls is not None and cc not in facts.congestion_controls:
            have = " ".join(sorted(facts.congestion_controls))
            yield LabInputError(file, f"traffic.flows.{fname}.cc",
                                f"congestion control {cc!r} is not in this kernel "
                                f"(tcp_available_congestion_control: {have}){tag}")
    keyed: list[tuple[str, str]] = [(f"sysctls.{k}", k) for k in body.sysctls]
    for name, spec in body.nodes.items():
        keyed += [(f"nodes.{name}.sysctls.{k}", k) for k in spec.sysctls]
        mp = spec.mptcp
        if mp and mp.scheduler and facts.schedulers is not None and mp.scheduler not in facts.schedulers:
            yield LabInputError(file, f"nodes.{name}.mptcp.scheduler",
                                f"scheduler {mp.scheduler!r} is not in this kernel (net.mptcp.available_schedulers: "
                                f"{' '.join(sorted(facts.schedulers))}){tag}")
        if mp and mp.path_manager and facts.sysctls is not None and "net.mptcp.pm_type" not in facts.sysctls:
            yield LabInputError(file, f"nodes.{name}.mptcp.path_manager",
                                f"this kernel has no net.mptcp.pm_type to choose a path manager with{tag}")
        for j, ep in enumerate(mp.endpoints if mp else []):
            why = flag_problem(",".join(ep.flags), facts.release) if facts.release else None
            if why:
                yield LabInputError(file, f"nodes.{name}.mptcp.endpoints[{j}].flags", why + tag)
    for j, ev in enumerate(body.traffic.events):
        flags = getattr(ev, "flags", None)
        why = flag_problem(",".join(flags), facts.release) if isinstance(flags, list) and facts.release else None
        if why:
            yield LabInputError(file, f"traffic.events[{j}].flags", why + tag)
    if facts.sysctls is not None:
        for fld, key in keyed:
            if sysctl_lookup_name(key) not in facts.sysctls:
                yield LabInputError(file, fld, f"no sysctl {key} in a network namespace of this kernel{tag}")


def _results_problem(root: Path) -> Problem | None:
    """Whether root (the --results directory) exists as a writable directory or can be
    created: the nearest existing ancestor must be a writable directory."""
    try:
        return _results_problem_at(root)
    except PermissionError as e:  # an ancestor we may not even look into
        return LabInputError("command line", "--results", f"cannot create {root}: {e.strerror}: {e.filename}")


def _results_problem_at(root: Path) -> Problem | None:
    p = root
    while not p.exists() and not p.is_symlink():
        if p.parent == p:
            break
        p = p.parent
    if p.is_symlink() and not p.exists():
        return LabInputError("command line", "--results", f"{p} is a dangling symbolic link")
    if not p.is_dir():
        return LabInputError("command line", "--results", f"cannot create {root}: {p} is not a directory")
    if not os.access(p, os.W_OK | os.X_OK):
        why = "Read-only file system" if os.statvfs(p).f_flag & os.ST_RDONLY else "not writable"
        what = f"is not writable ({why})" if p == root else f"cannot be created: {p} is not writable ({why})"
        return LabInputError("command line", "--results", f"results directory {root} {what}")
    return None


def preflight(lab: Lab, scenarios: Sequence[ScenarioRun], *, results_root: Path | None = None,
              dry_run: bool = False, facts: HostFacts | None = None) -> list[Problem]:
    """Every problem the host shows for running ``scenarios`` of ``lab``, first the
    lab's values, then the host's; empty when it can run. A dry run needs neither
    root nor a results directory."""
    facts = facts or HostFacts.read()
    file = str(lab.path / EXPERIMENT)
    problems: list[Problem] = []
    seen: set[str] = set()
    for sc in scenarios:
        for p in _scenario_checks(file, sc, facts):
            # the same base value fails in every scenario: report it once
            key = f"{getattr(p, 'field', '')}|{getattr(p, 'problem', '').rsplit(' (scenario', 1)[0]}"
            if key not in seen:
                seen.add(key)
                problems.append(p)
    problems += counter_problems(lab, scenarios, facts)
    if facts.sysctls is not None:
        for key in sorted({*BASE_SYSCTLS, *ROUTER_SYSCTLS}):
            if sysctl_lookup_name(key) not in facts.sysctls:
                problems.append(HostNotReady(f"this kernel has no sysctl {key}, which every lab sets"))
    if not dry_run:
        if facts.euid != 0:
            problems.append(HostNotReady("mptcplab run creates network namespaces, qdiscs and firewall rules: "
                                         "run as root"))
        for tool, pkg in TOOLS.items():
            if tool not in facts.tools:
                problems.append(HostNotReady(f"{tool} not found on PATH (apt-get install {pkg})"))
        kinds = {f.kind for sc in scenarios for f in sc.body.traffic.flows.values()}
        for tool, pkg in sorted({t: p for k in kinds for t, p in KINDS[k].tools.items()}.items()):
            if tool not in facts.tools:
                problems.append(HostNotReady(f"{tool} not found on PATH (apt-get install {pkg}), "
                                             "which this lab's traffic kinds run"))
        problems += [HostNotReady(why) for k in sorted(kinds) if (why := KINDS[k].host_problem())]
        problems += _probe_problems(scenarios, facts)
        if any(rewrite.boxes(sc.body) for sc in scenarios):
            try:
                rewrite.binary()
            except HostNotReady as e:
                problems.append(e)
        if results_root is not None:
            bad = _results_problem(results_root) or _results_problem(results_root / lab.name)
            if bad:
                problems.append(bad)
    return problems


def counter_problems(lab: Lab, scenarios: Sequence[ScenarioRun], facts: HostFacts) -> list[LabInputError]:
    """published.yml's counter checks against this host and lab: the counter is one this
    kernel or Linux 6.18 has (checks/counter.known: one only 6.18 has is skipped on this
    kernel when judged, not refused; a finding that requires another kernel range is left
    out), the node is one of the lab's, and every scenario to run that the check reads records the counters
    (``probes: {nstat: true}``). One problem per check, naming the file and field."""
    if lab.published is None:
        return []
    file = str(lab.path / PUBLISHED)
    running = {sc.name: sc for sc in scenarios}
    nodes = set(lab.topology.topology.nodes)
    out: list[LabInputError] = []
    for place, finding in lab.published.located_findings():
        req = finding.requires
        if req is not None and req.kernel and facts.release and in_range(facts.release, req.kernel) is False:
            continue  # judged "not measurable" on this kernel: its counters need not exist here
        for where, check in finding.located():
            for use in check.counter_uses():
                fld = f"{place}.{where}"
                if use.node not in nodes:
                    out.append(LabInputError(file, f"{fld}.node", f"no node {use.node!r} in the topology "
                                             f"(nodes: {', '.join(sorted(nodes))})"))
                elif facts.counters is not None and not known_counter(use.counter, facts.counters):
                    # a counter of 6.18 this older kernel lacks is skipped when judged (checks/counter.py)
                    fam = use.counter.split("Ext", 1)[0] + "Ext"
                    known = sum(1 for c in facts.counters if c.startswith(fam))
                    out.append(LabInputError(file, f"{fld}{use.field}", f"this kernel ({facts.release or '?'}) "
                                             f"has no counter {use.counter}, nor has Linux {COUNTERS_RELEASE} "
                                             f"({PROC_NETSTAT} lists {known} {fam}* counters; nstat -az shows "
                                             "them; mptcplab/checks/kernel_counters.py the 6.18 ones)"))
                else:
                    for name in check.scenarios(finding.scenario):
                        sc = running.get(name)
                        if sc is not None and COUNTER_PROBE not in {p.name for p in enabled_probes(sc.body)}:
                            out.append(LabInputError(file, f"{fld}{use.field}", f"{use.counter} is read from the "
                                                     f"{COUNTER_PROBE} probe, which scenario {name} does not run "
                                                     f"(experiment.yml: probes: {{{COUNTER_PROBE}: true}})"))
                            break
    return out


def _probe_problems(scenarios: Sequence[ScenarioRun], facts: HostFacts) -> list[Problem]:
    """What the probes the scenarios turn on need from the host."""
    wanted = {cls.name: cls for sc in scenarios for cls in enabled_probes(sc.body)}
    out: list[Problem] = []
    for name, cls in sorted(wanted.items()):
        for tool, pkg in sorted(cls.tools.items()):
            if tool not in facts.tools:
                out.append(HostNotReady(f"{tool} not found on PATH (apt-get install {pkg}); probes.{name} needs it"))
        for tp in cls.tracepoints:
            if facts.tracepoints is not None and tp not in facts.tracepoints:
                out.append(HostNotReady(f"this kernel has no tracepoint {tp.replace('/', ':')}, which "
                                        f"probes.{name} reads"))
    return out


def check(lab: Lab, scenarios: Sequence[ScenarioRun], **kwargs: object) -> None:
    """Raise the first problem `preflight` finds (lab-file problems first)."""
    problems = preflight(lab, scenarios, **kwargs)  # type: ignore[arg-type]
    if problems:
        raise problems[0]


@dataclass(frozen=True)
class Reach:
    """The reachability preflight's outcome: the lab to run (scaled as decided), what to
    print before measuring, and the coded warnings the results must carry."""

    lab: Lab
    lines: list[str]
    warnings: list[dict[str, str]]
    #: manifest.json's ``reachability``: verdict, suggested factor, the estimate's lines
    record: dict[str, object]


def reachability(lab: Lab, scenario_names: Sequence[str] | None, emulator: str, scale_arg: str | None,
                 cpus: int | None = None, scale_note: str | None = None) -> Reach:
    """Estimate whether this machine carries the lab's links (emulation/capacity.py) and
    settle the scale factor: ``--scale F`` wins, ``--scale auto`` takes the factor the
    estimate suggests for the lab as written, otherwise the lab's own ``scale`` (which
    load_lab has applied already). The
    verdict is then given for the links as they will run (scaled); what is marginal or
    beyond becomes a coded warning of the run, never a silent bad run."""
    from .lab.machinefit import lab_estimate, run_warnings, verdict_text
    from .lab.scale import apply_scale, manifest_record, parse_scale_arg

    def chosen(lb: Lab) -> list[ScenarioRun]:
        return [s for s in lb.scenarios if not scenario_names or s.name in scenario_names]

    if scale_arg is not None:
        factor = parse_scale_arg(scale_arg)
        if factor is None:  # auto: from the lab as written
            base = apply_scale(lab, 1.0, "none")
            factor = lab_estimate(base, chosen(base), emulator, cpus).suggested_factor
            lab = apply_scale(lab, factor, "auto")
        else:
            lab = dataclasses.replace(apply_scale(lab, factor, "command line"), scale_note=scale_note)
    est = lab_estimate(lab, chosen(lab), emulator, cpus)
    lines = verdict_text(est, lab.scale)
    if lab.scale != 1:
        rec = manifest_record(lab)
        unscaled = rec["unscaled_fields"]
        lines[:0] = [f"scale {lab.scale:g} ({lab.scale_source}): {rec['scaled']} ×{lab.scale:g}, delays unchanged; "
                     "goodput is reported scaled"]
        if unscaled:
            lines.insert(1, f"  not scaled (sized for the unscaled rates; scale them in the lab if they matter): "
                            f"{', '.join(unscaled)}")
    record: dict[str, object] = {"verdict": est.verdict, "emulator": emulator,
                                 "suggested_factor": est.suggested_factor * lab.scale, "lines": est.lines()}
    return Reach(lab, lines, run_warnings(est, lab.scale), record)
