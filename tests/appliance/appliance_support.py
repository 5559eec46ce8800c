"""Helpers of the appliance checks (tests/appliance): commands, Docker, the run's
resources. Kept out of conftest.py so that test modules import them by a unique name."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("MPTCPLAB_CACHE", "/var/cache/mptcplab"))
PRODUCT_IMAGES = ("mptcplab/host:latest", "mptcplab/router:latest", "mptcplab/jupyter:latest")
BASE_IMAGE = "mptcplab/debian-base:bookworm"
STALE_AFTER_S = 3 * 3600


def run(cmd: list[str] | str, *, check: bool = True, timeout: float = 600, env: dict | None = None,
        cwd: Path | str | None = REPO, input: str | None = None) -> subprocess.CompletedProcess:
    """Run a command, capturing its output; on failure the output is in the assertion."""
    full_env = {**os.environ, **(env or {})}
    p = subprocess.run(cmd, shell=isinstance(cmd, str), cwd=cwd, env=full_env, input=input,
                       capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"{cmd!r} exited {p.returncode}\n--- stdout\n{p.stdout[-6000:]}\n"
                             f"--- stderr\n{p.stderr[-6000:]}")
    return p


def docker(*args: str, check: bool = True, timeout: float = 600,
           input: str | None = None) -> subprocess.CompletedProcess:
    return run(["docker", *args], check=check, timeout=timeout, input=input)


def docker_ok() -> bool:
    return shutil.which("docker") is not None and run(["docker", "version"], check=False, timeout=60).returncode == 0


_PRIV_ARGS: list[str] | None = None


def privileged_args() -> list[str]:
    """What containerlab gives a node (--privileged), or the nearest this machine allows.

    Here the container runtime may not grant every capability (CAP_SYS_RESOURCE is missing
    from the sandbox's bounding set), and `docker run --privileged` then fails; the stand-in
    has every other capability, no seccomp/AppArmor profile and writable /proc/sys.
    """
    global _PRIV_ARGS
    if _PRIV_ARGS is None:
        p = run(["docker", "run", "--rm", "--privileged", "--network", "none", BASE_IMAGE, "true"],
                check=False, timeout=120)
        if p.returncode == 0:
            _PRIV_ARGS = ["--privileged"]
        else:
            _PRIV_ARGS = ["--cap-add", "ALL", "--cap-drop", "SYS_RESOURCE",
                          "--security-opt", "seccomp=unconfined", "--security-opt", "apparmor=unconfined",
                          "--security-opt", "systempaths=unconfined"]
    return _PRIV_ARGS


class Resources:
    """Docker objects of this run, removed at the end of the session (reverse order)."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.items: list[tuple[str, str]] = []
        self.paths: list[Path] = []

    def name(self, what: str) -> str:
        return f"{self.prefix}-{what}"

    def add(self, kind: str, name: str) -> str:
        self.items.append((kind, name))
        return name

    def add_path(self, path: Path) -> Path:
        self.paths.append(path)
        return path

    def cleanup(self) -> list[str]:
        errors = []
        for kind, name in reversed(self.items):
            cmd = {"container": ["rm", "-f", "-v"], "network": ["network", "rm"],
                   "image": ["image", "rm", "-f"], "volume": ["volume", "rm", "-f"]}[kind]
            p = run(["docker", *cmd, name], check=False, timeout=120)
            if p.returncode != 0 and "No such" not in p.stderr and "not found" not in p.stderr:
                errors.append(f"{kind} {name}: {p.stderr.strip()}")
        # anything else carrying the prefix (a container a test started by hand, say)
        for kind, ls in (("container", ["ps", "-aq", "--filter", f"name={self.prefix}"]),
                         ("network", ["network", "ls", "-q", "--filter", f"name={self.prefix}"]),
                         ("volume", ["volume", "ls", "-q", "--filter", f"name={self.prefix}"])):
            ids = run(["docker", *ls], check=False).stdout.split()
            if ids:
                rm = {"container": ["rm", "-f", "-v"], "network": ["network", "rm"],
                      "volume": ["volume", "rm", "-f"]}[kind]
                run(["docker", *rm, *ids], check=False)
        images = run(["docker", "images", "-q", "--filter", f"reference={self.prefix}*"], check=False).stdout.split()
        if images:
            run(["docker", "image", "rm", "-f", *images], check=False)
        # intermediate images of builds that failed half way
        run(["docker", "image", "prune", "-f", "--filter", "label=org.mptcplab.image"], check=False)
        for path in reversed(self.paths):
            shutil.rmtree(path, ignore_errors=True)
        return errors


def remove_stale() -> None:
    """Objects of an earlier run that was killed before it could clean up (older than 3 h)."""
    pat = re.compile(r"^/?mplt[0-9a-f]{8}-")
    now = time.time()
    out = run(["docker", "ps", "-a", "--format", "{{.Names}}\t{{.CreatedAt}}"], check=False).stdout
    for line in out.splitlines():
        name, _, created = line.partition("\t")
        if not pat.match(name):
            continue
        try:
            t = time.mktime(time.strptime(created[:19], "%Y-%m-%d %H:%M:%S"))
        except ValueError:
            continue
        if now - t > STALE_AFTER_S:
            run(["docker", "rm", "-f", "-v", name], check=False)
    for line in run(["docker", "network", "ls", "--format", "{{.Name}}"], check=False).stdout.split():
        if not pat.match(line):
            continue
        created = run(["docker", "network", "inspect", "-f", "{{.Created.Unix}}", line], check=False).stdout.strip()
        if created.isdigit() and now - int(created) > STALE_AFTER_S:
            run(["docker", "network", "rm", line], check=False)


#: the distributions' kernel metapackages (Debian, Ubuntu): each depends on one linux-image-<release>
METAPACKAGES = ("linux-image-amd64", "linux-image-generic")


def stock_kernel_debs(tmp_path: Path) -> tuple[Path, str]:
    """A packages directory as `make kernel-deb` leaves one (manifest.json with the release,
    linux-image-<release>_*.deb), holding the distribution's current kernel; the .deb is
    cached under the appliance cache (apt downloads it once)."""
    for meta in METAPACKAGES:
        deps = subprocess.run(["apt-cache", "depends", meta], capture_output=True, text=True).stdout
        images = [w.split(":", 1)[1].strip() for w in deps.splitlines()
                  if w.strip().startswith("Depends: linux-image-")]
        if images:
            package = images[0]
            break
    else:
        pytest.skip(f"no kernel metapackage known to apt here ({', '.join(METAPACKAGES)})")
    cache = CACHE / "kernel-stock"
    cache.mkdir(parents=True, exist_ok=True)
    debs = sorted(cache.glob(f"{package}_*.deb"))
    if not debs:
        run(["apt-get", "download", "-q", package], cwd=cache, timeout=900)
        debs = sorted(cache.glob(f"{package}_*.deb"))
    assert debs, f"apt-get download {package} left no .deb in {cache}"
    release = package.removeprefix("linux-image-").removeprefix("unsigned-")
    out = tmp_path / "debs"
    out.mkdir()
    version = debs[-1].name.split("_")[1]
    shutil.copy(debs[-1], out / f"linux-image-{release}_{version}_amd64.deb")
    (out / "manifest.json").write_text(json.dumps({"release": release}))
    return out, release
