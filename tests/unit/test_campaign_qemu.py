"""The qemu target kind: the packages directory checked at load (one line, exit 2), and the
generated command (images/kernel/qemu-run.sh around the same `mptcplab run`), the dry run."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

import pytest

from mptcplab.campaign.debs import QEMU_RUN
from mptcplab.campaign.executor import item_record
from mptcplab.campaign.planner import plan
from mptcplab.campaign.schema import load_campaign
from mptcplab.campaign.targets import GUEST_TMPFS, RESULTS, Qemu, kind_of
from mptcplab.cli import main

REPO = Path(__file__).resolve().parents[2]


def stock_debs(d: Path, release: str = "6.1.0-99-amd64") -> Path:
    """A distribution's image package alone (debs.sh reads only the names)."""
    d.mkdir(parents=True)
    (d / f"linux-image-{release}_6.1.999-1_amd64.deb").write_bytes(b"")
    (d / f"linux-image-{release}-dbg_6.1.999-1_amd64.deb").write_bytes(b"")  # not a kernel
    return d


def built_debs(d: Path, release: str = "6.1.192-mptcplab") -> Path:
    """What `make kernel-deb` leaves: manifest.json beside the packages."""
    d.mkdir(parents=True)
    (d / "manifest.json").write_text(json.dumps({"release": release}))
    (d / f"linux-image-{release}_{release}-ab12_amd64.deb").write_bytes(b"")
    (d / f"linux-headers-{release}_{release}-ab12_amd64.deb").write_bytes(b"")
    return d


def campaign(tmp_path: Path, targets: str) -> Path:
    f = tmp_path / "c.yml"
    f.write_text(f"name: kq\nlabs:\n  - lab: {REPO / 'labs/sndbuf'}\n    scenarios: [{first_scenario()}]\n"
                 f"targets:\n{targets}repetitions: 1\nrun: {{quick: true}}\n")
    return f


def first_scenario() -> str:
    from mptcplab.lab.loader import load_lab

    return load_lab(REPO / "labs/sndbuf").scenarios[0].name


def run(f: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    rc = main(["campaign", str(f), "--out", str(f.parent / "out"), *extra])
    out, err = capsys.readouterr()
    return rc, out, err.strip()


@pytest.mark.parametrize("target, field, words", [
    ("  - {name: vm, kind: qemu}\n", "targets.0", "needs debs"),
    ("  - {name: vm, debs: x}\n", "targets.0", "debs is for kind qemu"),
    ("  - {name: vm, kind: ansible, mem: 512}\n", "targets.0", "mem is for kind qemu"),
    ("  - {name: vm, kind: qemu, debs: x, host: y}\n", "targets.0", "host is for kind ansible"),
    ("  - {name: vm, kind: qemu, debs: x, accel: hvf}\n", "targets.0.accel", "tcg"),
    ("  - {name: vm, kind: qemu, debs: nowhere}\n", "targets.0.debs", "nowhere: no such directory"),
    ("  - {name: vm, kind: qemu, debs: empty}\n", "targets.0.debs", "0 linux-image-*.deb"),
    ("  - {name: vm, kind: qemu, debs: noimage}\n", "targets.0.debs", "expected one linux-image-6.1.192-mptcplab_"),
    ("  - {name: vm, kind: qemu, debs: norelease}\n", "targets.0.debs", "manifest.json: no release"),
])
def test_bad_qemu_target_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     target: str, field: str, words: str) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "noimage").mkdir()
    (tmp_path / "noimage" / "manifest.json").write_text('{"release": "6.1.192-mptcplab"}')
    (tmp_path / "norelease").mkdir()
    (tmp_path / "norelease" / "manifest.json").write_text("{}")
    f = campaign(tmp_path, target)
    rc, _, err = run(f, capsys, "--dry-run")
    assert rc == 2, err
    assert "\n" not in err
    assert f"{f}: {field}: " in err and words in err, err
    assert not (tmp_path / "out").exists()


def test_debs_relative_to_the_campaign_file_made_absolute(tmp_path: Path) -> None:
    stock_debs(tmp_path / "k61")
    c, _ = load_campaign(campaign(tmp_path, "  - {name: k61, kind: qemu, debs: k61}\n"))
    assert c.targets[0].debs == str((tmp_path / "k61").resolve())


