"""The target kinds: how one work item runs on its target. Each kind generates the item's
exact command and the files it writes first (generation only: `campaign --dry-run` prints
them) and has lifecycle hooks that executor.py calls around the command: host_problem()
once before the campaign runs, prepare() before each item.

local: `mptcplab run` as a child process with the item's own results root.
ansible: ansible-playbook with ansible/campaign-item.yml limited to the item's host (the
target's, or the host of its pool the item runs on: pool.py); the playbook syncs this
checkout and the lab there, runs the same `mptcplab run` argument list with
ansible.builtin.command (no shell), and pulls the item's results root back.
qemu: images/kernel/qemu-run.sh boots the target's kernel (its packages directory) with this
host's root file system read-only and runs the same `mptcplab run` in it; the guest writes
the item's results root directly (qemu-run.sh --out), so there is nothing to fetch back.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, ClassVar

from ..record import store
from .debs import QEMU_RUN, REPO, read_packages
from .planner import WorkItem
from .schema import Target

PLAYBOOK = REPO / "ansible" / "campaign-item.yml"
#: a stopped item's host made clean: its engine stopped, `mptcplab clean`, its directory removed
STOP_PLAYBOOK = REPO / "ansible" / "campaign-stop.yml"
#: `campaign --provision`: the roles a campaign host needs (packages, kernel, sysctls, the engine)
PROVISION_PLAYBOOK = REPO / "ansible" / "campaign-host.yml"
#: ansible-playbook's recap line: "host : ok=5 changed=2 unreachable=1 failed=0 ..."
RECAP_UNREACHABLE = re.compile(r"^\S+\s+:\s+ok=\d+\s+changed=\d+\s+unreachable=(\d+)", re.M)
#: campaign-item.yml's rescue, when a task failed and the host no longer answers (a connection
#: that reports a vanished host as a failed task rather than unreachable: docker exec)
HOST_LOST = "mptcplab: host lost while the item ran"
#: under each item directory: the engine's --results root (results/<lab>/<run-id>/)
RESULTS = "results"
#: what qemu-run.sh's guest mounts fresh (tmpfs): a lab under them is shared into the guest
GUEST_TMPFS = ("/tmp", "/run", "/var/tmp", "/dev/shm")


def engine_args(item: WorkItem, lab_arg: str, results_arg: str) -> list[str]:
    """`mptcplab run` arguments of an item (after the program)."""
    args = ["run", lab_arg, "--reps", "1", "--backend", "netns", "--results", results_arg]
    if item.subset is not None:
        # the engine selects the subset's scenarios itself and records the subset (manifest
        # `subset`); --reps 1 overrides its repetitions: the campaign's rounds repeat it
        args += ["--subset", item.subset]
    for s in item.scenarios if item.subset is None else ():
        args += ["--scenario", s]
    if item.run.quick:
        args.append("--quick")
    if item.run.no_calibrate:
        args.append("--no-calibrate")
    if item.target.kind == "qemu":
        # the guest's CPU is emulated: a big lab's figures take longer than its cases, and the
        # records keep none (`mptcplab report` draws them from the kept files)
        args.append("--no-figures")
    if item.run.emulation:
        args += ["--emulation", item.run.emulation]
    if item.run.scale is not None:
        args += ["--scale", f"{item.run.scale:g}"]
        if item.run.scale_reason:
            args += ["--scale-reason", item.run.scale_reason]
    return args


class TargetKind(ABC):
    """One kind of target. Generation (argv, files, record) is pure; the hooks act."""

    name: ClassVar[str]

    def __init__(self, inventory: Path | None = None) -> None:
        self.inventory = inventory

    @abstractmethod
    def argv(self, item: WorkItem, item_dir: Path) -> list[str]:
        """The item's exact command."""

    def files(self, item: WorkItem, item_dir: Path) -> dict[str, dict[str, Any]]:
        """Files written into the item directory before the command (name -> JSON)."""
        return {}

    def record(self, t: Target) -> dict[str, Any]:
        """What campaign.json records of the target beyond its name, kind and description (the
        dry run prints it)."""
        return {}

    def host_problem(self, items: list[WorkItem]) -> str | None:
        """What would make every item of this kind fail, said once before anything runs."""
        return None

    def host_lost(self, rc: int, output: str) -> str | None:
        """Why the item's host was lost while it ran (it cannot take more items now: the
        item goes to another host of its pool), from the command's exit status and output;
        None when the host answered (a failed or incomplete run is the item's own)."""
        return None

    def stop_argv(self, item: WorkItem, item_dir: Path) -> list[str] | None:
        """What leaves the item's host clean after its command was stopped (run once that
        command has exited); None when the command does it itself (local and qemu: the
        engine, or the guest, is the command's own process and tears its run down)."""
        return None

    def prepare(self, item: WorkItem, item_dir: Path) -> None:
        for name, data in self.files(item, item_dir).items():
            store.write_json(item_dir / name, data)


class Local(TargetKind):
    name = "local"

    def argv(self, item: WorkItem, item_dir: Path) -> list[str]:
        return [sys.executable, "-m", "mptcplab.cli", *engine_args(item, str(item.lab_dir), str(item_dir / RESULTS))]

    def host_problem(self, items: list[WorkItem]) -> str | None:
        return "local targets run labs (network namespaces, qdiscs): run as root" if os.geteuid() != 0 else None


