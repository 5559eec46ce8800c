"""vagrant/check-vm-results.py on hand-made run directories (the VM run itself is make test-vm):
a sound run passes; each broken field fails it with one line naming the run directory, the
record and the field."""

from __future__ import annotations

import copy
import importlib.util
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from mptcplab.lab.loader import LAB_FILES, sha256
from mptcplab.results.summary import build_summary_model

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "vagrant" / "check-vm-results.py"
TCG = {"virtualization": "qemu", "software_emulated_cpu": True, "source": "systemd-detect-virt"}
KERNEL = "6.12.0-vm"
RUN_ID = "20261123T230000Z-abcd"
SCENARIOS = ("tcp-a", "mptcp-uniform", "mptcp-bottleneck", "mptcp-reverse")

Json = dict[str, Any]


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_vm_results", SCRIPT)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclass looks itself up there
    spec.loader.exec_module(mod)
    return mod


CHECKER = load_script()


def subflow(path: str, port: int, *, established: bool = True, contributed: bool = True) -> Json:
    return {"path": path, "src": f"10.0.{port % 10}.1", "sport": port, "dst": "10.0.9.2", "dport": 5201,
            "initial": path == "A", "established": established, "bytes": 1_000_000, "share": 0.5,
            "contributed": contributed}


def rep(name: str) -> Json:
    mptcp = name.startswith("mptcp-")
    return {
        "name": name, "rep": 1, "dir": f"scenarios/{name}/rep1", "goodput_mbps": 10.0, "calibration_ok": True,
        "warnings": [{"code": "weak-subflow", "message": "path B carried little", "path": "B"}] if mptcp else [],
        "mptcp": {"requested": mptcp, "negotiated": mptcp, "fallback": False, "verified": mptcp,
                  "subflows": 2 if mptcp else None, "expected_paths": ["A", "B"] if mptcp else []},
        "subflows": [subflow("A", 40001), subflow("B", 40002)] if mptcp else [subflow("A", 40001)],
        "capture_stats": {"client:eth1": {"captured": 900, "received": 900, "dropped": 0},
                          "client:eth2": {"captured": 0, "received": 0, "dropped": 0}},
        "delay_line_stats": {"delayline rb1:eth2<-ra:eth1": {"packets": 500, "delay_us": 1000,
                                                            "lateness_us": {"p99": 90000}}},
        "daemon_stats": {},
        "servers_died": {},
    }


def manifest() -> Json:
    lab = REPO / "labs" / "mtu"
    link = {"link": "client:eth1--ra:eth1", "configured": {"rate_bps": 100_000_000}, "ok": True,
            "checks": [{"quantity": "rtt_min_ms", "configured": 0.1, "measured": 0.3, "tolerance": "±1 ms",
                        "ok": True, "direction": "both"}]}
    nodes = {n: {"net.mptcp.enabled": "1", "net.ipv4.tcp_mtu_probing": "0"} for n in ("client", "server", "ra")}
    return {
        "lab": "mtu", "run_id": RUN_ID, "complete": True, "quick": True, "kernel": KERNEL,
        "kernel_version": "#1 SMP PREEMPT_DYNAMIC Debian 6.12.0-1", "backend": "containerlab",
        "link_emulation": "netem", "platform": TCG,
        "tools": {"iperf3": "iperf 3.12", "tshark": "TShark 4.0.17", "tcpdump": "tcpdump version 4.99.3",
                  "iproute2": "ip utility, iproute2-6.1.0", "python": "3.11.2", "mptcplab": "0.1.0"},
        "git": {"commit": "3f5e60fbb1637ebb54e0bc91f1c258b4bdd6d09a", "dirty": False},
        "lab_files_sha256": {f: sha256(lab / f) for f in LAB_FILES if (lab / f).is_file()},
        "scenarios": list(SCENARIOS),
        "sysctls": {s: copy.deepcopy(nodes) for s in SCENARIOS},
        "calibration": {s: {"rep1": [copy.deepcopy(link)]} for s in SCENARIOS},
    }


def write_run(tmp: Path, *, reps: Callable[[list[Json]], None] = lambda r: None,
              man: Callable[[Json], None] = lambda m: None, summ: Callable[[Json], None] = lambda s: None) -> Path:
    """A run directory of the mtu lab as the VM writes it; each callback breaks its record."""
    d = tmp / "results" / "mtu" / RUN_ID
    d.mkdir(parents=True)
    records = [rep(n) for n in SCENARIOS]
    reps(records)
    s = build_summary_model("mtu", RUN_ID, KERNEL, True, True, records, None, [], TCG).to_json()
    summ(s)
    m = manifest()
    man(m)
    (d / "summary.json").write_text(json.dumps(s))
    (d / "manifest.json").write_text(json.dumps(m))
    (d.parent / "latest").symlink_to(RUN_ID)
    return d.parent / "latest"


def check(d: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str], str]:
    rc = CHECKER.main(["check-vm-results.py", str(d), KERNEL])
    out, err = capsys.readouterr()
    return rc, out.splitlines(), err


