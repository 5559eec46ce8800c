"""`mptcplab doctor`: what the labs need and what this host has."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .cc import BPF_CCS
from .emulation.base import delayline_binary
from .emulation.hostprobe import netem_available
from .errors import HostNotReady
from .lab.model import Lab
from .runstate import recorded_namespaces
from .traffic.iperf3 import iperf3_has_multipath

TRACEFS = Path("/sys/kernel/tracing")


@dataclass(frozen=True)
class Item:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    required: bool = True  # for the netns labs on this host


def _probe_ns(*argvs: list[str]) -> bool:
    """Run commands in a throwaway namespace; true if all succeed. Always cleans up."""
    ns = f"mpltdoc{secrets.token_hex(3)}"
    with recorded_namespaces(ns, [ns]):  # a kill mid-probe leaves it to `mptcplab clean`
        if subprocess.run(["ip", "netns", "add", ns], capture_output=True).returncode != 0:
            return False
        try:
            return all(subprocess.run(["ip", "netns", "exec", ns, *a], capture_output=True).returncode == 0
                       for a in argvs)
        finally:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def _tool(name: str, fix: str, required: bool = True, detail: str = "") -> Item:
    path = shutil.which(name)
    return Item(name, path is not None, detail or (path or "not found"), fix if path is None else "", required)


def checks() -> list[Item]:
    items: list[Item] = []
    items.append(Item("root", os.geteuid() == 0, f"euid {os.geteuid()}", "run as root (namespaces, tc, nft)"))
    try:
        en = Path("/proc/sys/net/mptcp/enabled").read_text().strip()
    except OSError:
        en = None
    items.append(Item("MPTCP in the kernel", en == "1", f"net.mptcp.enabled = {en}" if en else "no /proc/sys/net/mptcp",
                      "a kernel with CONFIG_MPTCP=y and sysctl net.mptcp.enabled=1"))
    for t, pkg in (("ip", "iproute2"), ("tc", "iproute2"), ("ss", "iproute2"), ("ping", "iputils-ping"),
                   ("nft", "nftables"), ("iptables", "iptables"), ("ethtool", "ethtool"), ("tcpdump", "tcpdump"),
                   ("tshark", "tshark"), ("iperf3", "iperf3")):
        items.append(_tool(t, f"apt-get install {pkg}"))
    mp = shutil.which("iperf3") is not None and iperf3_has_multipath()
    items.append(_tool("mptcpize", "apt-get install mptcpize", required=not mp,
                       detail="iperf3 has -m; not needed" if mp else ""))
    items.append(Item("iperf3 -m (multipath)", mp, "yes" if mp else "no: iperf3 < 3.19, MPTCP through mptcpize",
                      required=False))
    tbf = _probe_ns(["tc", "qdisc", "add", "dev", "lo", "root", "tbf", "rate", "10mbit", "burst", "32k",
                     "limit", "64k"])
    items.append(Item("tc tbf (rate)", tbf, "works" if tbf else "unknown qdisc", "a kernel with CONFIG_NET_SCH_TBF"))
    htb = _probe_ns(["tc", "qdisc", "add", "dev", "lo", "root", "handle", "1:", "htb"])
    items.append(Item("tc htb", htb, "works" if htb else "unknown qdisc", required=False))
    netem = netem_available()
    items.append(Item("tc netem (delay)", netem,
                      "works" if netem else "not in this kernel: delay by the NFQUEUE delay line", required=False))
    nfq = _probe_ns(["iptables", "-t", "mangle", "-A", "PREROUTING", "-i", "lo", "-j", "NFQUEUE",
                     "--queue-num", "7"])
    items.append(Item("NFQUEUE", nfq, "works" if nfq else "not available",
                      "a kernel with CONFIG_NETFILTER_NETLINK_QUEUE and xt_NFQUEUE", required=not netem))
    try:
        dl = delayline_binary()
        dl_ok, dl_detail = True, str(dl)
    except HostNotReady as e:
        dl_ok, dl_detail = False, str(e)
    items.append(Item("delay line (native)", dl_ok, dl_detail, "make -C native", required=not netem))
    tp = (TRACEFS / "events/tcp/tcp_probe").is_dir()
    items.append(Item("tracepoint tcp:tcp_probe", tp, "present" if tp else f"not under {TRACEFS}",
                      "mount -t tracefs nodev /sys/kernel/tracing", required=False))
    mt = (TRACEFS / "events/mptcp").is_dir()
    items.append(Item("tracepoints mptcp:*", mt, "present" if mt else f"not under {TRACEFS}", required=False))
    for cc in BPF_CCS.values():  # the engine's own congestion controls (docs/cc-lia.md)
        why = cc.problem()
        items.append(Item(f"{cc.name} (BPF struct_ops)", why is None,
                          ("registered now" if cc.registered() else f"can be registered: {cc.object_path}")
                          if why is None else why, "make -C native bpf (clang llvm libbpf-dev bpftool)",
                          required=False))
    for t, fix in (("docker", "apt-get install docker.io"), ("containerlab", "see docs/appliance.md"),
                   ("vagrant", "apt-get install vagrant")):
        items.append(_tool(t, fix, required=False))
    items.append(Item("link emulator", True, "netem" if netem else ("nfqueue" if nfq and dl_ok else "none")))
    return items


def lab_needs(lab: Lab, items: list[Item]) -> list[str]:
    """What this lab needs that the host lacks, one line each with the fix."""
    have = {i.name: i for i in items}
    problems = [f"{i.name}: {i.detail} (fix: {i.fix})" for i in items if i.required and not i.ok]
    needs_delay = any(d.get(k) for sc in lab.scenarios for link in sc.body.links.values()
                      for d in (link.direction("egress"), link.direction("ingress"))
                      for k in ("delay", "jitter", "loss"))
    if needs_delay and not have["tc netem (delay)"].ok and not (have["NFQUEUE"].ok and have["delay line (native)"].ok):
        problems.append("link delay/loss: neither netem nor the NFQUEUE delay line is usable (fix: make -C native)")
    return problems


def render(items: list[Item]) -> str:
    w = max(len(i.name) for i in items)
    lines = []
    for i in items:
        mark = "ok " if i.ok else ("MISSING" if i.required else "no ")
        fix = f"   -> {i.fix}" if (i.fix and not i.ok) else ""
        lines.append(f"{mark:7} {i.name:<{w}}  {i.detail}{fix}")
    return "\n".join(lines)


def reachability(items: list[Item], lab: Lab | None = None, cpus: int | None = None) -> list[str]:
    """Whether this machine's link emulation carries the lab's links (or, without a lab,
    the papers' configurations), with the scale factor that would fit (emulation/capacity.py)."""
    from .lab.machinefit import lab_estimate, paper_estimates
    from .lab.scale import nice_factor_at_most
    from .units import fmt_factor

    emulator = next((i.detail for i in items if i.name == "link emulator"), "nfqueue")
    if emulator == "none":
        emulator = "nfqueue"  # what a run would use once the delay line is built
    out = [f"reachability estimate ({emulator}; model and limits: mptcplab/emulation/capacity.py):"]
    if lab is not None:
        est = lab_estimate(lab, lab.scenarios, emulator, cpus)
        scaled = f", as scaled {fmt_factor(lab.scale)} by the lab" if lab.scale != 1 else ""
        out.append(f"lab {lab.name}{scaled}: {est.verdict}")
        out += [f"  {line}" for line in est.lines()]
        if est.suggested_factor != 1:
            out.append(f"  fits at: --scale {est.suggested_factor * lab.scale:g}")
        return out
    for label, e in paper_estimates(emulator, cpus):
        fit = "" if e.fit_factor >= 1 else f"; fits at --scale {nice_factor_at_most(e.fit_factor):g}"
        out.append(f"{label} ({e.links[0].name} one way): {e.verdict}{fit}")
        out += [f"  {line}" for line in e.lines()]
    return out
