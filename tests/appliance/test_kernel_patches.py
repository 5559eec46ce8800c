"""The patched-kernel worked example: images/kernel/patches/ against the pinned source."""
from __future__ import annotations

import re
import shutil

from appliance_support import REPO, run

CHECK = str(REPO / "images/kernel/check.sh")


def test_patches_apply_config_holds_and_patched_file_compiles():
    p = run([CHECK], timeout=1200)
    out = p.stdout
    patches = sorted(x.name for x in (REPO / "images/kernel/patches").glob("*.patch"))
    assert patches, "no patches"
    for name in patches:
        assert f"ok    {name} applies" in out, out
    # verify-config.sh: "ok    N settings of FRAGMENT[,FRAGMENT] hold after olddefconfig"
    assert re.search(r"^ok +\d+ settings of \S+ hold after olddefconfig$", out, re.M), out
    assert "compiles" in out, out
    print("\n" + out)


def test_check_fails_on_a_patch_that_does_not_apply(tmp_path):
    broken = tmp_path / "patches"
    broken.mkdir()
    src = (REPO / "images/kernel/patches").glob("*.patch")
    first = sorted(src)[0]
    text = first.read_text().replace("READ_ONCE(net->ipv4.sysctl_tcp_mtu_probing) > 1", "sysctl_mtu_probing_was_here")
    (broken / first.name).write_text(text)
    p = run([CHECK, "--patches", str(broken), "--no-compile"], check=False, timeout=600)
    assert p.returncode != 0 and f"FAIL  {first.name}" in p.stdout, p.stdout + p.stderr


def test_patch_is_the_thesis_change():
    """Patch 1 makes tcp_mtup_init enable probing unconditionally (thesis section 10.5)."""
    p1 = sorted((REPO / "images/kernel/patches").glob("0001-*.patch"))[0].read_text()
    assert "-\ticsk->icsk_mtup.enabled = READ_ONCE(net->ipv4.sysctl_tcp_mtu_probing) > 1;" in p1
    assert "+\ticsk->icsk_mtup.enabled = true;" in p1
    assert shutil.which("patch")
