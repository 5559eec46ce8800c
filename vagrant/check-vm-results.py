#!/usr/bin/env python3
"""Check, on the host, the results a lab run inside the Vagrant VM brought back.

    .venv/bin/python vagrant/check-vm-results.py RUN_DIR VM_KERNEL

Used by vagrant/test-vm.sh after `make lab-mtu RUN_ARGS=--quick`. Reads summary.json and
manifest.json through the engine's result model (mptcplab/results/model.py), so it runs with
the project's virtual environment. Checks that the run is complete, was made on the VM's
kernel with the containerlab backend, is marked as a functional check (software-emulated
CPU), and that MPTCP was negotiated in every MPTCP scenario and verified (every expected
subflow carried data) where the lab expects it: mptcp-uniform, mptcp-bottleneck,
mptcp-reverse. Exits 1 with one line per failed check, 2 when the files cannot be read.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
try:
    from mptcplab.results.model import Manifest, ResultsFormatError, Summary
    from mptcplab.results.read import load_manifest, load_summary
except ImportError as e:  # run with the system python3 on a host without the venv
    print(f"check-vm-results: cannot import the result model ({e}); run it with .venv/bin/python "
          "(scripts/bootstrap.sh creates it)", file=sys.stderr)
    sys.exit(2)

MUST_VERIFY = ("mptcp-uniform", "mptcp-bottleneck", "mptcp-reverse")


def check(summary: Summary, manifest: Manifest, vm_kernel: str) -> list[str]:
    problems: list[str] = []
    if not manifest.present:
        problems.append("no manifest.json")
    if not (summary.complete and manifest.complete):
        problems.append(f"run incomplete: {manifest.incomplete_reason}")
    if manifest.kernel != vm_kernel or summary.kernel != vm_kernel:
        problems.append(f"kernel {manifest.kernel!r} in the manifest, the VM runs {vm_kernel!r}")
    if manifest.backend != "containerlab":
        problems.append(f"backend {manifest.backend!r}, not containerlab")
    if summary.run_kind != "functional-check":
        problems.append(f"run_kind {summary.run_kind!r}: a software-emulated CPU must be a functional check")
    if not summary.scenarios:
        problems.append("no repetitions in summary.json")
    for r in summary.scenarios:
        m = r.mptcp
        if m.requested and not m.negotiated:
            problems.append(f"{r.name} rep{r.rep}: MPTCP requested but not negotiated (fallback {m.fallback})")
        if r.name in MUST_VERIFY and not m.verified:
            problems.append(f"{r.name} rep{r.rep}: MPTCP not verified (subflows {m.subflows}, "
                            f"expected paths {m.expected_paths})")
        if r.iperf3_error:
            problems.append(f"{r.name} rep{r.rep}: iperf3 error {r.iperf3_error}")
    missing = [n for n in MUST_VERIFY if n not in {r.name for r in summary.scenarios}]
    if missing:
        problems.append(f"scenarios missing: {', '.join(missing)}")
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print((__doc__ or "").strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    run_dir = Path(argv[1]).resolve()
    try:
        summary, manifest = load_summary(run_dir), load_manifest(run_dir)
    except (OSError, ResultsFormatError) as e:
        print(f"check-vm-results: {e}", file=sys.stderr)
        return 2
    problems = check(summary, manifest, argv[2])
    for p in problems:
        print(f"check-vm-results: {run_dir.name}: {p}")
    if problems:
        return 1
    verified = sum(1 for r in summary.scenarios if r.mptcp.verified)
    print(f"check-vm-results: {run_dir.name}: complete, kernel {argv[2]}, containerlab backend, "
          f"functional check, results format {summary.format_version}; {len(summary.scenarios)} repetitions, "
          f"{verified} MPTCP-verified")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
