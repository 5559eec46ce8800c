"""Records (record/archive.py): a run packed without its captures and restored where it
was; a campaign's items kept as records and restored on a machine without its results;
records that would write outside their place or over a run are refused whole."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest
from test_campaign_merge_compare import ITEMS, MTU, rep, write_campaign, write_run

from mptcplab.campaign import records
from mptcplab.campaign.executor import finished
from mptcplab.campaign.merge import merge
from mptcplab.campaign.planner import plan
from mptcplab.campaign.schema import load_campaign
from mptcplab.cli import main
from mptcplab.errors import LabInputError
from mptcplab.record import archive, store


def tree(d: Path) -> dict[str, bytes]:
    return {p.relative_to(d).as_posix(): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


@pytest.fixture
def run(tmp_path: Path) -> Path:
    d = write_run(tmp_path / "results", "20261124T000000Z-abcd", [rep("tcp-b", 1, 90.0, 1448)], "6.18.0", "here")
    r = d / "scenarios" / "tcp-b" / "rep1"
    (r / "probes").mkdir(parents=True)
    (r / "capture-client-eth1.pcap").write_bytes(b"\xd4\xc3\xb2\xa1" + bytes(5000))
    (r / "probes" / "ss-client.txt").write_text("raw ss output\n" * 100)
    (r / "probes" / "ss.csv").write_text("t,snd_wnd\n0,1000\n")
    (r / "probes" / "tcp_probe.trace").write_text("raw trace_pipe text\n" * 100)
    (r / "probes" / "tcp_probe.csv").write_text("t,cwnd\n0,10\n" * 100)
    (r / "probes" / "subflow_series.csv").write_text("t,cwnd\n0,10\n")
    (r / "rep.json").write_text('{"name": "tcp-b"}\n')
    return d


def test_a_run_travels_without_its_captures(run: Path, tmp_path: Path) -> None:
    k = archive.pack_run(run, tmp_path / "records")
    assert k.path.name == "mtu__20261124T000000Z-abcd.tar.xz" and k.left_out == 4
    with tarfile.open(k.path) as tar:
        names = tar.getnames()
    assert names[0] == "mtu/20261124T000000Z-abcd/ARCHIVE.json"
    assert not any(n.endswith((".pcap", "ss-client.txt", "tcp_probe.trace", "tcp_probe.csv")) for n in names)
    assert any(n.endswith("probes/subflow_series.csv") for n in names), "what the cwnd metrics read stays"
    index = archive.read_index(k.path)
    left = {f["path"]: f for f in index["left_out"]}
    pcap = run / "scenarios/tcp-b/rep1/capture-client-eth1.pcap"
    assert left[pcap.relative_to(run.parent.parent).as_posix()]["sha256"] == \
        hashlib.sha256(pcap.read_bytes()).hexdigest(), "the record names the evidence it left out"

    where, now = archive.restore(k.path, tmp_path / "elsewhere")
    assert now and where == tmp_path / "elsewhere" / "mtu" / run.name
    left_out = (".pcap", "ss-client.txt", "tcp_probe.trace", "tcp_probe.csv")
    want = {p: b for p, b in tree(run).items() if not p.endswith(left_out)}
    got = tree(where)
    assert got.pop("ARCHIVE.json") and got == want
    assert not list((tmp_path / "elsewhere" / "mtu").glob(".partial-*")), "no staging left"
    # again: the same record is there already, nothing changes
    assert archive.restore(k.path, tmp_path / "elsewhere") == (where, False)
    # packing the same run again gives the same record; packing it again is not an error
    assert archive.pack_run(run, tmp_path / "records").path == k.path


def test_packing_again_reads_no_capture(run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A campaign packs its finished items again each time it is resumed: the captures
    (gigabytes a round) are then known by name and size, not hashed again; a record whose
    packed files or captures' sizes differ from the run's is refused, never replaced."""
    k = archive.pack_run(run, tmp_path / "records")
    before = k.path.read_bytes()
    hashed: list[str] = []
    real = archive._sha256

    def counting(p: Path) -> str:
        hashed.append(p.name)
        return real(p)

    monkeypatch.setattr(archive, "_sha256", counting)
    again = archive.pack_run(run, tmp_path / "records")
    assert again.path == k.path and again.left_out == 4 and k.path.read_bytes() == before
    assert "rep.json" in hashed and not {"capture-client-eth1.pcap", "ss-client.txt"} & set(hashed)
    pcap = run / "scenarios/tcp-b/rep1/capture-client-eth1.pcap"
    pcap.write_bytes(pcap.read_bytes() + b"more")
    with pytest.raises(LabInputError, match="holds other files"):
        archive.pack_run(run, tmp_path / "records")
    pcap.write_bytes(pcap.read_bytes()[:-4])
    (run / "rep.txt").write_text("a file packed now that was not then\n")
    with pytest.raises(LabInputError, match="holds other files"):
        archive.pack_run(run, tmp_path / "records")
    assert k.path.read_bytes() == before


