#!/usr/bin/env python3
"""Check the results of a lab run made inside the Vagrant VM.

    .venv/bin/python vagrant/check-vm-results.py RUN_DIR VM_KERNEL

Used by vagrant/test-vm.sh on the host after `make lab-mtu RUN_ARGS=--quick` (the run copied
back); inside the VM it runs the same way from /vagrant with the VM's .venv (scripts/bootstrap.sh
makes both). Reads summary.json and manifest.json only through the engine's result model
(mptcplab/record/model/, results/read.py; docs/results-format.md is the contract) and checks what
any sound run of the lab must show:

- summary.json: written in this engine's format version, complete, valid, a functional check
  (software-emulated CPU), run-level warnings coded, the mtu lab's MPTCP scenarios present;
- manifest.json: complete, the VM's kernel, containerlab backend, the tool versions, the git
  commit, the lab files' hashes (equal to this checkout's), the sysctls read back per scenario
  and the link calibration of every repetition;
- every repetition: no iperf3 error, no server that died, capture, delay-line and daemon stats
  present and sound, warnings coded; MPTCP negotiated where requested; every MPTCP-labelled
  one (scenario mptcp-*) verified from the capture: negotiated, no fallback, an established
  subflow that contributed on each expected path.

Each failure is one line: run directory, record, field, problem. Exits 1 when a check fails,
2 when the files cannot be read.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
try:
    from mptcplab.lab.loader import EXPERIMENT, LAB_FILES, TOPOLOGY, sha256
    from mptcplab.middlebox import rewrite
    from mptcplab.platform import FUNCTIONAL_CHECK
    from mptcplab.record.model import (
        FORMAT_VERSION,
        UNCLASSIFIED,
        Manifest,
        Repetition,
        ResultsFormatError,
        Summary,
        Warning,
        load_manifest,
    )
    from mptcplab.results.read import load_summary
except ImportError as e:  # the system python3, without the venv
    print(f"check-vm-results: cannot import the result model ({e}); run it with .venv/bin/python "
          "(scripts/bootstrap.sh creates it)", file=sys.stderr)
    sys.exit(2)

#: the mtu lab's MPTCP scenarios: each must be in the run
MUST_VERIFY = ("mptcp-uniform", "mptcp-bottleneck", "mptcp-reverse")
#: tools every run uses; their versions make the run self-describing
REQUIRED_TOOLS = ("iperf3", "tshark", "tcpdump", "iproute2", "python", "mptcplab")
SUMMARY, MANIFEST = "summary.json", "manifest.json"
SHA256 = re.compile(r"[0-9a-f]{64}")
COMMIT = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True)
class Problem:
    record: str  # summary.json, manifest.json, or summary.json[<scenario> rep<k>]
    field: str
    message: str

    def line(self, run: str) -> str:
        return f"check-vm-results: {run}: {self.record}: {self.field}: {self.message}"


def mptcp_labelled(scenario: str) -> bool:
    """The lab names its MPTCP scenarios mptcp-*: each must be verified from its capture."""
    return scenario.startswith("mptcp-")


def record_of(r: Repetition) -> str:
    return f"{SUMMARY}[{r.name} rep{r.rep}]"


def check_warnings(record: str, field: str, warnings: list[Warning]) -> list[Problem]:
    # a plain-text warning is one the engine did not classify: policy cannot judge it
    return [Problem(record, f"{field}[{i}].code", f"{w.code or 'empty'}: {w.message}")
            for i, w in enumerate(warnings) if not w.code or w.code == UNCLASSIFIED]


def check_summary(s: Summary, run_id: str) -> list[Problem]:
    out: list[Problem] = []

    def bad(field: str, message: str) -> None:
        out.append(Problem(SUMMARY, field, message))

    if s.file_format_version != FORMAT_VERSION:
        found = "absent" if not s.file_format_version else s.file_format_version
        bad("format_version", f"{found}, this engine writes {FORMAT_VERSION}")
    if s.run_id != run_id:
        bad("run_id", f"{s.run_id!r}, the run directory is {run_id!r}")
    if not s.complete:
        bad("complete", "false")
    if s.valid is not True:
        bad("valid", f"{s.valid}: {'; '.join(s.invalid_reasons) or 'no reason given'}")
    if s.run_kind != FUNCTIONAL_CHECK:
        bad("run_kind", f"{s.run_kind!r}: a software-emulated CPU must be a functional check")
    out += check_warnings(SUMMARY, "warnings", s.warnings)
    if not s.scenarios:
        bad("scenarios", "no repetitions")
    missing = [n for n in MUST_VERIFY if not s.reps_of(n)]
    if missing:
        bad("scenarios", f"missing {', '.join(missing)}")
    return out


def check_manifest(m: Manifest, s: Summary, vm_kernel: str, run_id: str, repo: Path) -> list[Problem]:
    out: list[Problem] = []

    def bad(field: str, message: str) -> None:
        out.append(Problem(MANIFEST, field, message))

    if not m.present:
        return [Problem(MANIFEST, "file", "absent")]
    if not m.complete:
        bad("complete", f"false: {m.incomplete_reason}")
    if m.run_id != run_id:
        bad("run_id", f"{m.run_id!r}, the run directory is {run_id!r}")
    if m.kernel != vm_kernel:
        bad("kernel", f"{m.kernel!r}, the VM runs {vm_kernel!r}")
    if s.kernel != vm_kernel:
        out.append(Problem(SUMMARY, "kernel", f"{s.kernel!r}, the VM runs {vm_kernel!r}"))
    if not m.kernel_version:
        bad("kernel_version", "absent")
    if m.backend != "containerlab":
        bad("backend", f"{m.backend!r}, not containerlab")
    if not m.link_emulation:
        bad("link_emulation", "absent")
    for tool in REQUIRED_TOOLS:
        if not m.tools.get(tool):
            bad(f"tools.{tool}", "no version (the tool was not found when the run started)")
    if not COMMIT.fullmatch(m.git.commit or ""):
        bad("git.commit", f"{m.git.commit!r} is not a commit")
    out += [Problem(MANIFEST, f"lab_files_sha256.{f}", why) for f, why in lab_file_problems(m, repo)]
    ran = list(dict.fromkeys(r.name for r in s.scenarios))
    if set(m.scenarios) != set(ran):
        bad("scenarios", f"{sorted(m.scenarios)}, summary.json has {sorted(ran)}")
    for name in ran:
        out += [Problem(MANIFEST, f"sysctls.{name}{where}", why) for where, why in sysctl_problems(m, s, name)]
    unimpaired = unimpaired_scenarios(s.lab, repo)
    for r in s.scenarios:
        out += [Problem(MANIFEST, f"calibration.{r.name}.rep{r.rep}{where}", why)
                for where, why in calibration_problems(m, r, unimpaired)]
    return out


def lab_file_problems(m: Manifest, repo: Path) -> list[tuple[str, str]]:
    """The lab files' hashes: well formed, and equal to this checkout's when it has the lab
    (test-vm pushes the checkout into the VM, so they are the files the run read)."""
    out: list[tuple[str, str]] = []
    have = m.lab_files_sha256
    for f in (TOPOLOGY, EXPERIMENT):
        if f not in have:
            out.append((f, "absent"))
    for f, h in have.items():
        if not SHA256.fullmatch(h):
            out.append((f, f"{h!r} is not a SHA-256"))
    lab_dir = repo / "labs" / (m.lab or "")
    if m.lab and lab_dir.is_dir():
        for f in LAB_FILES:
            if (lab_dir / f).is_file() and f in have and SHA256.fullmatch(have[f]) and have[f] != sha256(lab_dir / f):
                out.append((f, f"differs from {lab_dir.relative_to(repo) / f} in this checkout"))
    return out


def sysctl_problems(m: Manifest, s: Summary, scenario: str) -> list[tuple[str, str]]:
    """Read back on every node; where MPTCP was requested, enabled wherever it was read."""
    nodes = m.sysctls_of(scenario)
    if not nodes:
        return [("", "nothing read back")]
    out = [(f".{n}", "nothing read back") for n, vals in nodes.items() if not vals]
    if any(r.mptcp.requested for r in s.reps_of(scenario)):
        enabled = {n: vals["net.mptcp.enabled"] for n, vals in nodes.items() if "net.mptcp.enabled" in vals}
        if not enabled:
            out.append((".*.net.mptcp.enabled", "read back on no node of an MPTCP scenario"))
        out += [(f".{n}.net.mptcp.enabled", f"{v!r}, MPTCP requested") for n, v in enabled.items() if v != "1"]
    return out


def unimpaired_scenarios(lab: str, repo: Path) -> set[str]:
    """The lab's scenarios without an emulated link (no rate, delay or loss anywhere, e.g.
    labs/mtu's *-unshaped): they have no link to check, so no calibration is expected."""
    from mptcplab.lab.loader import load_lab
    from mptcplab.lab.network import build_network

    d = repo / "labs" / lab
    if not d.is_dir():
        return set()
    loaded = load_lab(d)
    return {s.name for s in loaded.scenarios
            if not any(link.impaired for link in build_network(loaded.topology, s.body).links)}


