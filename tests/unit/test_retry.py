"""A repetition whose test never started (iperf3's control exchange broke before any data)
is measured again, once, with the failed attempt's files kept and the retry said in the
record; and the run's log line copes with a repetition that has no goodput."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from mptcplab.record.model import Repetition
from mptcplab.run import lab as labrun
from mptcplab.run import retry
from mptcplab.traffic.base import ClientRun, Outcome
from mptcplab.traffic.iperf3 import Iperf3Kind
from mptcplab.traffic.udp import UdpKind

NEVER_STARTED = "control socket has closed unexpectedly"


@pytest.mark.parametrize("kind", [Iperf3Kind(), UdpKind()])
def test_only_a_control_failure_without_data_is_a_setup_failure(kind: Any) -> None:
    assert kind.setup_failure(Outcome(goodput_mbps=0.0, error=NEVER_STARTED)) == NEVER_STARTED
    assert kind.setup_failure(Outcome(goodput_mbps=None, error="error - unable to receive parameters from client"))
    # data was counted: a measurement that went wrong later, analyzed as it is
    assert kind.setup_failure(Outcome(goodput_mbps=12.5, error=NEVER_STARTED)) is None
    # the server died mid-transfer: no end summary, but completed intervals counted data
    assert kind.setup_failure(Outcome(goodput_mbps=0.0, error=NEVER_STARTED, interval_bytes=1_250_000)) is None
    # the network refused the connection: that is a result (a middlebox, a dead path)
    refused = "unable to connect to server: Connection refused"
    assert kind.setup_failure(Outcome(goodput_mbps=0.0, error=refused)) is None
    assert kind.setup_failure(Outcome(goodput_mbps=0.0)) is None


class FakeRunner:
    """Measures by writing which attempt it was into the repetition directory."""

    attempts: list[Path] = []

    def __init__(self, _ctx: object, _sc: object, _rep: int, out: Path) -> None:
        self.out = out

    def measure(self) -> Any:
        self.out.mkdir(parents=True, exist_ok=False)
        (self.out / "commands.log").write_text(f"attempt {len(self.attempts) + 1}\n")
        self.attempts.append(self.out)
        late = LATE.pop(0) if LATE else False
        stats = {"lateness_us": {"n": 5000, "p50": 100, "p99": 3000 if late else 200, "max": 9000}, "delay_us": 2000}
        return SimpleNamespace(job=SimpleNamespace(warnings=["a step's warning"], clients={},
                                                   extra={"delay_line_stats": {"ra:eth1->rb:eth1": stats}}))


#: per attempt, whether the fake's delay line is late (then on time)
LATE: list[bool] = []


def measure(sc: str, rep: int, out: Path, log: Any, late_retries: int = 0) -> Any:
    """retry.measure_repetition with the fake runner (the context and scenario go unread)."""
    return retry.measure_repetition(cast(Any, SimpleNamespace()), cast(Any, SimpleNamespace(name=sc)), rep, out,
                                     log, cast(Any, FakeRunner), late_retries=late_retries)


def test_never_started_is_measured_again_once_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    FakeRunner.attempts = []
    LATE.clear()
    monkeypatch.setattr(retry, "setup_failure", lambda m: f"flow mp: {NEVER_STARTED}")  # fails every time
    lines: list[str] = []
    out = tmp_path / "scenarios" / "lia" / "rep3"
    m = measure("lia", 3, out, lines.append)
    assert len(FakeRunner.attempts) == 2, "one retry, never more"
    kept = tmp_path / "scenarios" / "lia" / "failed" / "rep3-attempt1"
    assert (kept / "commands.log").read_text() == "attempt 1\n", "the failed attempt is kept, not overwritten"
    assert (out / "commands.log").read_text() == "attempt 2\n"
    (w,) = [w for w in m.job.warnings if isinstance(w, dict)]
    assert w["code"] == retry.REPETITION_RETRIED and NEVER_STARTED in w["message"]
    assert "lia/failed/rep3-attempt1" in w["message"] and "a step's warning" in m.job.warnings
    assert len(lines) == 1 and "measuring it again" in lines[0]


def test_a_repetition_that_started_is_measured_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    FakeRunner.attempts = []
    monkeypatch.setattr(retry, "setup_failure", lambda m: None)
    m = measure("s", 1, tmp_path / "rep1", print)
    assert len(FakeRunner.attempts) == 1 and m.job.warnings == ["a step's warning"]
    assert not (tmp_path / "failed").exists()


def test_a_disturbed_repetition_is_measured_again_up_to_the_limit(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A delay line late every time: late_retries more attempts, each kept, and the last one
    counts (still late: the run's validity check sees it)."""
    FakeRunner.attempts = []
    LATE[:] = [True, True, True]
    monkeypatch.setattr(retry, "setup_failure", lambda m: None)
    lines: list[str] = []
    out = tmp_path / "scenarios" / "wlan" / "rep2"
    m = measure("wlan", 2, out, lines.append, late_retries=2)
    assert len(FakeRunner.attempts) == 3
    for k in (1, 2):
        kept = tmp_path / "scenarios" / "wlan" / "failed" / f"rep2-attempt{k}"
        assert (kept / "commands.log").read_text() == f"attempt {k}\n"
    assert (out / "commands.log").read_text() == "attempt 3\n"
    assert retry.late_delay_lines(m) is not None, "the last attempt counts as it is"
    (w,) = [w for w in m.job.warnings if isinstance(w, dict)]
    assert w["code"] == retry.REPETITION_RETRIED
    assert "wlan/failed/rep2-attempt1" in w["message"] and "wlan/failed/rep2-attempt2" in w["message"]
    assert "release lateness p99 3000 us" in w["message"] and "attempt 3's" in w["message"]
    assert [ln.split(":")[0] for ln in lines] == ["wlan rep 2"] * 2


