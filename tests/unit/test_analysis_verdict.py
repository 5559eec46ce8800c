"""A repetition whose transfer failed is never verified (analysis/verdict.py)."""

from __future__ import annotations

from mptcplab.analysis.verdict import transfer_failure


def test_successful_transfer_has_no_finding():
    assert transfer_failure(None, 93.4, 0) is None


def test_iperf3_error_is_a_transfer_failure():
    f = transfer_failure("control socket has closed unexpectedly", 0.0, 1)
    assert f is not None and f.code == "transfer-failed"
    assert "control socket has closed unexpectedly" in f.message and "goodput 0" in f.message
    assert f.evidence == {"iperf3_error": "control socket has closed unexpectedly", "goodput_mbps": 0.0, "rc": 1}


def test_zero_goodput_without_error_is_a_failure():
    f = transfer_failure(None, 0.0, 0)
    assert f is not None and f.message == "transfer failed (goodput 0): not verified"


def test_nonzero_exit_is_a_failure():
    f = transfer_failure(None, 50.0, 2)
    assert f is not None and "exit status 2" in f.message
