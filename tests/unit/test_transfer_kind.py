"""Kind transfer: the argv it generates, its reader (client + server reports -> verdict), the
tool's stream, which must be the same bytes for the same seed, and the server's comparison
with it (runs of differing bytes -> ranges, misplaced or made up: transfer_diff.py)."""

from __future__ import annotations

import hashlib
import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pydantic import ValidationError
from toolkit import listening

from mptcplab.lab.schema import Traffic
from mptcplab.traffic.kinds import KINDS
from mptcplab.traffic.transfer import TOOL, TransferKind, server_file, verdict
from mptcplab.traffic.transfer_diff import Range, foreign_bytes, ranges
from mptcplab.traffic.transfer_schema import TransferFlow
from mptcplab.traffic.transfer_tool import MAX_RUNS, Comparison, stream

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
    ({"bytes": 0}, "bytes"), ({"bytes": "1MB", "direction": "sideways"}, "direction"),
    ({"bytes": "1MB", "rate": "fast"}, "rate"), ({"bytes": "1MB", "rate": "0KB/s"}, "rate"),
    ({"bytes": "1MB", "fastclose": "client"}, "download or both"),
    ({"bytes": "1MB", "direction": "download", "fastclose": "server"}, "upload or both"),
    ({"bytes": "1MB", "fastclose": "router"}, "fastclose"),
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


N = 300_000
SENT = b"".join(stream(9, N))


def compare(received: bytes, chunk: int = 65536) -> dict:
    c = Comparison(9, N)
    for i in range(0, len(received), chunk):
        c.feed(received[i:i + chunk])
    return c.report()


def misplaced(at: int, source: int, length: int) -> bytes:
    """What a receiver that queued ``length`` bytes sent at ``source`` at ``at`` delivers
    (labs/middlebox row k)."""
    return SENT[:at] + SENT[source:source + length] + SENT[at + length:]


def test_comparison_intact_reports_nothing():
    assert compare(SENT) == {"differing_bytes": 0, "runs_left_off": 0, "runs": []}


def test_comparison_finds_misplaced_bytes_across_reads():
    got = misplaced(65_000, 200_000, 674)  # the range spans the first two 64 KiB reads
    rep = compare(got)
    differing = sum(a != b for a, b in zip(got, SENT, strict=True))
    assert rep["differing_bytes"] == differing and rep["runs_left_off"] == 0
    assert sum(r["length"] for r in rep["runs"]) == differing
    assert rep["runs"][0]["offset"] >= 65_000 and rep["runs"][-1]["offset"] + rep["runs"][-1]["length"] <= 65_674
    for r in rep["runs"]:  # what arrived, kept whole
        assert bytes.fromhex(r["data"]) == got[r["offset"]:r["offset"] + r["length"]]
    # no run crosses the read boundary split in two
    assert all(a["offset"] + a["length"] < b["offset"] for a, b in zip(rep["runs"], rep["runs"][1:], strict=False))
    found = ranges(rep["runs"], 9, N)
    (r,) = found
    assert r.source is not None and r.source - r.offset == 200_000 - 65_000
    assert 65_000 <= r.offset and r.offset + r.length <= 65_674
    assert r.differing == differing and foreign_bytes(found, differing) == 0


def test_comparison_made_up_bytes_are_foreign():
    got = bytearray(SENT)
    got[1000] ^= 0xFF  # one byte inverted (row l): found nowhere
    got[5000:5100] = bytes(100)  # zeros are not the stream's
    rep = compare(bytes(got))
    found = ranges(rep["runs"], 9, N)
    assert [(r.offset, r.source) for r in found] == [(1000, None), (5000, None)] and found[0].length == 1
    differing = sum(a != b for a, b in zip(got, SENT, strict=True))  # a zero of the stream's stays equal
    assert foreign_bytes(found, rep["differing_bytes"]) == rep["differing_bytes"] == differing


def test_comparison_caps_runs_and_counts_the_rest():
    got = bytearray(SENT)
    for i in range(MAX_RUNS + 5):
        got[100 * i] ^= 1
    rep = compare(bytes(got))
    assert len(rep["runs"]) == MAX_RUNS and rep["runs_left_off"] == 5 and rep["differing_bytes"] == MAX_RUNS + 5
    # the runs left off are not shown to be misplaced: foreign
    assert foreign_bytes(ranges(rep["runs"], 9, N), rep["differing_bytes"]) == MAX_RUNS + 5


def test_ranges_merge_near_runs_and_look_up_only_known_bytes():
    one = [{"offset": 10, "length": 40, "data": SENT[500:540].hex()}]
    assert ranges(one, 9, N) == [Range(10, 40, 40, 500, 40)]
    assert ranges(one, None, None) == [Range(10, 40, 40, None)]  # no stream to look in
    # 10 equal bytes between two runs: one range; the second run's bytes were not kept
    two = [*one, {"offset": 60, "length": 40, "data": ""}]
    assert ranges(two, 9, N) == [Range(10, 90, 80, None)]
    assert ranges([{"offset": 10, "length": 20, "data": SENT[500:520].hex()}], 9, N)[0].source is None  # < PROBE