def calibration_problems(m: Manifest, r: Repetition,
                         unimpaired: AbstractSet[str] = frozenset()) -> list[tuple[str, str]]:
    """Every repetition's link checks were made and recorded, and its calibration_ok says
    what they found (a software-emulated CPU may miss the tolerances: a timing note)."""
    try:
        links = m.calibration_of(r.name, r.rep)
    except ResultsFormatError as e:
        if r.name in unimpaired:
            return []
        return [(e.field.removeprefix(f"calibration.{r.name}.rep{r.rep}"), e.problem)]
    if not links:
        return [] if r.name in unimpaired else [("", "no link checks recorded")]
    out = [(f"[{i}].checks", f"link {c.link}: none") for i, c in enumerate(links) if not c.checks]
    ok = all(c.ok for c in links)
    if r.calibration_ok is not ok:
        out.append(("", f"links ok={ok}, but {record_of(r)} says calibration_ok={r.calibration_ok}"))
    return out


def check_repetition(r: Repetition) -> list[Problem]:
    rec = record_of(r)
    out: list[Problem] = []

    def bad(field: str, message: str) -> None:
        out.append(Problem(rec, field, message))

    if r.iperf3_error:
        bad("iperf3_error", r.iperf3_error)
    if r.servers_died is None:
        bad("servers_died", "absent (a record from an engine before it)")
    for flow, rc in (r.servers_died or {}).items():
        bad(f"servers_died.{flow}", f"the server died before the run stopped it (status {rc})")
    if not r.capture_stats:
        bad("capture_stats", "absent" if r.capture_stats is None else "no capture point")
    for point, st in (r.capture_stats or {}).items():
        for key in ("captured", "received", "dropped"):
            if getattr(st, key) is None:
                bad(f"capture_stats.{point}.{key}", "absent (tcpdump printed no counters)")
        if st.dropped:
            bad(f"capture_stats.{point}.dropped", f"{st.dropped} packets")
        if st.died is not None:
            bad(f"capture_stats.{point}.died", f"the capture ended before the run stopped it (status {st.died})")
    # delay lines: their lateness and losses on a software-emulated CPU are timing notes of a
    # functional check; each must have written its stats and counted what it carried
    if r.delay_line_stats is None:
        bad("delay_line_stats", "absent")
    for name, line in (r.delay_line_stats or {}).items():
        if line is None or not isinstance(line.get("packets"), int):
            bad(f"delay_line_stats.{name}", "no stats written" if line is None else "no packet count")
    if r.daemon_stats is None:
        bad("daemon_stats", "absent")
    for name, daemon in (r.daemon_stats or {}).items():
        for why in ["no stats written"] if daemon is None else rewrite.problems(daemon):
            bad(f"daemon_stats.{name}", why)
    out += check_warnings(rec, "warnings", r.warnings)
    mp = r.mptcp
    if mp.requested and not mp.negotiated:
        bad("mptcp.negotiated", f"{mp.negotiated}: MPTCP requested (fallback {mp.fallback})")
    if mptcp_labelled(r.name):
        out += [Problem(rec, f, why) for f, why in verification_problems(r)]
    return out


