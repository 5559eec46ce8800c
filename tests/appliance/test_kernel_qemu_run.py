"""images/kernel/qemu-run.sh: one host command run on a packaged kernel under QEMU.

The distribution's own kernel (Debian 12: 6.1) boots with this host's root file system as
its own, read-only; the command's output, error output and exit status come back here. One
boot: under a minute with TCG on this host.
"""
from __future__ import annotations

from appliance_support import REPO, run, stock_kernel_debs

QEMU_RUN = str(REPO / "images/kernel/qemu-run.sh")


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    for args, says in (([QEMU_RUN, "--debs", str(tmp_path)], "no command"),
                       ([QEMU_RUN, "--", "true"], "--debs DIR is required"),
                       ([QEMU_RUN, "--debs", str(tmp_path), "--mem", "lots", "--", "true"], "--mem"),
                       ([QEMU_RUN, "--debs", str(tmp_path), "--", "true"], "no manifest.json and 0 linux-image-*.deb")):
        p = run(args, check=False, timeout=60)
        assert p.returncode == 2 and says in p.stderr and len(p.stderr.splitlines()) == 1, (args, p.stderr)


def test_a_command_runs_on_the_packaged_kernel(tmp_path):
    debs, release = stock_kernel_debs(tmp_path)
    out = tmp_path / "out"
    script = f"uname -r; sysctl -n net.mptcp.enabled; echo written >{out}/file; echo to-stderr >&2; exit 3"
    p = run(["nice", "-n", "19", QEMU_RUN, "--debs", str(debs), "--out", str(out), "--timeout", "600",
             "--", "sh", "-c", script], check=False, timeout=900)
    print("\n" + p.stdout + p.stderr)
    assert p.returncode == 3, p.stderr
    assert p.stdout.splitlines() == [release, "1"], p.stdout  # the guest's kernel, MPTCP on
    assert "to-stderr" in p.stderr
    assert (out / "file").read_text() == "written\n"  # --out is writable, at its host path