def test_command_is_qemu_run_around_the_engine(tmp_path: Path) -> None:
    d = stock_debs(tmp_path / "k61")
    f = campaign(tmp_path, f"  - {{name: k61, kind: qemu, debs: {d}, mem: 3072, timeout: 900}}\n")
    c, base = load_campaign(f)
    item = plan(c, base, str(f))[0]
    idir = tmp_path / "out" / "items" / item.id
    argv = kind_of(item.target).argv(item, idir)
    results = str(idir / RESULTS)
    sep = argv.index("--")
    # a checkout under the guest's tmpfs (a clone in /tmp) shares its lab into the guest
    share = ["--share", str(item.lab_dir)] if any(item.lab_dir.is_relative_to(t) for t in GUEST_TMPFS) else []
    assert argv[:sep] == ["env", "-C", str(REPO), str(QEMU_RUN), "--debs", str(d), "--out", results,
                          "--mem", "3072", "--timeout", "900", *share]
    # the guest runs the local kind's engine command, writing straight into the item's results
    assert argv[sep + 1:sep + 6] == [sys.executable, "-m", "mptcplab.cli", "run", str(REPO / "labs/sndbuf")]
    engine = argv[sep + 4:]
    assert engine[engine.index("--results") + 1] == results
    assert engine[engine.index("--scenario") + 1] == first_scenario() and "--quick" in engine
    assert "--no-figures" in engine  # an emulated CPU draws a big lab's figures slower than it runs its cases
    assert kind_of(item.target).files(item, idir) == {}  # nothing to write, nothing to fetch back
    assert item_record(item)["debs"] == str(d) and item_record(item)["kind"] == "qemu"


def test_relative_campaign_directory_is_absolute_in_the_guest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # qemu-run.sh runs in this checkout (env -C): a relative --out would land elsewhere
    d = stock_debs(tmp_path / "k61")
    f = campaign(tmp_path, f"  - {{name: k61, kind: qemu, debs: {d}}}\n")
    c, base = load_campaign(f)
    item = plan(c, base, str(f))[0]
    monkeypatch.chdir(tmp_path)
    argv = Qemu().argv(item, Path("rel") / item.id)
    assert argv[argv.index("--out") + 1] == str(tmp_path / "rel" / item.id / RESULTS)


def test_record_names_the_release_and_the_kernel_makes_other_items(tmp_path: Path) -> None:
    a, b = stock_debs(tmp_path / "k61"), built_debs(tmp_path / "patched")
    f = campaign(tmp_path, f"  - {{name: k61, kind: qemu, debs: {a}}}\n  - {{name: here}}\n")
    c, base = load_campaign(f)
    t = c.targets[0]
    assert kind_of(t).record(t) == {"debs": str(a), "release": "6.1.0-99-amd64"}
    t2 = t.model_copy(update={"debs": str(b)})
    assert kind_of(t2).record(t2)["release"] == "6.1.192-mptcplab"
    item = plan(c, base, str(f))[0]
    other = type(item)(t2, item.lab, item.lab_dir, item.scenarios, item.round, item.run)
    assert other.id != item.id, "the same target name on another kernel is another measurement"


def test_dry_run_prints_the_qemu_command_and_the_release(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = stock_debs(tmp_path / "k61")
    f = campaign(tmp_path, f"  - {{name: k6.1-stock, kind: qemu, debs: {d}}}\n")
    rc, out, err = run(f, capsys, "--dry-run")
    assert rc == 0, err
    assert "on k6.1-stock (qemu)" in out
    assert f"# target debs: {d}, release: 6.1.0-99-amd64" in out
    cmd = shlex.split(next(line for line in out.splitlines() if str(QEMU_RUN) in line))
    assert cmd[:4] == ["env", "-C", str(REPO), str(QEMU_RUN)] and "--" in cmd
    assert not (tmp_path / "out").exists(), "a dry run creates nothing"


def test_host_problem_root_and_a_lab_under_the_guests_tmpfs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = stock_debs(tmp_path / "k61")
    f = campaign(tmp_path, f"  - {{name: k61, kind: qemu, debs: {d}}}\n")
    c, base = load_campaign(f)
    item = plan(c, base, str(f))[0]
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert "run as root" in (Qemu().host_problem([item]) or "")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert Qemu().host_problem([item]) is None
    # a lab (or this checkout) under the guest's tmpfs is no problem: it is shared into the guest
    hidden = type(item)(item.target, item.lab, Path("/tmp/somewhere/sndbuf"), item.scenarios, 1, item.run)
    assert Qemu().host_problem([hidden]) is None
    argv = Qemu().argv(hidden, tmp_path / "item")
    assert argv[argv.index("--share") + 1] == "/tmp/somewhere/sndbuf" and argv.index("--share") < argv.index("--")
    assert "--share" not in Qemu().argv(type(item)(item.target, item.lab, Path("/srv/labs/sndbuf"), item.scenarios,
                                                   1, item.run), tmp_path / "item")


def test_sample_campaign_file_is_valid() -> None:
    # the packages directories are this machine's business: the schema only, not debs.sh
    import yaml

    from mptcplab.campaign.schema import Campaign

    c = Campaign.model_validate(yaml.safe_load((REPO / "campaigns" / "kernels-qemu.yml").read_text()))
    assert [t.kind for t in c.targets] == ["local", "qemu", "qemu", "qemu"]
    for e in c.labs:
        assert (REPO / "campaigns" / e.lab / "experiment.yml").is_file(), e.lab