def test_a_repetition_on_time_after_one_retry_stops_there(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    FakeRunner.attempts = []
    LATE[:] = [True, False, True]
    monkeypatch.setattr(retry, "setup_failure", lambda m: None)
    m = measure("s", 1, tmp_path / "scenarios" / "s" / "rep1", print, late_retries=3)
    assert len(FakeRunner.attempts) == 2 and retry.late_delay_lines(m) is None
    LATE[:] = [True]
    FakeRunner.attempts = []
    m = measure("s", 2, tmp_path / "scenarios" / "s" / "rep2", print, late_retries=0)
    assert len(FakeRunner.attempts) == 1, "late_retries 0: never measured again for lateness"
    assert m.job.warnings == ["a step's warning"]


def test_a_late_attempt_with_a_fault_is_reported_not_measured_again(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The faults suite's case: the server killed mid-transfer on a loaded host, whose delay
    line was late too. A clean re-measure would hide the fault: it stays the repetition."""
    FakeRunner.attempts = []
    LATE[:] = [True, False]
    monkeypatch.setattr(retry, "setup_failure", lambda m: None)
    real = FakeRunner.measure

    def with_dead_server(self: FakeRunner) -> Any:
        m = real(self)
        m.job.clients = {"mp": ClientRun(Path("unused"), 0.0, "iperf3", 0, server_rc=-9)}
        return m

    monkeypatch.setattr(FakeRunner, "measure", with_dead_server)
    m = measure("s", 1, tmp_path / "scenarios" / "s" / "rep1", print, late_retries=1)
    assert len(FakeRunner.attempts) == 1 and retry.attempt_failed(m) == "the server of flow mp died"
    assert m.job.warnings == ["a step's warning"]
    m.job.clients = {}
    m.job.extra["capture_stats"] = {"client:eth1": {"died": -9}}
    assert retry.attempt_failed(m) == "the capture at client:eth1 died"


def test_never_started_then_disturbed_numbers_the_attempts_in_order(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    FakeRunner.attempts = []
    LATE[:] = [False, True, False]
    calls = iter([f"flow mp: {NEVER_STARTED}"])
    monkeypatch.setattr(retry, "setup_failure", lambda m: next(calls, None))
    m = measure("s", 1, tmp_path / "scenarios" / "s" / "rep1", print, late_retries=1)
    assert len(FakeRunner.attempts) == 3
    (w,) = [w for w in m.job.warnings if isinstance(w, dict)]
    assert "attempt 1 of this repetition never started" in w["message"]
    assert "attempt 2 of this repetition was disturbed" in w["message"] and "attempt 3's" in w["message"]


def test_log_line_of_a_repetition_without_goodput() -> None:
    """An http/churn-only scenario has no bulk goodput (None): the log line says so."""
    lines: list[str] = []
    rec = {"name": "apps", "rep": 1, "goodput_mbps": None, "analysis_seconds": None, "warnings": [],
           "mptcp": {"requested": True, "verified": True}}
    labrun.log_rep(lines.append, Repetition.model_validate(rec), 1, 3.2)
    assert lines == ["apps rep 1/1: no goodput, MPTCP verified, measured in 3.2 s"]
    # a churn's repetition says how many connections it made instead (labs/setup)
    churn = {"attempted": 20000, "completed": 19998, "rate_per_s": 1227.2}
    churned = {**rec, "goodput_mbps": 0.0, "flows": [{"name": "churn", "kind": "churn", "churn": churn}]}
    labrun.log_rep(lines.append, Repetition.model_validate(churned), 1, 16.3)
    assert lines[-1] == "apps rep 1/1: 19,998 of 20,000 connections (1227/s), MPTCP verified, measured in 16.3 s"


@pytest.mark.parametrize("kind", [Iperf3Kind(), UdpKind()])
def test_a_server_gone_mid_transfer_is_not_retried(kind: Any, tmp_path: Path) -> None:
    """iperf3's JSON when its server died after the first interval: an error, no end
    summary, one interval of data (the faults suite's kill of the server mid-traffic)."""
    f = tmp_path / "client.json"
    f.write_text(json.dumps({"start": {}, "intervals": [{"sum": {"bytes": 4_000_000, "seconds": 1.0}}],
                             "end": {}, "error": "error - control socket has closed unexpectedly"}))
    o = kind.read(f)
    assert o.interval_bytes == 4_000_000 and kind.setup_failure(o) is None
    f.write_text(json.dumps({"start": {}, "intervals": [], "end": {},
                             "error": "error - control socket has closed unexpectedly"}))
    assert kind.setup_failure(kind.read(f)) == "error - control socket has closed unexpectedly"
