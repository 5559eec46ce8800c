"""Detection of a software-emulated CPU and the run kind it gives, with a fake systemd-detect-virt."""

from __future__ import annotations

from pathlib import Path

import pytest

from mptcplab.errors import LabInputError
from mptcplab.platform import ENV, FUNCTIONAL_CHECK, MEASUREMENT, cpu_emulation, run_kind


@pytest.fixture
def path_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty directory as the whole PATH, no override: only what a test puts there is found."""
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    return tmp_path


def fake_detect_virt(where: Path, answer: str, status: int) -> None:
    script = where / "systemd-detect-virt"
    script.write_text(f'#!/bin/sh\n[ "$1" = --vm ] || exit 9\necho {answer}\nexit {status}\n')
    script.chmod(0o755)


def test_qemu_without_kvm_is_software_emulated(path_dir: Path) -> None:
    fake_detect_virt(path_dir, "qemu", 0)
    cpu = cpu_emulation()
    assert cpu == {"virtualization": "qemu", "software_emulated_cpu": True, "source": "systemd-detect-virt"}
    kind, why = run_kind(cpu)
    assert kind == FUNCTIONAL_CHECK
    assert why.startswith("software-emulated CPU (QEMU without KVM, systemd-detect-virt: qemu)")
    assert "not measurements" in why


def test_kvm_is_hardware(path_dir: Path) -> None:
    fake_detect_virt(path_dir, "kvm", 0)
    cpu = cpu_emulation()
    assert cpu == {"virtualization": "kvm", "software_emulated_cpu": False, "source": "systemd-detect-virt"}
    assert run_kind(cpu) == (MEASUREMENT, "CPU not software-emulated (systemd-detect-virt: kvm)")


def test_bare_metal(path_dir: Path) -> None:
    fake_detect_virt(path_dir, "none", 1)  # what the tool does on bare metal
    assert cpu_emulation() == {"virtualization": "none", "software_emulated_cpu": False,
                               "source": "systemd-detect-virt"}


@pytest.mark.parametrize("answer,status", [("", 1), ("garbage", 2)])
def test_no_clear_answer_is_unknown(path_dir: Path, answer: str, status: int) -> None:
    fake_detect_virt(path_dir, answer, status)
    assert cpu_emulation()["software_emulated_cpu"] is None


def test_missing_tool_is_unknown_not_a_guess(path_dir: Path) -> None:
    cpu = cpu_emulation()
    assert cpu == {"virtualization": None, "software_emulated_cpu": None, "source": "unknown"}
    kind, why = run_kind(cpu)
    assert kind == MEASUREMENT and f"{ENV}=software" in why


def test_override_beats_detection(path_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_detect_virt(path_dir, "kvm", 0)
    monkeypatch.setenv(ENV, "software")
    cpu = cpu_emulation()
    assert cpu == {"virtualization": None, "software_emulated_cpu": True, "source": ENV}
    kind, why = run_kind(cpu)
    assert kind == FUNCTIONAL_CHECK and f"declared by {ENV}=software" in why
    fake_detect_virt(path_dir, "qemu", 0)
    monkeypatch.setenv(ENV, "Hardware")
    assert cpu_emulation()["software_emulated_cpu"] is False
    assert run_kind(cpu_emulation()) == (MEASUREMENT, f"CPU not software-emulated (declared by {ENV}=hardware)")


def test_bad_override_is_an_input_error(path_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "tcg")
    with pytest.raises(LabInputError, match=ENV):
        cpu_emulation()


def test_manifest_facts_carry_it(path_dir: Path) -> None:
    from mptcplab.record.manifest import host_facts

    fake_detect_virt(path_dir, "qemu", 0)
    facts = host_facts()
    assert facts["platform"]["software_emulated_cpu"] is True
    assert {"kernel", "machine", "cpu_count", "os_release"} <= facts.keys()


def test_git_state_reads_a_checkout_another_user_owns(tmp_path):
    """Root runs labs in the VM's /vagrant, which the vagrant user owns: git's ownership
    check must not hide the commit from the manifest."""
    import os
    import shutil
    import subprocess

    import pytest

    from mptcplab.record.manifest import git_state

    if os.geteuid() != 0 or shutil.which("git") is None:
        pytest.skip("needs root and git")
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env=env)
    (repo / "f").write_text("x")
    subprocess.run(["git", "-C", str(repo), "add", "f"], check=True, env=env)
    subprocess.run(["git", "-C", str(repo), "commit", "-qm", "m"], check=True, env=env)
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], check=True, env=env,
                          capture_output=True, text=True).stdout.strip()
    for root, dirs, files in os.walk(repo):
        for n in [root, *(os.path.join(root, d) for d in dirs), *(os.path.join(root, f) for f in files)]:
            os.chown(n, 65534, 65534)
    index_mtime = (repo / ".git" / "index").stat().st_mtime_ns
    state = git_state(repo)
    assert state == {"commit": head, "dirty": False}
    assert (repo / ".git" / "index").stat().st_mtime_ns == index_mtime  # read only


def test_git_state_is_unknown_when_git_is_too_slow(tmp_path, monkeypatch):
    """git status over a QEMU guest's 9p root took more than its 10 s: the run goes on, the
    manifest says the state is unknown."""
    import subprocess

    from mptcplab.record import manifest

    def slow(cmd, **kw):
        raise subprocess.TimeoutExpired(cmd, kw.get("timeout", 0))

    monkeypatch.setattr(manifest.subprocess, "run", slow)
    assert manifest.git_state(tmp_path) == {"commit": None, "dirty": None}
