"""The preflight (what only the host can answer) and the one-line mistakes of every
subcommand: exit status and one line, never a traceback."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from mptcplab.cli import main
from mptcplab.errors import HostNotReady, LabInputError
from mptcplab.lab.joinwarnings import join_warnings
from mptcplab.lab.loader import load_lab
from mptcplab.preflight import TOOLS, HostFacts, preflight, sysctl_lookup_name

REPO = Path(__file__).resolve().parents[2]
LABS = REPO / "labs"
HOST = HostFacts(euid=0, congestion_controls=frozenset({"reno", "cubic", "bbr"}), schedulers=frozenset({"default"}),
                 sysctls=None, tools=frozenset(TOOLS))


def edit(path: Path, fn: Any) -> None:
    data = yaml.safe_load(path.read_text())
    fn(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


# ------------------------------------------------------------------ preflight
def test_valid_lab_on_a_capable_host_has_no_problems(tmp_path: Path) -> None:
    lab = load_lab(LABS / "mtu")
    assert preflight(lab, lab.scenarios, results_root=tmp_path / "r", facts=HOST) == []
    assert not (tmp_path / "r").exists()


def test_missing_congestion_control_names_file_field_and_host_list(copy_lab: Any) -> None:
    d = copy_lab()
    lab = load_lab(d)
    problems = preflight(lab, lab.scenarios, dry_run=True, facts=replace(HOST, congestion_controls=frozenset({"reno"})))
    # the base value fails in every scenario but is reported once
    assert len(problems) == 1 and isinstance(problems[0], LabInputError)
    p = problems[0]
    assert (p.file, p.field) == (str(d / "experiment.yml"), "traffic.flows.main.cc")
    assert "'cubic' is not in this kernel" in p.problem and "reno" in p.problem


def test_sysctls_are_looked_up_as_a_fresh_namespace_has_them() -> None:
    lab = load_lab(LABS / "mtu")
    names = frozenset({"net.ipv4.conf.all.rp_filter", "net.ipv4.conf.default.rp_filter", "net.mptcp.enabled",
                       "net.ipv4.tcp_no_metrics_save", "net.ipv4.ip_forward", "net.ipv4.tcp_mtu_probing"})
    problems = preflight(lab, lab.scenarios, dry_run=True, facts=replace(HOST, sysctls=names))
    # tcp_base_mss only appears in the blackhole-base-mss sweep: the problem names that scenario
    assert [(p.field, "blackhole-base-mss-576" in p.problem) for p in problems if isinstance(p, LabInputError)] == [
        ("nodes.client.sysctls.net.ipv4.tcp_base_mss", True)]
    assert sysctl_lookup_name("net.ipv4.conf.eth1.rp_filter") == "net.ipv4.conf.default.rp_filter"
    assert sysctl_lookup_name("net/ipv4/conf/all/forwarding") == "net.ipv4.conf.all.forwarding"


def test_host_problems_root_tools_results(tmp_path: Path) -> None:
    lab = load_lab(LABS / "sndbuf")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    facts = replace(HOST, euid=1000, tools=HOST.tools - {"tshark"})
    problems = preflight(lab, lab.scenarios, results_root=blocker / "results", facts=facts)
    text = [str(p) for p in problems]
    assert any(isinstance(p, HostNotReady) and "run as root" in str(p) for p in problems), text
    assert any("tshark not found" in t for t in text), text
    assert any(isinstance(p, LabInputError) and p.field == "--results" and "not a directory" in p.problem
               for p in problems), text
    # a dry run needs none of those
    assert preflight(lab, lab.scenarios, results_root=blocker / "results", dry_run=True, facts=facts) == []


def test_real_host_answers_for_the_shipped_labs(tmp_path: Path) -> None:
    facts = HostFacts.read()
    assert facts.congestion_controls and "cubic" in facts.congestion_controls
    for name in ("mtu", "sndbuf", "cc"):
        lab = load_lab(LABS / name)
        assert preflight(lab, lab.scenarios, dry_run=True, facts=facts) == []


# ------------------------------------------------------------------ join warnings (issue 12 item 3)
def _disjoint(tmp_path: Path, signal: bool) -> Path:
    d = tmp_path / ("signal" if signal else "disjoint")
    d.mkdir()
    def host() -> dict[str, str]:
        return {"kind": "linux", "image": "mptcplab/host:latest"}

    def router() -> dict[str, str]:
        return {"kind": "linux", "image": "mptcplab/router:latest"}

    (d / "topology.clab.yml").write_text(yaml.safe_dump({"name": "disjoint", "topology": {
        "nodes": {"client": host(), "server": host(), "ra": router(), "rb": router()},
        "links": [{"endpoints": ["client:eth1", "ra:eth1"]}, {"endpoints": ["ra:eth2", "server:eth1"]},
                  {"endpoints": ["client:eth2", "rb:eth1"]}, {"endpoints": ["rb:eth2", "server:eth2"]}]}}))
    server: dict[str, Any] = {"limits": {"subflows": 2, "add_addr_accepted": 0}}
    if signal:
        server["endpoints"] = [{"address": "server:eth2", "flags": ["signal"]}]
    (d / "experiment.yml").write_text(yaml.safe_dump({
        "nodes": {"client": {"role": "host", "mptcp": {
                      "limits": {"subflows": 2, "add_addr_accepted": 2},
                      "endpoints": [{"address": "client:eth2", "flags": ["subflow"]}]}},
                  "server": {"role": "host", "mptcp": server}, "ra": {"role": "router"}, "rb": {"role": "router"}},
        "traffic": {"flows": {"main": {"client": "client", "server": "server", "server_address": "server:eth1",
                                       "bind": "client:eth1"}}},
        "capture": [{"point": "client:eth1"}],
        "scenarios": [{"name": "mptcp"}]}))
    return d


def test_validate_warns_when_a_subflow_path_cannot_reach_the_server(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    d = _disjoint(tmp_path, signal=False)
    assert main(["validate", str(d)]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(f"mptcplab: {d / 'experiment.yml'}: nodes.client.mptcp.endpoints[0].address: warning")
    assert "client:eth2's path (next hop rb) has no route to" in err[0]
    assert "announce the server's addresses with signal endpoints, or connect the paths" in err[0]
    # what the warning suggests makes it go away
    assert join_warnings(load_lab(_disjoint(tmp_path, signal=True))) == []
    # and the shipped labs, whose paths merge before the server, have none
    assert all(join_warnings(load_lab(LABS / name)) == [] for name in ("mtu", "sndbuf", "cc"))


# ------------------------------------------------------------------ every subcommand's mistakes
def _cli(*args: str, user: str | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "mptcplab.cli", *args]
    if user:
        argv = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *argv]
    return subprocess.run(argv, capture_output=True, text=True, cwd=REPO, timeout=120,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **(env or {})})


def _one_line(p: subprocess.CompletedProcess[str], status: int, *words: str) -> None:
    assert "Traceback" not in p.stderr, p.stderr
    lines = p.stderr.strip().splitlines()
    assert p.returncode == status and len(lines) == 1, (p.returncode, p.stderr)
    for w in words:
        assert w in lines[0], lines[0]


needs_root = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                                reason="needs root to drop to another user")


@needs_root
def test_not_root(tmp_path: Path) -> None:
    nobody = "65534"
    _one_line(_cli("run", "labs/mtu", "--quick", "--results", str(tmp_path / "r"), user=nobody), 3, "run as root")
    assert not (tmp_path / "r").exists()
    _one_line(_cli("clean", user=nobody), 3, "run as root")
    _one_line(_cli("calibrate", "--rate", "10mbit", user=nobody), 3, "run as root")
    # what needs no root works without it
    p = _cli("validate", "labs/sndbuf", user=nobody)
    assert p.returncode == 0 and "ok: lab sndbuf" in p.stdout, p.stderr


def test_report_mistakes(tmp_path: Path) -> None:
    _one_line(_cli("report", str(tmp_path / "nothing")), 2, "does not exist")
    _one_line(_cli("report", str(tmp_path)), 2, "is not a run directory")
    (tmp_path / "summary.json").write_text("{not json")
    _one_line(_cli("report", str(tmp_path)), 2, "summary.json", "not JSON")


def test_results_directory_that_cannot_be_created(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    _one_line(_cli("run", "labs/mtu", "--quick", "--results", str(blocker / "results")), 2, "--results",
              "is not a directory")
    # results/<lab> in the way
    root = tmp_path / "root"
    root.mkdir()
    (root / "mtu").write_text("x")
    _one_line(_cli("run", "labs/mtu", "--quick", "--results", str(root)), 2, "--results", f"{root / 'mtu'} is not")
    assert blocker.read_text() == "x" and (root / "mtu").read_text() == "x"


@pytest.mark.parametrize("args,field", [
    (["--rate", "100tbit"], "--rate"), (["--rate", "50bit"], "--rate"), (["--rate", "fast"], "--rate"),
    (["--rate", "10mbit", "--buffer", "10GB"], "--buffer"), (["--rate", "10mbit", "--buffer", "lots"], "--buffer"),
    (["--rate", "10mbit", "--seconds", "1e9"], "--seconds"), (["--rate", "10mbit", "--mtu", "10"], "--mtu"),
])
def test_calibrate_impossible_parameters(args: list[str], field: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"command line: {field}: " in err[0], err


def test_doctor_on_a_bad_lab_is_one_line(copy_lab: Any, capsys: pytest.CaptureFixture[str]) -> None:
    d = copy_lab()
    edit(d / "experiment.yml", lambda x: x["links"]["client:eth1"].update(rate="100tbit"))
    assert main(["doctor", str(d)]) == 2
    out = capsys.readouterr()
    assert out.out == "" and len(out.err.strip().splitlines()) == 1 and "links.client:eth1.rate" in out.err
    assert main(["doctor", str(d / "nothing")]) == 2


@pytest.mark.parametrize("exc,status", [
    (PermissionError(13, "Permission denied", "/sys/kernel/tracing/events/tcp/tcp_probe"), 3),
    (OSError(28, "No space left on device", "results/x/manifest.json"), 1),
    (FileNotFoundError(2, "No such file or directory", "summary.json"), 1),
])
def test_last_resort_os_errors_are_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                             exc: OSError, status: int) -> None:
    import mptcplab.cli.lab as cli

    def boom(a: Any) -> int:
        raise exc

    monkeypatch.setattr(cli, "cmd_validate", boom)
    assert main(["validate", "labs/mtu"]) == status
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(exc.strerror) in err[0] and str(exc.filename) in err[0], err
    monkeypatch.setenv("MPTCPLAB_DEBUG", "1")
    with pytest.raises(type(exc)):
        main(["validate", "labs/mtu"])
