"""A repetition whose transfer failed is never verified (analysis/verdict.py)."""

from __future__ import annotations

from mptcplab.analysis.verdict import transfer_failure


def test_successful_transfer_has_no_finding():
    assert transfer_failure(None, 93.4, 0) is None


def test_iperf3_error_is_a_transfer_failure():
    f = transfer_failure("control socket has closed unexpectedly", 0.0, 1)
    assert f is not None and f.code == "transfer-failed"
    assert "control socket has closed unexpectedly" in f.message and "goodput 0" in f.message
    assert f.evidence == {"iperf3_error": "control socket has closed unexpectedly", "goodput_mbps": 0.0, "rc": 1,
                          "server_rc": None}


def test_zero_goodput_without_error_is_a_failure():
    f = transfer_failure(None, 0.0, 0)
    assert f is not None and f.message == "transfer failed (goodput 0): not verified"


def test_nonzero_exit_is_a_failure():
    f = transfer_failure(None, 50.0, 2)
    assert f is not None and "exit status 2" in f.message


def test_a_server_that_died_by_itself_is_a_failure():
    """The client finished with its numbers, but its server was killed (SIGKILL: -9)."""
    f = transfer_failure(None, 50.0, 0, -9)
    assert f is not None and "server killed by signal 9" in f.message and f.evidence["server_rc"] == -9
    assert transfer_failure(None, 50.0, 0, None) is None  # the run stopped it: says nothing
    assert "server exit status 1" in (transfer_failure(None, 50.0, 0, 1) or f).message