def test_a_range_of_several_misplaced_pieces_is_found_piece_by_piece():
    """Labs/middlebox row d with one subflow: the receiver delivered one re-sent chunk again and
    again in place of what followed; every piece is the stream's own, none made up."""
    chunk = SENT[3000:3500]
    got = bytearray(SENT)
    got[20_000:21_500] = chunk * 3
    rep = compare(bytes(got))
    (r,) = ranges(rep["runs"], 9, N)
    assert r.source == 3000 and 0 < r.misplaced == r.differing == rep["differing_bytes"]
    assert foreign_bytes([r], rep["differing_bytes"]) == 0
    # the same with a made-up tail: the pieces stop where nothing is found, the rest is foreign
    got[21_500:21_600] = bytes(100)
    rep = compare(bytes(got))
    (r,) = ranges(rep["runs"], 9, N)
    assert r.source == 3000 and 0 < foreign_bytes([r], rep["differing_bytes"]) <= 100


def test_server_argv_and_read_carry_the_comparison(tmp_path: Path):
    from mptcplab.traffic.base import KindContext
    flow = TransferFlow.model_validate({"kind": "transfer", "client": "c", "server": "s", "server_address": "s:eth1",
                                        "bytes": "1MB", "seed": 9})

    class Net:
        def address(self, _ep: str) -> str:
            return "10.0.0.1"
    argv = KINDS["transfer"].server_argv(flow, "main", KindContext(net=Net(), duration_s=1.0,  # type: ignore[arg-type]
                                                                       workdir=tmp_path))
    assert argv[argv.index("--seed") + 1] == "9" and argv[argv.index("--bytes") + 1] == "1000000"
    got = misplaced(1000, 9000, 300)
    path = write(tmp_path, {"bytes": N, "sent_sha256": SHA_A, "seconds": 1.0, "seed": 9},
                 {"bytes": N, "received_sha256": SHA_B, "seconds": 1.0, "differs": compare(got)})
    m = KINDS["transfer"].read(path).metrics
    assert m["verdict"] == "differs" and m["foreign_bytes"] == 0 and m["differing_bytes"] > 290
    assert [d["source"] - d["offset"] for d in m["differences"]] == [8000]
    path = write(tmp_path, {"bytes": N, "sent_sha256": SHA_A, "seconds": 1.0, "seed": 9},
                 {"bytes": N, "received_sha256": SHA_A, "seconds": 1.0})
    assert "differing_bytes" not in KINDS["transfer"].read(path).metrics  # an older server: not compared


def test_read_stopped_transfer_is_a_measured_stall_not_an_error(tmp_path: Path):
    """A transfer the run stopped at its duration limit (a stall) reads as incomplete with no
    error: the repetition stays valid, the finding says what got through."""
    path = write(tmp_path, {"bytes": 100, "size": 400, "stopped": True, "sent_sha256": SHA_A, "seconds": 10.0},
                 {"bytes": 60, "received_sha256": SHA_B, "seconds": 10.0, "stopped": True})
    o = KINDS["transfer"].read(path)
    assert o.error is None and o.metrics["verdict"] == "incomplete"
    assert (o.metrics["stopped"], o.metrics["size"], o.metrics["received_bytes"]) == (True, 400, 60)


def _tool(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-I", str(TOOL), *args], stdout=subprocess.PIPE)




def test_stopped_sides_still_write_their_reports(tmp_path: Path):
    """The run's stop (SIGINT to the client at the duration limit, then SIGTERM to the server)
    leaves both reports, with what was sent and received so far: the client's count is what
    its socket took, exactly, even mid-chunk."""
    out = tmp_path / "server.json"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # the server reads everything; the client is stopped long before 1 GB has gone
    server = _tool("server", "--address", "127.0.0.1", "--port", str(port), "--out", str(out))
    try:
        listening(port)
        client = _tool("client", "--address", "127.0.0.1", "--port", str(port), "--bytes", str(1 << 30),
                       "--seed", "3")
        time.sleep(0.5)
        client.send_signal(signal.SIGINT)
        c = json.loads(client.communicate(timeout=10)[0])
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=10) == 0
    finally:
        for p in (server, client):
            if p.poll() is None:
                p.kill()
    s = json.loads(out.read_text())
    assert c["stopped"] is True, (c, client.returncode)
    assert c["size"] == 1 << 30 and 0 < c["bytes"] < 1 << 30 and "error" not in c
    # the client's socket closed when it stopped, so the server saw every byte it took
    assert s["bytes"] == c["bytes"] and s["received_sha256"] == c["sent_sha256"]
    assert s["stopped"] in (True, False) and s["error"] is None
