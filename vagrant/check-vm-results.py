#!/usr/bin/env python3
"""Check, on the host, the results a lab run inside the Vagrant VM brought back.

    vagrant/check-vm-results.py RUN_DIR VM_KERNEL

Used by vagrant/test-vm.sh after `make lab-mtu RUN_ARGS=--quick`. Standard library only:
it runs before (and without) the engine's virtual environment on the host. Checks that the
run is complete, was made on the VM's kernel with the containerlab backend, is marked as a
functional check (software-emulated CPU), and that MPTCP was negotiated in every MPTCP
scenario and verified (every expected subflow carried data) where the lab expects it:
mptcp-uniform, mptcp-bottleneck, mptcp-reverse. Exits 1 with one line per failed check.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

MUST_VERIFY = ("mptcp-uniform", "mptcp-bottleneck", "mptcp-reverse")


def check(run_dir: Path, vm_kernel: str) -> list[str]:
    problems: list[str] = []
    summary = json.loads((run_dir / "summary.json").read_text())
    manifest = json.loads((run_dir / "manifest.json").read_text())
    if not (summary.get("complete") and manifest.get("complete")):
        problems.append(f"run incomplete: {manifest.get('incomplete_reason')}")
    if manifest.get("kernel") != vm_kernel or summary.get("kernel") != vm_kernel:
        problems.append(f"kernel {manifest.get('kernel')!r} in the manifest, the VM runs {vm_kernel!r}")
    if manifest.get("backend") != "containerlab":
        problems.append(f"backend {manifest.get('backend')!r}, not containerlab")
    if summary.get("run_kind") != "functional-check":
        problems.append(f"run_kind {summary.get('run_kind')!r}: a software-emulated CPU must be a functional check")
    reps = summary.get("scenarios") or []
    if not reps:
        problems.append("no repetitions in summary.json")
    for r in reps:
        name, m = r["name"], r["mptcp"]
        if m["requested"] and not m["negotiated"]:
            problems.append(f"{name} rep{r['rep']}: MPTCP requested but not negotiated (fallback {m['fallback']})")
        if name in MUST_VERIFY and not m["verified"]:
            problems.append(f"{name} rep{r['rep']}: MPTCP not verified (subflows {m['subflows']}, "
                            f"expected paths {m['expected_paths']})")
        if r.get("iperf3_error"):
            problems.append(f"{name} rep{r['rep']}: iperf3 error {r['iperf3_error']}")
    missing = [n for n in MUST_VERIFY if n not in {r["name"] for r in reps}]
    if missing:
        problems.append(f"scenarios missing: {', '.join(missing)}")
    return problems


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    run_dir = Path(sys.argv[1]).resolve()
    problems = check(run_dir, sys.argv[2])
    for p in problems:
        print(f"check-vm-results: {run_dir.name}: {p}")
    if problems:
        return 1
    summary = json.loads((run_dir / "summary.json").read_text())
    verified = sum(1 for r in summary["scenarios"] if r["mptcp"]["verified"])
    print(f"check-vm-results: {run_dir.name}: complete, kernel {sys.argv[2]}, containerlab backend, "
          f"functional check; {len(summary['scenarios'])} repetitions, {verified} MPTCP-verified")
    return 0


if __name__ == "__main__":
    sys.exit(main())
