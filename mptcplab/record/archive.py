"""A run's record packed into one file without its packet captures, and unpacked again.

Why: the captures are nearly all of a run's bytes (a full rcvbuf round: 3.0 GB of 3.2),
while what the engine's readers use (summary.json, manifest.json, each repetition's rep.json
and analysis tables, the probes' tables, report.md) packs into a few megabytes (3.8 for that
round; LEFT_OUT says what else stays behind). A record travels (to a colleague, into a
repository, to the next machine of a campaign spread over several), and `restore` puts it
back where it came from, so `report` (which draws the figures again), `compare`, the
campaign merge and the notebooks read it as they read the run. It cannot be re-analyzed:
its captures are not in it. ``ARCHIVE.json`` (written into the record, kept after
restoring) lists every file left out with its size and SHA-256, so the record still names
the evidence it was derived from.

Two kinds of record, both of one run directory:
  run            results/<lab>/<run-id>/, restored under a results root
  campaign-item  a campaign item's run, items/<item-id>/results/<lab>/<run-id>/, restored
                 under a campaign directory, where the campaign counts the item finished

The packing is the standard library's tarfile and lzma; written here is only what a
record holds, and the checks that a restore never writes outside its place nor over a
run that is there (a completed run is never overwritten).
"""

from __future__ import annotations

import fnmatch
import hashlib
import io
import json
import os
import shutil
import tarfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from .. import __version__
from ..errors import LabInputError
from . import store

INDEX = "ARCHIVE.json"
FORMAT = 1
SUFFIX = ".tar.xz"
#: what a record leaves out, nine tenths of what is left once the captures are: packet
#: captures; the raw dumps whose parsed tables it keeps (ss-*.txt: probes/ss.csv,
#: nstat-<node>-<phase>.json: probes/nstat.csv, the latency tool's *.bin: its .csv); the
#: per-mapping DSN table the capture gave (dsn.csv: mptcp_retransmissions.csv and rep.json
#: keep what was read from it); tcp_probe's raw trace and its per-ACK table (tcp_probe.trace,
#: tcp_probe.csv: tens of MB per repetition; probes/subflow_series.csv and rep.json's counts
#: keep what the metrics read); and the figures, which `mptcplab report` draws again
LEFT_OUT = ("*.pcap", "*.pcapng", "*.pcap.gz", "ss-*.txt", "nstat-*.json", "*.bin", "dsn.csv", "tcp_probe.trace",
            "tcp_probe.csv", "*.png")
#: never packed: a run's working files (its owner record, a half-written JSON)
NEVER = (store.OWNER, "*.tmp")
KINDS = ("run", "campaign-item")


