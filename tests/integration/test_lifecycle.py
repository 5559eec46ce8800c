"""Dry runs create nothing; interrupted and killed runs leave nothing `clean` cannot
remove; incomplete runs are kept and never become latest."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mptcplab import runstate

REPO = Path(__file__).resolve().parents[2]
MPTCPLAB = [sys.executable, "-m", "mptcplab.cli"]
pytestmark = pytest.mark.netns


def netns() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def test_dry_run_prints_commands_and_runs_none(tmp_path: Path) -> None:
    """As an unprivileged user (nobody), which can create no namespace: the dry run
    needs no root; comparing namespace lists before and after would race with the
    other runs on a shared host."""
    p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "env", "HOME=/tmp",
                        *MPTCPLAB, "run", "labs/mtu", "--dry-run", "--results", str(tmp_path / "r")],
                       cwd=REPO, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    for needle in ("ip netns add mpl000000-client", "type veth peer name", "mtu 1500 up", "tbf rate",
                   "mptcp endpoint add 10.0.2.2 dev eth2 subflow", "tcpdump -i eth1", "iperf3 -c 10.0.5.2",
                   "ethtool -K eth1 tso off gso off gro off", "frag-needed counter drop", "ip netns del"):
        assert needle in out, needle
    assert out.count("## scenario ") == 13
    assert "not probed" in out.splitlines()[0]  # the emulator is not asked of the kernel
    assert not (tmp_path / "r").exists()


def _wait_for_namespaces(p: subprocess.Popen[bytes], timeout: float = 90) -> set[str]:
    """The namespaces of the run with this PID, once they exist: found through its
    ownership record, not by comparing namespace lists, which other runs on a shared
    host change at the same time. The timeout is an upper bound for a busy shared host
    (start-up asks every tool for its version), not a timing assertion."""
    pid = p.pid
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and p.poll() is None:
        for f in runstate.STATE_DIR.glob("mpl*.json"):
            try:
                data = json.loads(f.read_text())
            except (OSError, ValueError):
                continue
            if data.get("pid") == pid and not data.get("probe"):
                owned = set(data["namespaces"])
                if owned <= netns():
                    return owned
        time.sleep(0.1)
    raise AssertionError(f"the run never created its namespaces (exit status {p.poll()})")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_tears_down_and_keeps_incomplete_run(tmp_path: Path, sig: int) -> None:
    results = tmp_path / "r"
    p = subprocess.Popen([*MPTCPLAB, "run", "labs/mtu", "--quick", "--scenario", "mptcp-bottleneck",
                          "--results", str(results)], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        owned = _wait_for_namespaces(p)
        time.sleep(1.0)
        p.send_signal(sig)
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    assert netns() & owned == set()
    runs = [d for d in (results / "mtu").iterdir() if d.name != "latest"]
    assert len(runs) == 1
    m = json.loads((runs[0] / "manifest.json").read_text())
    assert m["complete"] is False and "interrupted" in m["incomplete_reason"]
    assert not (results / "mtu" / "latest").exists()
    assert p.returncode != 0


def test_clean_removes_what_a_killed_run_left(tmp_path: Path) -> None:
    p = subprocess.Popen([*MPTCPLAB, "run", "labs/mtu", "--quick", "--scenario", "mptcp-bottleneck",
                          "--results", str(tmp_path / "r")], cwd=REPO,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        left = _wait_for_namespaces(p)
        time.sleep(1.0)
        os.killpg(p.pid, signal.SIGKILL)  # no handler runs: namespaces stay
        p.wait(timeout=10)
        assert netns() & left, "expected the killed run to leave namespaces"
        c = subprocess.run([*MPTCPLAB, "clean"], cwd=REPO, capture_output=True, text=True, timeout=60)
        assert c.returncode == 0
        assert netns() & left == set()
    finally:
        subprocess.run([*MPTCPLAB, "clean"], cwd=REPO, capture_output=True)


def test_unexpected_failure_is_one_line_and_keeps_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A failure nobody anticipated (here: a readiness timeout) ends the run with one
    line naming the kept run directory, not a traceback; the traceback is kept beside it."""
    from mptcplab import cli
    from mptcplab.run import lab as labrun

    class FailingRep:
        def __init__(self, *args: object) -> None:
            pass

        def measure(self) -> None:
            raise RuntimeError("timed out after 30 s\nwaiting for iperf3 on rb1")

    monkeypatch.setattr(labrun, "RepRunner", FailingRep)
    results = tmp_path / "r"
    status = cli.main(["run", str(REPO / "labs" / "mtu"), "--quick", "--scenario", "tcp-a", "--results", str(results)])
    err = capsys.readouterr().err.strip()
    assert status == 1
    assert len(err.splitlines()) == 1, err
    assert "RuntimeError: timed out after 30 s waiting for iperf3 on rb1" in err and "Traceback" not in err
    runs = [d for d in (results / "mtu").iterdir() if d.name != "latest"]
    assert len(runs) == 1 and str(runs[0]) in err
    m = json.loads((runs[0] / "manifest.json").read_text())
    assert m["complete"] is False and m["incomplete_reason"].startswith("failed: RuntimeError: timed out")
    assert "in measure" in (runs[0] / "traceback.txt").read_text()
    assert not (results / "mtu" / "latest").exists()


def test_signal_while_the_report_is_written_marks_the_run_interrupted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Ctrl-C after the last analysis, while the report is written (found by the faults suite
    at a random moment): the report is finished, not cut in half; the run is then marked
    incomplete with the signal as its reason, not latest, and the command exits 130."""
    from mptcplab import cli
    from mptcplab.results import report

    real = report.write_report

    def interrupted_report(run_dir: Path, figures: bool = True) -> None:
        os.kill(os.getpid(), signal.SIGINT)  # recorded, not raised: the report still completes
        real(run_dir)

    monkeypatch.setattr(report, "write_report", interrupted_report)
    results = tmp_path / "r"
    status = cli.main(["run", str(REPO / "labs" / "mtu"), "--quick", "--scenario", "tcp-a", "--results", str(results)])
    assert status == 130, capsys.readouterr().err
    (run,) = [d for d in (results / "mtu").iterdir() if d.name != "latest"]
    m = json.loads((run / "manifest.json").read_text())
    assert m["complete"] is False and m["incomplete_reason"] == "interrupted by SIGINT"
    assert json.loads((run / "summary.json").read_text())["complete"] is False
    assert (run / "report.md").is_file() and not (results / "mtu" / "latest").exists()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler, "the run's handlers were not restored"
