"""Kind transfer: the argv it generates, its reader (client + server reports -> verdict) and
the tool's stream, which must be the same bytes for the same seed."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from mptcplab.lab.schema import Traffic, TransferFlow
from mptcplab.traffic import KINDS
from mptcplab.traffic.transfer import TransferKind, server_file, verdict
from mptcplab.traffic.transfer_tool import stream

SHA_A = "a" * 64
SHA_B = "b" * 64


def write(tmp: Path, client: dict | None, server: dict | None) -> Path:
    c = tmp / "transfer-main.client.json"
    if client is not None:
        c.write_text(json.dumps(client))
    if server is not None:
        server_file(tmp, "main").write_text(json.dumps(server))
    return c


def test_registered_and_in_the_flow_union():
    assert isinstance(KINDS["transfer"], TransferKind)
    t = Traffic.model_validate({"flows": {"m": {"kind": "transfer", "client": "c", "server": "s",
                                                 "server_address": "s:eth1", "bytes": "1MB", "seed": 7}}})
    f = t.flows["m"]
    assert isinstance(f, TransferFlow) and f.seed == 7 and f.port == 7100


@pytest.mark.parametrize("extra, needle", [
    ({"bytes": 0}, "bytes"), ({"bytes": "1MB", "direction": "download"}, "upload"),
    ({"bytes": "1MB", "seed": -1}, "seed"), ({"bytes": "1MB", "window": 3}, "window"), ({}, "bytes"),
])
def test_bad_transfer_flow(extra: dict, needle: str):
    with pytest.raises(ValidationError, match=needle):
        TransferFlow.model_validate({"kind": "transfer", "client": "c", "server": "s", "server_address": "s:eth1",
                                     **extra})




@pytest.mark.parametrize("sent, received, sb, rb, want", [
    (SHA_A, SHA_A, 10, 10, "equal"), (SHA_A, SHA_B, 10, 10, "differs"), (SHA_A, SHA_B, 10, 7, "incomplete"),
    (SHA_A, None, 10, None, "incomplete"),
])
def test_verdict(sent, received, sb, rb, want):
    assert verdict(sent, received, sb, rb) == want


def test_read_combines_both_reports(tmp_path: Path):
    path = write(tmp_path, {"bytes": 1_000_000, "sent_sha256": SHA_A, "seconds": 2.0, "connect_s": 0.001,
                            "seed": 1, "mptcp": True},
                 {"bytes": 1_000_000, "received_sha256": SHA_A, "seconds": 1.0, "error": None})
    o = KINDS["transfer"].read(path)
    assert o.error is None and o.metrics["verdict"] == "equal" and o.metrics["mptcp_socket"] is True
    assert o.goodput_mbps == pytest.approx(8.0) and o.seconds == 1.0


def test_read_short_or_missing_is_an_error(tmp_path: Path):
    path = write(tmp_path, {"bytes": 100, "sent_sha256": SHA_A, "seconds": 1.0}, {"bytes": 60, "received_sha256": SHA_B,
                                                                              "seconds": 1.0})
    o = KINDS["transfer"].read(path)
    assert o.metrics["verdict"] == "incomplete" and "60 of 100" in (o.error or "")
    server_file(tmp_path, "main").unlink()
    o = KINDS["transfer"].read(path)
    assert o.metrics["verdict"] == "incomplete" and "server.json" in (o.error or "")
    path.write_text("not json")
    assert "client.json" in (KINDS["transfer"].read(path).error or "")


def test_stream_is_seeded_and_exact():
    a = b"".join(stream(5, 200_000))
    assert len(a) == 200_000 and a == b"".join(stream(5, 200_000))
    assert hashlib.sha256(a).digest() != hashlib.sha256(b"".join(stream(6, 200_000))).digest()
    assert b"".join(stream(5, 10)) == a[:10]  # a prefix of the same stream