def test_a_sound_vm_run_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, lines, err = check(write_run(tmp_path), capsys)
    assert rc == 0, "\n".join(lines) + err
    assert len(lines) == 1 and "3 MPTCP-verified" in lines[0] and "results format 2" in lines[0]
    assert RUN_ID in lines[0]  # latest resolved: the run directory itself is named


def _set(path: str, value: Any) -> Callable[[Json], None]:
    """An edit that sets a path a/b/0/c (list items by index) to value, or deletes it (...)."""
    def edit(d: Json) -> None:
        *head, last = path.split("/")
        node: Any = d
        for k in head:
            node = node[int(k)] if isinstance(node, list) else node[k]
        if value is ...:
            del node[last]
        else:
            node[last] = value
    return edit


def _rep(i: int, path: str, value: Any) -> Callable[[list[Json]], None]:
    def edit(records: list[Json]) -> None:
        _set(path, value)(records[i])
    return edit


UNI = "summary.json[mptcp-uniform rep1]"  # records[1]
TCP = "summary.json[tcp-a rep1]"  # records[0]

BROKEN: list[tuple[str, dict[str, Any], str]] = [
    # summary.json
    ("unversioned", {"summ": _set("format_version", ...)},
     "summary.json: format_version: absent, this engine writes 2"),
    ("incomplete", {"summ": _set("complete", False)}, "summary.json: complete: false"),
    ("invalid", {"summ": lambda s: s.update(valid=False, invalid_reasons=["x rep 1: capture dropped"])},
     "summary.json: valid: False: x rep 1: capture dropped"),
    ("measurement", {"summ": _set("run_kind", "measurement")}, "summary.json: run_kind: 'measurement'"),
    ("other run id", {"summ": _set("run_id", "other")}, "summary.json: run_id: 'other'"),
    ("uncoded run warning", {"summ": _set("warnings", ["plain text"])},
     "summary.json: warnings[0].code: unclassified: plain text"),
    ("scenario missing", {"reps": lambda r: r.pop()}, "summary.json: scenarios: missing mptcp-reverse"),
    # manifest.json
    ("manifest incomplete", {"man": lambda m: m.update(complete=False, incomplete_reason="interrupted by SIGINT")},
     "manifest.json: complete: false: interrupted by SIGINT"),
    ("other kernel", {"man": _set("kernel", "6.1.0-box")}, "manifest.json: kernel: '6.1.0-box', the VM runs"),
    ("no kernel version", {"man": _set("kernel_version", ...)}, "manifest.json: kernel_version: absent"),
    ("netns backend", {"man": _set("backend", "netns")}, "manifest.json: backend: 'netns', not containerlab"),
    ("no link emulation", {"man": _set("link_emulation", None)}, "manifest.json: link_emulation: absent"),
    ("tool version", {"man": _set("tools/tshark", None)}, "manifest.json: tools.tshark: no version"),
    ("no commit", {"man": _set("git/commit", None)}, "manifest.json: git.commit: None is not a commit"),
    ("lab file hash", {"man": _set("lab_files_sha256/experiment.yml", "0" * 64)},
     "manifest.json: lab_files_sha256.experiment.yml: differs from labs/mtu/experiment.yml"),
    ("lab file absent", {"man": _set("lab_files_sha256", {})},
     "manifest.json: lab_files_sha256.topology.clab.yml: absent"),
    ("scenario list", {"man": _set("scenarios", ["tcp-a"])}, "manifest.json: scenarios: ['tcp-a'], summary.json has"),
    ("no sysctls", {"man": lambda m: m["sysctls"].pop("mptcp-uniform")},
     "manifest.json: sysctls.mptcp-uniform: nothing read back"),
    ("mptcp disabled", {"man": _set("sysctls/mptcp-bottleneck/server/net.mptcp.enabled", "0")},
     "manifest.json: sysctls.mptcp-bottleneck.server.net.mptcp.enabled: '0', MPTCP requested"),
    ("no calibration", {"man": lambda m: m["calibration"]["mptcp-reverse"].pop("rep1")},
     "manifest.json: calibration.mptcp-reverse.rep1: no link checks recorded"),
    ("calibration disagrees", {"man": _set("calibration/tcp-a/rep1/0/ok", False)},
     "manifest.json: calibration.tcp-a.rep1: links ok=False, but summary.json[tcp-a rep1] says calibration_ok=True"),
    ("calibration unreadable", {"man": _set("calibration/tcp-a/rep1/0/ok", ...)},
     "manifest.json: calibration.tcp-a.rep1[0].ok: not a link check"),
    # repetitions
    ("server died", {"reps": _rep(0, "servers_died", {"main": -9})}, f"{TCP}: servers_died.main: the server died"),
    ("servers_died absent", {"reps": _rep(0, "servers_died", ...)}, f"{TCP}: servers_died: absent"),
    ("capture_stats absent", {"reps": _rep(1, "capture_stats", ...)}, f"{UNI}: capture_stats: absent"),
    ("capture dropped", {"reps": _rep(1, "capture_stats/client:eth1/dropped", 7)},
     f"{UNI}: capture_stats.client:eth1.dropped: 7 packets"),
    ("capture died", {"reps": _rep(1, "capture_stats/client:eth2/died", -9)},
     f"{UNI}: capture_stats.client:eth2.died: the capture ended before the run stopped it"),
    ("capture counters", {"reps": _rep(1, "capture_stats/client:eth2", {})},
     f"{UNI}: capture_stats.client:eth2.captured: absent"),
    ("delay_line_stats absent", {"reps": _rep(1, "delay_line_stats", ...)}, f"{UNI}: delay_line_stats: absent"),
    ("delay line wrote nothing", {"reps": _rep(1, "delay_line_stats/delayline rb1:eth2<-ra:eth1", None)},
     f"{UNI}: delay_line_stats.delayline rb1:eth2<-ra:eth1: no stats written"),
    ("daemon_stats absent", {"reps": _rep(1, "daemon_stats", ...)}, f"{UNI}: daemon_stats: absent"),
    ("middlebox rewrote nothing", {"reps": _rep(1, "daemon_stats", {"mbox isn-offset ra q3": {"mbox": "isn-offset"}})},
     f"{UNI}: daemon_stats.mbox isn-offset ra q3: rewrote no sequence number"),
    ("uncoded warning", {"reps": _rep(0, "warnings", ["client: sysctl x set to '1' but reads back '0'"])},
     f"{TCP}: warnings[0].code: unclassified: client: sysctl x"),
    ("iperf3 error", {"reps": _rep(0, "iperf3_error", "unable to connect")}, f"{TCP}: iperf3_error: unable to connect"),
    ("not negotiated", {"reps": _rep(1, "mptcp/negotiated", False)},
     f"{UNI}: mptcp.negotiated: False: MPTCP requested"),
    ("fallback", {"reps": _rep(1, "mptcp/fallback", True)}, f"{UNI}: mptcp.fallback: true"),
    ("not requested", {"reps": _rep(1, "mptcp/requested", False)},
     f"{UNI}: mptcp.requested: false in an MPTCP scenario"),
    ("not verified", {"reps": _rep(1, "mptcp/verified", False)}, f"{UNI}: mptcp.verified: false"),
    ("no expected paths", {"reps": _rep(1, "mptcp/expected_paths", [])}, f"{UNI}: mptcp.expected_paths: none"),
    ("subflow idle", {"reps": _rep(1, "subflows/1/contributed", False)},
     f"{UNI}: subflows[path=B]: no established subflow contributed (10.0.2.1:40002"),
    ("no subflow on B", {"reps": _rep(1, "subflows", [subflow("A", 40001)])},
     f"{UNI}: subflows[path=B]: no established subflow contributed (no subflow)"),
    ("too few subflows", {"reps": _rep(1, "mptcp/subflows", 1)}, f"{UNI}: mptcp.subflows: 1 established, 2 paths"),
]


