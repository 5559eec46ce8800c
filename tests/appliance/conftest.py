"""Shared fixtures of the appliance checks (make test-appliance).

Everything a test creates in Docker is named with one run prefix, ``mplt<8 hex>``, and
removed at the end of the session, even when a test fails: containers, networks, volumes
and images. The product images (mptcplab/{debian-base,host,router,jupyter}) are kept: they
are what the labs run on, and they are the warm cache of the next run
(``make appliance-clean`` removes them).
"""
from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from appliance_support import BASE_IMAGE, PRODUCT_IMAGES, REPO, Resources, docker, docker_ok, remove_stale, run


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "appliance: appliance checks: Ansible, images, Vagrant, kernel patches (make test-appliance)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.appliance)


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
    base = docker("image", "inspect", "-f", "{{index .Config.Labels \"org.mptcplab.base\"}}",
                  PRODUCT_IMAGES[0]).stdout.strip()
    assert base == BASE_IMAGE, f"built FROM {base}, not the bootstrapped base"
    print(f"\nimages/build.sh --offline: {took:.0f} s\n{p.stdout}")
    return {"seconds": took}
