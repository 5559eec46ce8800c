"""`mptcplab run --backend`: the choice, the link emulation it allows, the dry run."""

from __future__ import annotations

from pathlib import Path

import pytest

from mptcplab import cli
from mptcplab.backends import containerlab as clab
from mptcplab.errors import HostNotReady

LABS = Path(__file__).resolve().parents[2] / "labs"


@pytest.mark.parametrize("usable,choice,want", [
    (True, "auto", "containerlab"), (False, "auto", "netns"), (True, "netns", "netns"),
    (True, "containerlab", "containerlab")])
def test_backend_choice(monkeypatch: pytest.MonkeyPatch, usable: bool, choice: str, want: str) -> None:
    monkeypatch.setattr(clab, "containerlab_status", lambda: (usable, "why"))
    assert cli._node_backend(choice, dry_run=False) == want


def test_forced_containerlab_needs_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(clab, "containerlab_status", lambda: (False, "no containerlab binary on PATH"))
    with pytest.raises(HostNotReady, match="no containerlab binary"):
        cli._node_backend("containerlab", dry_run=False)
    assert cli._node_backend("containerlab", dry_run=True) == "containerlab"  # printing needs nothing


def test_status_without_binary(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(clab.shutil, "which", lambda name: None)
    assert clab.containerlab_status() == (False, "no containerlab binary on PATH")


def test_link_emulation_on_containerlab(monkeypatch: pytest.MonkeyPatch) -> None:
    import mptcplab.emulation.backend as eb

    with pytest.raises(HostNotReady, match="delay line is not in the lab images"):
        cli._containerlab_emulator("nfqueue", needs_netem=False, dry_run=True)
    monkeypatch.setattr(eb, "netem_available", lambda: False)
    assert cli._containerlab_emulator(None, needs_netem=False, dry_run=False).name == "netem"  # tbf only
    with pytest.raises(HostNotReady, match="no sch_netem"):
        cli._containerlab_emulator(None, needs_netem=True, dry_run=False)
    monkeypatch.setattr(eb, "netem_available", lambda: True)
    assert cli._containerlab_emulator("netem", needs_netem=True, dry_run=False).name == "netem"


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
    assert "docker exec clab-mpl000000-mtu-rb1 vtysh -c 'configure terminal' -c 'ip route 10.0.1.0/24 10.0.3.2 eth2'" in out
    assert "docker exec clab-mpl000000-mtu-client ip rule add from 10.0.2.2 table 101 priority 101" in out
    assert "docker exec clab-mpl000000-mtu-client tc qdisc replace dev eth1 root handle 1: tbf rate 100mbit" in out
    cap = f"{tmp_path}/mtu/<run-id>/scenarios/mptcp-bottleneck/rep1/capture-client-eth1.pcap"
    assert "docker exec clab-mpl000000-mtu-client tcpdump -i eth1" in out and cap in out
    assert "ip netns" not in out and "ip -n " not in out
    assert not (tmp_path / "mtu").exists()  # a dry run creates nothing
