"""`mptcplab run --backend`: the choice, the link emulation it allows, the dry run."""

from __future__ import annotations

from pathlib import Path

import pytest

from mptcplab import backends, cli
from mptcplab.backends import containerlab as clab
from mptcplab.backends.containerlab import ContainerlabBackend
from mptcplab.errors import HostNotReady
from mptcplab.lab.loader import load_lab

LABS = Path(__file__).resolve().parents[2] / "labs"


@pytest.mark.parametrize("usable,choice,want", [
    (True, "auto", "containerlab"), (False, "auto", "netns"), (True, "netns", "netns"),
    (True, "containerlab", "containerlab")])
def test_backend_choice(monkeypatch: pytest.MonkeyPatch, usable: bool, choice: str, want: str) -> None:
    monkeypatch.setattr(clab, "containerlab_status", lambda: (usable, "why"))
    assert backends.resolve(choice, dry_run=False).name == want


def test_forced_containerlab_needs_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(clab, "containerlab_status", lambda: (False, "no containerlab binary on PATH"))
    with pytest.raises(HostNotReady, match="no containerlab binary"):
        backends.resolve("containerlab", dry_run=False)
    assert backends.resolve("containerlab", dry_run=True).name == "containerlab"  # printing needs nothing


def test_status_without_binary(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(clab.shutil, "which", lambda name: None)
    assert clab.containerlab_status() == (False, "no containerlab binary on PATH")


def test_link_emulation_on_containerlab(monkeypatch: pytest.MonkeyPatch) -> None:
    import mptcplab.emulation.hostprobe as hp

    lab = load_lab(LABS / "mtu")
    rate_only = [s for s in lab.scenarios if s.name == "mptcp-bottleneck"]
    delayed = load_lab(LABS / "sndbuf").scenarios
    assert not any(link.delay or link.loss for s in rate_only for link in s.body.links.values())
    assert any(link.delay for s in delayed for link in s.body.links.values())
    with pytest.raises(HostNotReady, match="delay line is not in the lab images"):
        ContainerlabBackend.choose_emulator("nfqueue", rate_only, dry_run=True)
    monkeypatch.setattr(hp, "netem_available", lambda: False)
    assert ContainerlabBackend.choose_emulator(None, rate_only, dry_run=False).name == "netem"  # tbf only
    with pytest.raises(HostNotReady, match="no sch_netem"):
        ContainerlabBackend.choose_emulator(None, delayed, dry_run=False)
    assert ContainerlabBackend.choose_emulator(None, delayed, dry_run=True).name == "netem"  # no probe
    monkeypatch.setattr(hp, "netem_available", lambda: True)
    assert ContainerlabBackend.choose_emulator("netem", delayed, dry_run=False).name == "netem"


def test_registry_declares_what_each_backend_supports(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(clab, "containerlab_status", lambda: (False, "no containerlab binary on PATH"))
    st = {s.name: s for s in backends.status()}
    assert set(st) == {"netns", "containerlab"}
    assert st["netns"].emulators == ("netem", "nfqueue") and st["containerlab"].emulators == ("netem",)
    assert st["containerlab"].available is False and st["containerlab"].why == "no containerlab binary on PATH"
    assert "node-pids" in st["netns"].capabilities and "node-pids" not in st["containerlab"].capabilities
    with pytest.raises(ValueError, match="unknown backend 'docker'"):
        backends.get("docker")


def test_nfqueue_forced_with_containerlab_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli.main(["run", str(LABS / "mtu"), "--backend", "containerlab", "--emulation", "nfqueue", "--dry-run"])
    assert rc == 3 and "nfqueue" in capsys.readouterr().err


def test_dry_run_prints_docker_and_containerlab_commands(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rc = cli.main(["run", str(LABS / "mtu"), "--backend", "containerlab", "--dry-run", "--quick",
                   "--scenario", "mptcp-bottleneck", "--results", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0
    copy = f"{tmp_path}/mtu/<run-id>/clab/mpl000000-mtu.clab.yml"
    assert f"containerlab deploy -t '{copy}'" in out
    assert f"containerlab destroy -t '{copy}' --cleanup" in out
    assert "#   name: mpl000000-mtu" in out and "#         network-mode: none" in out
    assert "docker exec clab-mpl000000-mtu-client sysctl -q -w " in out
    assert ("docker exec clab-mpl000000-mtu-rb1 vtysh -c 'configure terminal' -c 'ip route 10.0.1.0/24 10.0.3.2 eth2'"
            in out)
    assert "docker exec clab-mpl000000-mtu-client ip rule add from 10.0.2.2 table 101 priority 101" in out
    assert "docker exec clab-mpl000000-mtu-client tc qdisc replace dev eth1 root handle 1: tbf rate 100mbit" in out
    cap = f"{tmp_path}/mtu/<run-id>/scenarios/mptcp-bottleneck/rep1/capture-client-eth1.pcap"
    assert "docker exec clab-mpl000000-mtu-client tcpdump -i eth1" in out and cap in out
    assert "ip netns" not in out and "ip -n " not in out
    assert not (tmp_path / "mtu").exists()  # a dry run creates nothing


def test_dry_run_never_probes_the_kernel(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                         tmp_path: Path) -> None:
    """A dry run creates nothing: the netem probe (a throwaway namespace) must not run."""
    import mptcplab.emulation.hostprobe as hp

    def probe() -> bool:
        raise AssertionError("the dry run probed the kernel")

    monkeypatch.setattr(hp, "netem_available", probe)
    monkeypatch.setattr(hp, "probe_namespace", probe)
    for backend in ("netns", "containerlab"):
        rc = cli.main(["run", str(LABS / "sndbuf"), "--backend", backend, "--dry-run", "--results", str(tmp_path)])
        assert rc == 0
    out = capsys.readouterr().out
    assert "link emulation: nfqueue (not probed" in out and "mptcplab-delayline" in out
    rc = cli.main(["run", str(LABS / "sndbuf"), "--dry-run", "--emulation", "netem", "--results", str(tmp_path)])
    assert rc == 0 and " netem limit 264554 delay 40000us" in capsys.readouterr().out
    assert not (tmp_path / "sndbuf").exists()