@dataclass(frozen=True)
class Packed:
    path: Path
    kind: str
    name: str  # <lab>/<run-id> or the item id
    files: int
    bytes_in: int  # bytes of the files packed, before compression
    left_out: int  # files left out
    left_out_bytes: int

    def line(self) -> str:
        return (f"record {self.path}: {self.files} files, {self.bytes_in / 1e6:.1f} MB before compression, "
                f"{self.path.stat().st_size / 1e6:.2f} MB packed; {self.left_out} file(s) "
                f"({self.left_out_bytes / 1e6:.0f} MB: captures, raw dumps) left out")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _matches(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def _files(top: Path) -> tuple[list[Path], list[Path]]:
    """The regular files under ``top``, sorted: (kept, left out). Symlinks are not
    followed nor packed (a run directory holds none; a campaign's ``latest`` is one)."""
    kept: list[Path] = []
    left: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames.sort()
        for fn in sorted(filenames):
            p = Path(dirpath) / fn
            if p.is_symlink() or not p.is_file() or _matches(fn, NEVER):
                continue
            (left if _matches(fn, LEFT_OUT) else kept).append(p)
    return kept, left


def _owner_problem(run_dir: Path) -> str | None:
    if (run_dir / store.OWNER).exists():
        return (f"{run_dir} is still being written (it has {store.OWNER}), or its run died "
                "unmarked: `mptcplab clean` marks it")
    return None


def _engine() -> dict[str, Any]:
    from .manifest import git_state

    return {"version": __version__, "git": git_state(Path(__file__).resolve().parents[2])}


def pack(kind: str, base: Path, members: Path, dest_dir: Path, name: str, about: dict[str, Any]) -> Packed:
    """Pack ``members`` (a directory under ``base``) into ``dest_dir/<name with / as __>.tar.xz``,
    paths relative to ``base``. Written to a temporary name and renamed: a record is whole
    or absent. A record of the same name there already is kept when it lists the same
    files (the same run packed again); one listing others is refused, never replaced.
    That check hashes the files packed, but knows those left out by name and size only:
    they are the gigabytes of captures, and a campaign packs its finished items again
    each time it is resumed."""
    kept, left = _files(members)
    # a run restored from a record: its own index is not one of its files, and the
    # captures that record left out are still the evidence this one names
    prior = members / INDEX
    kept = [p for p in kept if p != prior]
    earlier = json.loads(prior.read_text()).get("left_out", []) if prior.is_file() else []
    rel = PurePosixPath(members.relative_to(base).as_posix())
    files = [{**e, "sha256": _sha256(p)} for p, e in zip(kept, _entries(base, kept), strict=True)]
    left_entries = _entries(base, left)
    dest = dest_dir / (name.replace("/", "__") + SUFFIX)
    if dest.exists():
        old = read_index(dest)
        if old["files"] == files and _unhashed(old["left_out"]) == _unhashed(earlier) + left_entries:
            return _packed(dest, old)
        raise LabInputError(str(dest), "record", "exists and holds other files than "
                            f"{members}; remove it or pack elsewhere (records are never overwritten)")
    index = {
        "format": FORMAT, "kind": kind, "name": name, "root": rel.as_posix(), **about,
        "packed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "packed_by": _engine(),
        "left_out_rule": list(LEFT_OUT), "files": files,
        "left_out": earlier + [{**e, "sha256": _sha256(p)} for p, e in zip(left, left_entries, strict=True)],
    }
    dest_dir.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    try:
        with tarfile.open(tmp, "w:xz", preset=9) as tar:
            data = (json.dumps(index, indent=1) + "\n").encode()
            info = tarfile.TarInfo((rel / INDEX).as_posix())
            info.size, info.mtime, info.mode = len(data), int(time.time()), 0o644
            tar.addfile(info, io.BytesIO(data))  # first: restore reads it before anything else
            for p in kept:
                tar.add(p, arcname=p.relative_to(base).as_posix(), recursive=False, filter=_plain)
        tmp.replace(dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return _packed(dest, index)


def _entries(base: Path, paths: list[Path]) -> list[dict[str, Any]]:
    return [{"path": p.relative_to(base).as_posix(), "bytes": p.stat().st_size} for p in paths]


def _unhashed(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"path": e["path"], "bytes": e["bytes"]} for e in entries]


def _plain(info: tarfile.TarInfo) -> tarfile.TarInfo:
    # whose files they were on the machine that packed them is no part of the record
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def _packed(dest: Path, index: dict[str, Any]) -> Packed:
    return Packed(dest, index["kind"], index["name"], len(index["files"]),
                  sum(f["bytes"] for f in index["files"]), len(index["left_out"]),
                  sum(f["bytes"] for f in index["left_out"]))


def pack_run(run_dir: Path, dest_dir: Path) -> Packed:
    """A run directory results/<lab>/<run-id> as the record <lab>__<run-id>.tar.xz."""
    run_dir = run_dir.resolve()  # results/<lab>/latest names its run
    if not (run_dir / "summary.json").is_file():
        raise LabInputError("command line", "RUN_DIR", f"{run_dir} is not a run directory (no summary.json)")
    problem = _owner_problem(run_dir)
    if problem:
        raise LabInputError("command line", "RUN_DIR", problem)
    lab, run_id = run_dir.parent.name, run_dir.name
    return pack("run", run_dir.parent.parent, run_dir, dest_dir, f"{lab}/{run_id}", {"lab": lab, "run_id": run_id})


def pack_item(campaign_dir: Path, item_id: str, run_dir: Path, dest_dir: Path, campaign: str) -> Packed:
    """A finished campaign item's run (items/<item-id>/results/<lab>/<run-id>) as
    <item-id>.tar.xz, restored to the same place under a campaign directory."""
    problem = _owner_problem(run_dir)
    if problem:
        raise LabInputError(str(campaign_dir), f"items.{item_id}", problem)
    return pack("campaign-item", campaign_dir, run_dir, dest_dir, item_id,
                {"campaign": campaign, "item": item_id, "lab": run_dir.parent.name, "run_id": run_dir.name})


def read_index(path: Path) -> dict[str, Any]:
    """A record's ARCHIVE.json (its first member), checked; LabInputError naming the file
    and what is wrong when it is not a record this engine reads."""
    def bad(problem: str) -> LabInputError:
        return LabInputError(str(path), INDEX, problem)

    try:
        with tarfile.open(path, "r:xz") as tar:
            first = tar.next()
            if first is None or PurePosixPath(first.name).name != INDEX or not first.isfile():
                raise bad(f"not a record of mptcplab: its first member is not {INDEX}")
            f = tar.extractfile(first)
            data = json.loads(f.read()) if f is not None else None
    except (tarfile.TarError, EOFError, OSError) as e:  # lzma.LZMAError is an OSError
        raise LabInputError(str(path), "record", f"cannot be read: {e}") from None
    except ValueError as e:
        raise bad(f"not JSON: {e}") from None
    if not isinstance(data, dict):
        raise bad("not an object")
    if data.get("format") != FORMAT:
        raise bad(f"format: {data.get('format')!r}; this engine reads records of format {FORMAT}")
    if data.get("kind") not in KINDS:
        raise bad(f"kind: {data.get('kind')!r} is none of {', '.join(KINDS)}")
    root = data.get("root")
    if not isinstance(root, str) or not _safe(root) or PurePosixPath(first.name).parent != PurePosixPath(root):
        raise bad(f"root: {root!r} is not where the record's index is")
    for key in ("files", "left_out"):
        entries = data.get(key)
        if not isinstance(entries, list):
            raise bad(f"{key}: missing")
        for n, entry in enumerate(entries):
            if not (isinstance(entry, dict) and isinstance(entry.get("path"), str) and _safe(entry["path"])
                    and PurePosixPath(entry["path"]).is_relative_to(PurePosixPath(root))
                    and isinstance(entry.get("bytes"), int) and isinstance(entry.get("sha256"), str)):
                raise bad(f"{key}[{n}]: not a file under {root} with its bytes and sha256")
    return data


def _safe(rel: str) -> bool:
    p = PurePosixPath(rel)
    return bool(rel) and not p.is_absolute() and ".." not in p.parts and "" not in p.parts


def _write(tar: tarfile.TarFile, m: tarfile.TarInfo, dest: Path) -> str:
    """One checked member's bytes, as a plain file (not tarfile's extract: its safety filter
    is missing from Debian 12's Python 3.11.2, and these members are checked already); their
    SHA-256."""
    src = tar.extractfile(m)
    if src is None:
        raise tarfile.ExtractError(f"{m.name}: no content")
    dest.parent.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256()
    with src, open(dest, "wb") as out:
        for chunk in iter(lambda: src.read(1 << 20), b""):
            h.update(chunk)
            out.write(chunk)
    os.utime(dest, (m.mtime, m.mtime))
    return h.hexdigest()


def restore(path: Path, dest_base: Path) -> tuple[Path, bool]:
    """Unpack the record into ``dest_base`` (a results root for a run, a campaign directory
    for a campaign item): (its root there, whether it was unpacked now). A root that is
    there already is left as it is: the same record restored before (the same files) is
    not an error, anything else is (a completed run is never overwritten). Unpacked into
    a staging directory with an owner record and renamed into place, so a kill leaves
    nothing that `mptcplab clean` or the next run does not remove."""
    index = read_index(path)
    root = PurePosixPath(index["root"])
    target = dest_base / root
    if target.exists():
        there = target / INDEX
        try:
            same = json.loads(there.read_text()).get("files") == index["files"]
        except (OSError, ValueError):
            same = False
        if same:
            return target, False
        raise LabInputError(str(path), "root", f"{target} exists and is not this record; "
                            "restore it elsewhere (a run is never overwritten)")
    staging = target.with_name(store.PARTIAL + target.name)
    if staging.exists():
        owner = store.read_owner(staging)
        if owner is not None and store.owner_alive(owner):
            raise LabInputError(str(path), "root", f"another process is restoring it ({staging})")
        shutil.rmtree(staging)  # what a killed restore left
    staging.mkdir(parents=True)
    got: dict[str, str] = {}  # member -> SHA-256 of what was written
    try:
        store.write_json(staging / store.OWNER, store.owner_record())
        with tarfile.open(path, "r:xz") as tar:
            for m in tar:
                if not _safe(m.name) or not PurePosixPath(m.name).is_relative_to(root) \
                        or not (m.isfile() or m.isdir()):
                    raise LabInputError(str(path), m.name, "is not a file or directory under the record's "
                                        f"root {root}; nothing restored")
                if m.isfile():
                    got[m.name] = _write(tar, m, staging / PurePosixPath(m.name).relative_to(root))
        # every file the index lists, with the bytes it lists: a record damaged or edited
        # since it was packed restores nothing
        wrong = [f["path"] for f in index["files"] if got.get(f["path"]) != f["sha256"]]
        if wrong:
            raise LabInputError(str(path), "files", f"{len(wrong)} listed file(s) missing from the record or "
                                f"not as packed (SHA-256), e.g. {wrong[0]}; nothing restored")
        store.release(staging)
        os.rename(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target, True
