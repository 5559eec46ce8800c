"""images/kernel/build-deb.sh (`make kernel-deb`) without building: the commands of its dry
run, its cache key, and a cache hit. The build itself (an hour on 2 cores) is run by hand."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

KERNEL = Path(__file__).resolve().parents[2] / "images" / "kernel"
SCRIPT = KERNEL / "build-deb.sh"
PATCHES = sorted(p.name for p in (KERNEL / "patches").glob("*.patch"))


def build_deb(*args: str | Path, script: Path = SCRIPT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(script), *map(str, args)], capture_output=True, text=True, timeout=60)


def commands(out: str) -> list[str]:
    """The printed commands (`+ argv`), in order."""
    return [line[2:] for line in out.splitlines() if line.startswith("+ ")]


def copy_inputs(tmp: Path) -> Path:
    """The script and its inputs in a directory of their own, free to change."""
    kernel = tmp / "kernel"
    kernel.mkdir()
    for name in ("build-deb.sh", "verify-config.sh", "pin.yml", "vm.config", "mptcplab.config"):
        shutil.copy2(KERNEL / name, kernel / name)
    shutil.copytree(KERNEL / "patches", kernel / "patches")
    return kernel


def key(script: Path = SCRIPT) -> str:
    p = build_deb("--print-key", script=script)
    assert p.returncode == 0, p.stderr
    assert re.fullmatch(r"[0-9a-f]{64}", p.stdout.strip()), p.stdout
    return p.stdout.strip()


def test_dry_run_prints_the_build_and_changes_nothing(tmp_path: Path) -> None:
    build, out = tmp_path / "build", tmp_path / "debs"
    p = build_deb("--dry-run", "--source", tmp_path / "linux.tar.xz", "--build-dir", build, "--out", out,
                  "--jobs", "2")
    assert p.returncode == 0, p.stderr
    cmds = commands(p.stdout)
    k = key()
    tree = f"{build}/{k[:16]}/src"

    def at(pattern: str) -> int:
        hits = [i for i, c in enumerate(cmds) if re.search(pattern, c)]
        assert len(hits) == 1, (pattern, cmds)
        return hits[0]

    unpack = at(rf"^tar -C {tree} --strip-components=1 -xf {tmp_path}/linux.tar.xz$")
    applied = [at(rf"^patch -d {tree} -p1 --fuzz=0 .* -i {KERNEL}/patches/{re.escape(name)}$") for name in PATCHES]
    assert PATCHES and applied == sorted(applied), "patches in their order"
    defconfig = at(rf"^make -s -C {tree} defconfig$")
    merge = at(rf"^env -C {tree} scripts/kconfig/merge_config.sh -m \.config kernel/configs/kvm_guest\.config "
               rf"{KERNEL}/vm\.config {KERNEL}/mptcplab\.config ")
    verify = at(rf"verify-config\.sh {tree}/\.config {KERNEL}/vm\.config {KERNEL}/mptcplab\.config$")
    build_cmd = at(rf"^make -C {tree} -j2 bindeb-pkg LOCALVERSION= KDEB_PKGVERSION=6\.1\.\d+-mptcplab-{k[:8]} > ")
    assert unpack < applied[0] and applied[-1] < defconfig < merge < verify < build_cmd
    assert not build.exists() and not out.exists(), "a dry run creates nothing"


def test_prepare_only_stops_before_the_build(tmp_path: Path) -> None:
    p = build_deb("--dry-run", "--prepare-only", "--source", tmp_path / "linux.tar.xz", "--build-dir",
                  tmp_path / "build")
    assert p.returncode == 0, p.stderr
    cmds = commands(p.stdout)
    assert any("merge_config.sh" in c for c in cmds) and not any("bindeb-pkg" in c for c in cmds), cmds


def test_the_cache_key_follows_the_patches_and_fragments(tmp_path: Path) -> None:
    kernel = copy_inputs(tmp_path)
    script = kernel / "build-deb.sh"
    base = key(script)
    assert base == key(), "the key depends on the inputs, not on where they are"
    patch = kernel / "patches" / PATCHES[-1]
    text = patch.read_text()
    patch.write_text(text.replace("mptcplab: subflow", "mptcplab: subflow!", 1))
    assert key(script) != base
    patch.write_text(text)
    assert key(script) == base
    patch.rename(patch.with_name("0099-" + patch.name))  # the order of application
    assert key(script) != base
    patch.with_name("0099-" + patch.name).rename(patch)
    fragment = kernel / "mptcplab.config"
    fragment.write_text(fragment.read_text() + "CONFIG_NET_SCH_CAKE=m\n")
    assert key(script) != base


def test_a_cached_build_is_handed_over_without_building(tmp_path: Path) -> None:
    build, out = tmp_path / "build", tmp_path / "debs"
    cached = build / key()[:16]
    cached.mkdir(parents=True)
    image = "linux-image-6.1.192-mptcplab_6.1.192-mptcplab-00000000_amd64.deb"
    for name in (image, "linux-headers-6.1.192-mptcplab_6.1.192-mptcplab-00000000_amd64.deb"):
        (cached / name).write_bytes(b"deb")
    (cached / "manifest.json").write_text('{"release": "6.1.192-mptcplab"}\n')
    out.mkdir()
    (out / "linux-image-6.1.0-old_1_amd64.deb").write_bytes(b"old")
    p = build_deb("--source", tmp_path / "absent.tar.xz", "--build-dir", build, "--out", out)
    assert p.returncode == 0, p.stderr
    assert "cached" in p.stderr and "bindeb-pkg" not in p.stdout + p.stderr
    assert f"{out}/{image}" in p.stdout.splitlines()
    assert sorted(f.name for f in out.iterdir()) == sorted(f.name for f in cached.iterdir())