def test_a_run_there_is_never_overwritten(run: Path, tmp_path: Path) -> None:
    k = archive.pack_run(run, tmp_path / "records")
    other = tmp_path / "elsewhere" / "mtu" / run.name
    other.mkdir(parents=True)
    (other / "summary.json").write_text("{}")
    with pytest.raises(LabInputError, match="exists and is not this record"):
        archive.restore(k.path, tmp_path / "elsewhere")
    assert tree(other) == {"summary.json": b"{}"}


def test_a_run_being_written_is_not_packed(run: Path, tmp_path: Path) -> None:
    store.write_json(run / store.OWNER, store.owner_record())
    with pytest.raises(LabInputError, match="still being written"):
        archive.pack_run(run, tmp_path / "records")
    assert not (tmp_path / "records").exists() or not list((tmp_path / "records").iterdir())


def _record(path: Path, members: list[tuple[tarfile.TarInfo, bytes]], root: str = "mtu/r1") -> Path:
    index = {"format": 1, "kind": "run", "name": root, "root": root, "files": [], "left_out": []}
    data = json.dumps(index).encode()
    with tarfile.open(path, "w:xz") as tar:
        info = tarfile.TarInfo(f"{root}/ARCHIVE.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        for info, body in members:
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    return path


def test_a_record_reaching_outside_its_root_restores_nothing(tmp_path: Path) -> None:
    rec = _record(tmp_path / "bad.tar.xz", [(tarfile.TarInfo("mtu/r1/summary.json"), b"{}"),
                                            (tarfile.TarInfo("mtu/r1/../../evil"), b"x")])
    dest = tmp_path / "dest"
    with pytest.raises(LabInputError, match=r"evil: is not a file or directory under the record's root"):
        archive.restore(rec, dest)
    assert not (tmp_path / "evil").exists() and not (dest / "evil").exists()
    assert not any(p.is_file() for p in dest.rglob("*")), "nothing half-restored"

    link = tarfile.TarInfo("mtu/r1/summary.json")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
    rec = _record(tmp_path / "link.tar.xz", [(link, b"")])
    with pytest.raises(LabInputError, match="is not a file or directory"):
        archive.restore(rec, dest)
    assert not (dest / "mtu" / "r1").exists()


@pytest.mark.parametrize("content, problem", [
    (b"not an archive", "cannot be read"),
    (None, "its first member is not ARCHIVE.json"),
])
def test_what_is_not_a_record_is_one_line(tmp_path: Path, content: bytes | None, problem: str) -> None:
    rec = tmp_path / "x.tar.xz"
    if content is not None:
        rec.write_bytes(content)
    else:
        with tarfile.open(rec, "w:xz") as tar:
            info = tarfile.TarInfo("mtu/r1/summary.json")
            info.size = 2
            tar.addfile(info, io.BytesIO(b"{}"))
    with pytest.raises(LabInputError, match=problem) as e:
        archive.read_index(rec)
    assert "\n" not in str(e.value) and str(rec) in str(e.value)
    assert main(["restore", str(rec), "--into", str(tmp_path / "d")]) == 2


CAMPAIGN = f"""name: synthetic
labs:
  - lab: {MTU}
    scenarios: [tcp-b]
targets:
  - name: here
repetitions: 3
"""


def test_a_campaign_in_parts_on_fresh_machines(tmp_path: Path) -> None:
    """Part 1 measures rounds 1-2 and keeps them as records; part 2, on a machine without
    part 1's results, restores them, and its merge holds all three rounds."""
    f = tmp_path / "c.yml"
    f.write_text(CAMPAIGN)
    c, base = load_campaign(f)
    order = plan(c, base, str(f))
    keep = tmp_path / "records"

    def measure(out: Path, rnd: int, goodput: float) -> None:
        i = order[rnd - 1]
        write_run(out / "items" / i.id / "results", f"20261124T00000{rnd}Z-abcd",
                  [rep("tcp-b", 1, goodput, 1448)], "6.18.0", "here")

    part1 = tmp_path / "machine1" / "camp"
    for rnd, g in ((1, 90.0), (2, 94.0)):
        measure(part1, rnd, g)
    packed = records.pack_finished(part1, order, keep, c.name, log=lambda _: None)
    assert [p.path.name for p in packed] == [f"{order[0].id}.tar.xz", f"{order[1].id}.tar.xz"]
    # a record of another plan (other scenarios: another item id) is not restored
    other = archive.pack_item(part1, "mtu__here__r1__ffffffff", finished(part1, order[0]) or part1,
                              tmp_path / "other", c.name)
    other.path.rename(keep / other.path.name)

    part2 = tmp_path / "machine2" / "camp"
    lines: list[str] = []
    restored = records.restore_unfinished(part2, order, keep, c.name, log=lines.append)
    assert len(restored) == 2 and any("not an item of this plan" in line for line in lines)
    assert finished(part2, order[0]) and finished(part2, order[1]) and finished(part2, order[2]) is None
    measure(part2, 3, 80.0)
    (part2 / "campaign.json").write_text(json.dumps({
        "name": c.name, "seed": 1, "shuffle": False, "targets": {"here": {"kind": "local"}},
        "order": [i.id for i in order],
        "items": {i.id: {"target": "here", "lab": "mtu", "lab_dir": str(MTU), "round": i.round} for i in order}}))
    col, = merge(part2)
    assert [(r.rep, r.goodput_mbps) for r in col.summary.scenarios] == [(1, 90.0), (2, 94.0), (3, 80.0)]
    # restoring again is a no-op, and part 2's own round is packed beside the others
    assert records.restore_unfinished(part2, order, keep, c.name, log=lambda _: None) == []
    assert len(records.pack_finished(part2, order, keep, c.name, log=lambda _: None)) == 3


def test_archive_and_restore_commands(tmp_path: Path) -> None:
    out = tmp_path / "camp"
    write_campaign(out, ITEMS)
    assert main(["archive", str(out), "--out", str(tmp_path / "recs")]) == 0
    recs = sorted((tmp_path / "recs").glob("*.tar.xz"))
    assert len(recs) == 5, "every finished item, not the killed one"
    fresh = tmp_path / "fresh"
    assert main(["restore", *map(str, recs), "--into", str(fresh)]) == 0
    assert main(["restore", *map(str, recs), "--into", str(fresh)]) == 0  # already there: fine
    assert len(list(fresh.glob("items/*/results/mtu/2*/summary.json"))) == 5
    assert main(["archive", str(tmp_path / "nope"), "--out", str(tmp_path / "r")]) == 2


def test_the_dry_run_names_the_records_it_would_restore(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "c.yml"
    f.write_text(CAMPAIGN)
    c, base = load_campaign(f)
    first = plan(c, base, str(f))[0]
    keep = tmp_path / "records"
    keep.mkdir()
    (keep / f"{first.id}.tar.xz").write_bytes(b"")
    assert main(["campaign", str(f), "--out", str(tmp_path / "camp"), "--no-shuffle", "--dry-run",
                 "--records", str(keep)]) == 0
    out = capsys.readouterr().out
    assert f"{first.id}: lab mtu round 1 on here (local): its record" in out
    assert out.count("would be restored") == 1 and not (tmp_path / "camp").exists()


def test_a_record_changed_since_it_was_packed_restores_nothing(run: Path, tmp_path: Path) -> None:
    """The index lists each file's SHA-256: a member whose bytes differ (a damaged or edited
    record) stops the restore, and nothing of it stays."""
    k = archive.pack_run(run, tmp_path / "records")
    with tarfile.open(k.path) as tar:
        members = [(m, (tar.extractfile(m) or io.BytesIO()).read()) for m in tar.getmembers()]
    forged = tmp_path / "forged.tar.xz"
    with tarfile.open(forged, "w:xz") as tar:
        for m, body in members:
            if m.name.endswith("rep1/rep.json"):
                body = body.replace(b"tcp-b", b"tcp-x")
            m.size = len(body)
            tar.addfile(m, io.BytesIO(body))
    with pytest.raises(LabInputError, match=r"1 listed file\(s\) missing from the record or not as packed"):
        archive.restore(forged, tmp_path / "dest")
    assert not any(p.is_file() for p in (tmp_path / "dest").rglob("*"))
    assert archive.restore(k.path, tmp_path / "dest")[1], "the intact record restores"
