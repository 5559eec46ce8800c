"""Shared fixtures of the appliance checks (make test-appliance).

Everything a test creates in Docker is named with one run prefix, ``mplt<8 hex>``, and
removed at the end of the session, even when a test fails: containers, networks, volumes
and images. The product images (mptcplab/{debian-base,host,router,jupyter}) are kept: they
are what the labs run on, and they are the warm cache of the next run
(``make appliance-clean`` removes them).
"""
from __future__ import annotations

import os
import re
import secrets
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


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "appliance: appliance checks: Ansible, images, Vagrant, kernel patches (make test-appliance)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.appliance)


def run(cmd: list[str] | str, *, check: bool = True, timeout: float = 600, env: dict | None = None,
        cwd: Path | str | None = REPO, input: str | None = None) -> subprocess.CompletedProcess:
    """Run a command, capturing its output; on failure the output is in the assertion."""
    full_env = {**os.environ, **(env or {})}
    p = subprocess.run(cmd, shell=isinstance(cmd, str), cwd=cwd, env=full_env, input=input,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"{cmd!r} exited {p.returncode}\n--- stdout\n{p.stdout[-6000:]}\n"
                             f"--- stderr\n{p.stderr[-6000:]}")
    return p


def docker(*args: str, check: bool = True, timeout: float = 600, input: str | None = None) -> subprocess.CompletedProcess:
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
                rm = {"container": ["rm", "-f", "-v"], "network": ["network", "rm"], "volume": ["volume", "rm", "-f"]}[kind]
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


_CLAB_BUILD: subprocess.Popen | None = None


def pytest_sessionstart(session: pytest.Session) -> None:
    """containerlab from the Go module proxy takes minutes on a cold cache: start it now, in
    the background, so that it overlaps the image builds (see containerlab_binary)."""
    global _CLAB_BUILD
    if os.environ.get("MPTCPLAB_NO_EARLY_CLAB_BUILD") or shutil.which("go") is None:
        return
    log = open(os.environ.get("TMPDIR", "/tmp") + f"/mptcplab-clab-build-{os.getpid()}.log", "w+")
    _CLAB_BUILD = subprocess.Popen([str(REPO / "images/containerlab-build.sh")], cwd=REPO,
                                   stdout=log, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    _CLAB_BUILD.log = log  # type: ignore[attr-defined]


def pytest_sessionfinish(session: pytest.Session) -> None:
    if _CLAB_BUILD is not None and _CLAB_BUILD.poll() is None:
        os.killpg(_CLAB_BUILD.pid, 15)  # its own process group: the script and its go build
        _CLAB_BUILD.wait(timeout=30)
    if _CLAB_BUILD is not None:
        _CLAB_BUILD.log.close()  # type: ignore[attr-defined]
        os.unlink(_CLAB_BUILD.log.name)  # type: ignore[attr-defined]


@pytest.fixture(scope="session")
def containerlab_binary() -> Path:
    """The pinned containerlab, built from the Go module proxy (cached per version)."""
    if _CLAB_BUILD is not None:
        rc = _CLAB_BUILD.wait(timeout=1800)
        _CLAB_BUILD.log.seek(0)  # type: ignore[attr-defined]
        out = _CLAB_BUILD.log.read()  # type: ignore[attr-defined]
        assert rc == 0, "images/containerlab-build.sh failed:\n" + out[-4000:]
    else:
        out = run([str(REPO / "images/containerlab-build.sh")], timeout=1800).stdout
    path = Path(out.strip().splitlines()[-1])
    assert path.is_file(), out[-2000:]
    return path


@pytest.fixture(scope="session")
def docker_daemon() -> None:
    if not docker_ok():
        p = run([str(REPO / "tests/appliance/ensure-dockerd.sh")], check=False, timeout=120)
        if p.returncode != 0:
            pytest.fail("no Docker daemon (make appliance-dockerd):\n" + p.stdout + p.stderr)


@pytest.fixture(scope="session")
def resources(docker_daemon) -> Resources:
    res = Resources("mplt" + secrets.token_hex(4))
    remove_stale()
    yield res
    errors = res.cleanup()
    assert not errors, "cleanup failed: " + "; ".join(errors)


@pytest.fixture(scope="session")
def built_images(docker_daemon) -> dict[str, float]:
    """Every image built offline (debootstrap base + docker build), with build seconds."""
    t0 = time.monotonic()
    p = run([str(REPO / "images/build.sh"), "--offline"], timeout=3600)
    took = time.monotonic() - t0
    lines = p.stdout.splitlines()
    for img in PRODUCT_IMAGES:
        assert any(line.startswith(("built: " + img, "up to date: " + img)) for line in lines), p.stdout
        labels = docker("image", "inspect", "-f", "{{json .Config.Labels}}", img).stdout
        assert "org.mptcplab.build-hash" in labels
    base = docker("image", "inspect", "-f", "{{index .Config.Labels \"org.mptcplab.base\"}}", PRODUCT_IMAGES[0]).stdout.strip()
    assert base == BASE_IMAGE, f"built FROM {base}, not the bootstrapped base"
    print(f"\nimages/build.sh --offline: {took:.0f} s\n{p.stdout}")
    return {"seconds": took}