def verification_problems(r: Repetition) -> list[tuple[str, str]]:
    """An MPTCP scenario's connection, from its capture: MPTCP negotiated without fallback
    and, on each expected path, an established subflow that contributed to the transfer."""
    mp = r.mptcp
    if not mp.requested:
        return [("mptcp.requested", "false in an MPTCP scenario")]
    out: list[tuple[str, str]] = []
    if mp.fallback:
        out.append(("mptcp.fallback", "true"))
    if not mp.expected_paths:
        out.append(("mptcp.expected_paths", "none"))
    for p in mp.expected_paths:
        if not any(sf.established and sf.contributed for sf in r.subflows_on(p)):
            seen = ", ".join(f"{sf.ends} established={sf.established} contributed={sf.contributed}"
                             for sf in r.subflows_on(p)) or "no subflow"
            out.append((f"subflows[path={p}]", f"no established subflow contributed ({seen})"))
    if (mp.subflows or 0) < len(mp.expected_paths):
        out.append(("mptcp.subflows", f"{mp.subflows} established, {len(mp.expected_paths)} paths expected"))
    if not mp.verified:
        out.append(("mptcp.verified", f"false (subflows {mp.subflows}, expected paths {mp.expected_paths})"))
    return out


def check(summary: Summary, manifest: Manifest, vm_kernel: str, run_id: str, repo: Path = REPO) -> list[Problem]:
    out = check_summary(summary, run_id) + check_manifest(manifest, summary, vm_kernel, run_id, repo)
    for r in summary.scenarios:
        out += check_repetition(r)
    return out


def shown(run_dir: Path) -> str:
    """The run directory as the user would type it (relative to here when it can be)."""
    try:
        return str(run_dir.relative_to(Path.cwd()))
    except ValueError:
        return str(run_dir)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print((__doc__ or "").strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    run_dir = Path(argv[1]).resolve()  # results/<lab>/latest -> the run itself
    try:
        summary, manifest = load_summary(run_dir), load_manifest(run_dir)
    except (OSError, ResultsFormatError) as e:
        print(f"check-vm-results: {e}", file=sys.stderr)
        return 2
    problems = check(summary, manifest, argv[2], run_dir.name)
    for p in problems:
        print(p.line(shown(run_dir)))
    if problems:
        return 1
    verified = sum(1 for r in summary.scenarios if r.mptcp.verified)
    off = sum(1 for r in summary.scenarios if not r.calibration_ok)
    print(f"check-vm-results: {shown(run_dir)}: complete, kernel {argv[2]}, containerlab backend, "
          f"functional check, results format {summary.format_version}, git {manifest.git.commit}; "
          f"{len(summary.scenarios)} repetitions, {verified} MPTCP-verified, "
          f"{off} with links out of tolerance (timing notes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