class Ansible(TargetKind):
    name = "ansible"

    def vars(self, item: WorkItem, item_dir: Path) -> dict[str, Any]:
        """The playbook's extra variables (written to ansible-vars.json in the item directory)."""
        return {
            "campaign_target": item.target.name,
            "campaign_item": item.id,
            "campaign_checkout": str(REPO),
            "campaign_lab_src": str(item.lab_dir),
            "campaign_lab_name": item.lab,
            "campaign_local_results": str((item_dir / RESULTS).resolve()),
            # where the lab and results live on the target is the playbook's business: the
            # engine's arguments name them by the placeholders it fills in
            "campaign_engine_args": engine_args(item, "@LAB@", "@RESULTS@"),
        }

    def files(self, item: WorkItem, item_dir: Path) -> dict[str, dict[str, Any]]:
        return {"ansible-vars.json": self.vars(item, item_dir)}

    def argv(self, item: WorkItem, item_dir: Path) -> list[str]:
        assert self.inventory is not None  # the schema requires an inventory with ansible targets
        return ["ansible-playbook", "-i", str(self.inventory), str(PLAYBOOK), "--limit", item.host,
                "-e", f"@{item_dir / 'ansible-vars.json'}"]

    def stop_argv(self, item: WorkItem, item_dir: Path) -> list[str] | None:
        # the item's own variables file: the same host, target, item and results paths
        assert self.inventory is not None
        return ["ansible-playbook", "-i", str(self.inventory), str(STOP_PLAYBOOK), "--limit", item.host,
                "-e", f"@{item_dir / 'ansible-vars.json'}"]

    def provision_argv(self, t: Target) -> list[str]:
        """`campaign --provision`: the playbook run that makes the target's hosts ready (its
        roles are idempotent: a provisioned host reports no change)."""
        assert self.inventory is not None
        return ["ansible-playbook", "-i", str(self.inventory), str(PROVISION_PLAYBOOK),
                "--limit", ",".join(h for h in t.hosts), "-e", f"campaign_target={t.name}",
                "-e", f"campaign_checkout={REPO}"]

    def record(self, t: Target) -> dict[str, Any]:
        where: dict[str, Any] = {"pool": list(t.pool)} if t.pool else {"host": t.inventory_host}
        return {**where, **({"expect": t.expect.model_dump(exclude_none=True)} if t.expect else {})}

    def host_lost(self, rc: int, output: str) -> str | None:
        # ansible-playbook's status 4 is "unreachable hosts" (its TaskQueueManager), and the
        # recap line counts them: either says the connection, not the item, failed
        unreachable = [int(n) for n in RECAP_UNREACHABLE.findall(output)]
        if rc == 4 or any(unreachable):
            lines = [x.strip() for x in output.splitlines() if "UNREACHABLE!" in x]
            return "unreachable" + (f": {lines[-1][:300]}" if lines else f" (ansible-playbook exit {rc})")
        lost = [x.strip() for x in output.splitlines() if HOST_LOST in x]
        if lost:
            return f"unreachable (lost while the item ran): {lost[-1][:300]}"
        return None

    def host_problem(self, items: list[WorkItem]) -> str | None:
        if shutil.which("ansible-playbook") is None:
            return "ansible targets need ansible-playbook (Debian package ansible)"
        return None


class Qemu(TargetKind):
    name = "qemu"

    def argv(self, item: WorkItem, item_dir: Path) -> list[str]:
        t = item.target
        assert t.debs is not None  # the schema requires debs with kind qemu
        results = str((item_dir / RESULTS).resolve())
        # env -C: the guest runs the command in qemu-run.sh's directory, and `python -m`
        # imports mptcplab from there: this checkout, which the guest sees read-only
        argv = ["env", "-C", str(REPO), str(QEMU_RUN), "--debs", t.debs, "--out", results]
        for flag, v in (("--accel", t.accel), ("--mem", t.mem), ("--timeout", t.timeout)):
            if v is not None:
                argv += [flag, str(v)]
        if any(item.lab_dir.is_relative_to(d) for d in GUEST_TMPFS):
            # the guest mounts fresh tmpfs there: the lab goes along, read-only (the checkout
            # does by itself: qemu-run.sh shares its own repository when it lies under one)
            argv += ["--share", str(item.lab_dir)]
        return [*argv, "--", sys.executable, "-m", "mptcplab.cli", *engine_args(item, str(item.lab_dir), results)]

    def record(self, t: Target) -> dict[str, Any]:
        assert t.debs is not None
        return {"debs": t.debs, "release": read_packages(Path(t.debs)).release}

    def host_problem(self, items: list[WorkItem]) -> str | None:
        if os.geteuid() != 0:
            return "qemu targets boot kernels under QEMU (images/kernel/qemu-run.sh): run as root"
        return None


KINDS: dict[str, type[TargetKind]] = {k.name: k for k in (Local, Ansible, Qemu)}


def kind_of(t: Target, inventory: Path | None = None) -> TargetKind:
    return KINDS[t.kind](inventory)


def ansible_vars(item: WorkItem, item_dir: Path) -> dict[str, Any]:
    return Ansible().vars(item, item_dir)
