"""A quick run of a lab started from a notebook cell, its progress lines shown as they come.

Where the engine can run, the cell runs ``mptcplab run labs/<lab> --quick`` as a subprocess
(an argument list, never a shell string): on a host with MPTCP, as root, that is the netns
backend; in the appliance VM's own Python environment it is the VM's engine. The Jupyter
image (docker compose, or the VM's Jupyter service) is an unprivileged container without
namespaces or the lab tools: there the cell runs nothing and prints the command that runs the
lab where it can run, so the notebook never pretends a run happened.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

#: set by images/jupyter/Dockerfile: this kernel runs in the analysis container
IN_IMAGE_ENV = "MPTCPLAB_JUPYTER_IMAGE"
MPTCP_ENABLED = Path("/proc/sys/net/mptcp/enabled")


@dataclass(frozen=True)
class QuickRunPlan:
    lab: str
    #: the command to execute here; None when the engine cannot run here (``reason`` says why)
    command: list[str] | None
    cwd: Path
    reason: str | None = None
    #: what to run elsewhere when it cannot run here
    elsewhere: str | None = None


def _engine_command() -> list[str]:
    # the console script of this environment when it is there; the module otherwise
    script = Path(sys.executable).with_name("mptcplab")
    if script.is_file():
        return [str(script)]
    found = shutil.which("mptcplab")
    return [found] if found else [sys.executable, "-m", "mptcplab.cli"]


def plan_quick_run(lab: str, root: Path, *, results: Path | None = None, extra: list[str] | None = None,
                   environ: dict[str, str] | None = None, euid: int | None = None,
                   mptcp_enabled: Path = MPTCP_ENABLED) -> QuickRunPlan:
    """Decide where the quick run of ``lab`` can happen and with which command."""
    env = os.environ if environ is None else environ
    uid = os.geteuid() if euid is None else euid
    make = f"make lab-{lab} RUN_ARGS=--quick"
    elsewhere = (f"on the host, in the checkout: `{make}` (it runs in the appliance VM when the VM is up, "
                 f"else on the host's netns backend); inside the VM: `cd /vagrant && sudo {make}`")
    if env.get(IN_IMAGE_ENV):
        return QuickRunPlan(lab, None, root, "this notebook runs in the Jupyter container, which cannot create "
                            "network namespaces or run the lab tools", elsewhere)
    lab_dir = root / "labs" / lab
    if not (lab_dir / "experiment.yml").is_file():
        return QuickRunPlan(lab, None, root, f"no lab at {lab_dir}", elsewhere)
    try:
        mptcp = mptcp_enabled.read_text().strip() == "1"
    except OSError:
        mptcp = False
    if not mptcp:
        return QuickRunPlan(lab, None, root, "this kernel has no MPTCP enabled (net.mptcp.enabled)", elsewhere)
    if uid != 0:
        return QuickRunPlan(lab, None, root, "a lab run needs root (namespaces, tc, nftables); this Jupyter "
                            "does not run as root", f"`sudo {make}` in the checkout")
    cmd = [*_engine_command(), "run", f"labs/{lab}", "--quick"]
    if results is not None:
        cmd += ["--results", str(results)]
    return QuickRunPlan(lab, cmd + list(extra or []), root)


def run_quick(lab: str, root: Path, *, results: Path | None = None, extra: list[str] | None = None,
              echo: Callable[[str], None] = print) -> int | None:
    """Run the quick run when it can happen here, echoing every line of its output as it comes
    (the engine's per-repetition progress lines); the exit status, or None when nothing ran."""
    plan = plan_quick_run(lab, root, results=results, extra=extra)
    if plan.command is None:
        echo(f"Not run here: {plan.reason}.")
        if plan.elsewhere:
            echo(f"Run it {plan.elsewhere}; then rerun the cells below.")
        return None
    echo("running: " + " ".join(plan.command))
    # unbuffered child: progress lines arrive when they are printed, not when a pipe buffer fills
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with subprocess.Popen(plan.command, cwd=plan.cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, bufsize=1, env=env) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            echo(line.rstrip("\n"))
        rc = proc.wait()
    echo(f"exit status {rc}" + ("" if rc == 0 else " (the lines above say why)"))
    return rc
