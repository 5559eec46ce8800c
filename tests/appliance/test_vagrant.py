"""`vagrant validate` over the Vagrantfile's settings.

VirtualBox is not installed here (its provider needs VBoxManage even to validate) and this
kernel cannot serve NFS (vagrant-libvirt's default share, which Vagrant checks with
`modinfo nfsd`), so: every setting is validated with provider blocks ignored (-p), and the
libvirt provider's block is validated in full (against a running libvirtd) with the shares
that need no NFS server.
"""
from __future__ import annotations

import shutil

import pytest
from appliance_support import REPO, run

pytestmark = pytest.mark.skipif(shutil.which("vagrant") is None, reason="vagrant not installed (make appliance-deps)")


@pytest.fixture(scope="module")
def libvirtd():
    p = run([str(REPO / "tests/appliance/ensure-libvirtd.sh")], check=False, timeout=120)
    if p.returncode != 0:
        pytest.fail("libvirtd: " + p.stdout + p.stderr)


def validate(tmp_path, *args: str, **env: str):
    provider = "virtualbox" if "--ignore-provider" in args else "libvirt"
    e = {"VAGRANT_DOTFILE_PATH": str(tmp_path / "dot"), "VAGRANT_NO_COLOR": "1",
         "VAGRANT_CHECKPOINT_DISABLE": "1", "VAGRANT_DEFAULT_PROVIDER": provider}
    for k in list(__import__("os").environ):
        if k.startswith("MPTCPLAB_"):
            e[k] = ""
    e.update(env)
    return run(["vagrant", "validate", *args], env=e, check=False, timeout=180)


@pytest.mark.parametrize("env", [
    {},
    {"MPTCPLAB_KERNEL": "source", "MPTCPLAB_CPUS": "4", "MPTCPLAB_MEMORY": "8192"},
    {"MPTCPLAB_KERNEL": "mainline", "MPTCPLAB_KERNEL_VERSION": "6.12.10"},
    {"MPTCPLAB_BOX": "debian/bookworm64", "MPTCPLAB_JUPYTER_PORT": "18888", "MPTCPLAB_IMAGES_OFFLINE": "1"},
    {"MPTCPLAB_KERNEL": "backports", "MPTCPLAB_LIBVIRT_DRIVER": "qemu", "MPTCPLAB_JUPYTER": "0"},
    {"MPTCPLAB_KERNEL": "prebuilt", "MPTCPLAB_SYNC_TYPE": "rsync"},
], ids=["defaults", "source-kernel", "mainline-kernel", "debian-box", "backports-kernel-qemu", "prebuilt-kernel"])
def test_validate_ignoring_providers(tmp_path, env):
    p = validate(tmp_path, "--ignore-provider", **env)
    assert p.returncode == 0 and "validated successfully" in p.stdout, p.stdout + p.stderr


@pytest.mark.parametrize("sync,driver", [("rsync", "qemu"), ("9p", "kvm"), ("virtiofs", "kvm")])
def test_validate_libvirt_provider(tmp_path, sync, driver, libvirtd):
    p = validate(tmp_path, MPTCPLAB_SYNC_TYPE=sync, MPTCPLAB_KERNEL="source", MPTCPLAB_LIBVIRT_DRIVER=driver)
    assert p.returncode == 0 and "validated successfully" in p.stdout, p.stdout + p.stderr


@pytest.mark.parametrize("env,message", [
    ({"MPTCPLAB_KERNEL": "patched"}, "choose one of stock, backports, mainline, source"),
    ({"MPTCPLAB_KERNEL": "mainline"}, "needs MPTCPLAB_KERNEL_VERSION"),
    ({"MPTCPLAB_CPUS": "two"}, "is not a whole number"),
    ({"MPTCPLAB_LIBVIRT_DRIVER": "tcg"}, "choose kvm or qemu"),
    ({"MPTCPLAB_JUPYTER": "no"}, "choose 1 or 0"),
])
def test_bad_settings_are_refused(tmp_path, env, message):
    p = validate(tmp_path, "--ignore-provider", **env)
    assert p.returncode != 0 and message in p.stdout + p.stderr, p.stdout + p.stderr


def test_vagrantfile_shape():
    """What validate cannot see: the forward is on the host's loopback, provisioning is
    ansible_local with the repository's playbook, both providers are configured."""
    text = (REPO / "Vagrantfile").read_text()
    assert 'host_ip: "127.0.0.1"' in text
    assert 'type: "ansible_local"' in text and '"ansible/site.yml"' in text
    assert 'provider "virtualbox"' in text and 'provider "libvirt"' in text
    assert 'env("MPTCPLAB_BOX", "bento/ubuntu-24.04")' in text