@pytest.mark.parametrize("edits,expected", [b[1:] for b in BROKEN], ids=[b[0] for b in BROKEN])
def test_each_broken_field_fails_with_its_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               edits: dict[str, Any], expected: str) -> None:
    rc, lines, err = check(write_run(tmp_path, **edits), capsys)
    assert rc == 1, "\n".join(lines) + err
    prefix = f"check-vm-results: {tmp_path / 'results' / 'mtu' / RUN_ID}: "
    assert all(x.startswith(prefix) for x in lines), lines
    assert any(x[len(prefix):].startswith(expected) for x in lines), lines


def test_late_delay_lines_and_links_out_of_tolerance_are_timing_notes(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    # rep() gives every delay line a 90 ms p99 lateness: a software-emulated CPU's, not a fault
    rc, lines, _ = check(write_run(tmp_path, reps=_rep(0, "calibration_ok", False),
                                   man=_set("calibration/tcp-a/rep1/0/ok", False)), capsys)
    assert rc == 0 and "1 with links out of tolerance" in lines[0], lines


def test_a_manifest_is_required(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = write_run(tmp_path)
    (d / "manifest.json").unlink()
    rc, lines, _ = check(d, capsys)
    assert rc == 1 and lines == [f"check-vm-results: {d.resolve()}: manifest.json: file: absent"]


def test_a_summary_from_a_newer_engine_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, lines, err = check(write_run(tmp_path, summ=_set("format_version", 99)), capsys)
    assert rc == 2 and not lines and len(err.strip().splitlines()) == 1
    assert "format_version: 99 is newer" in err


def test_the_script_runs_as_test_vm_calls_it(tmp_path: Path) -> None:
    d = write_run(tmp_path, reps=_rep(1, "mptcp/verified", False))
    p = subprocess.run([sys.executable, str(SCRIPT), str(d), KERNEL], capture_output=True, text=True)
    assert p.returncode == 1 and p.stdout.count("\n") == 1, p.stdout + p.stderr
    assert f"{UNI}: mptcp.verified: false" in p.stdout
