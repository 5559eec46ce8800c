"""The Ansible playbook: lint, syntax, and the roles executed for real (twice) against a
throwaway Debian 12 systemd container.

What the container target cannot do, and so is limited there (mptcplab_in_container):
- kernel: a container runs its host's kernel; nothing is installed and nothing reboots. The
  role still runs its checks: the kernel choice is valid and the running kernel has MPTCP.
- docker: the packages and daemon.json are installed, but no dockerd is started inside (no
  Docker-in-Docker); the images role builds through the host's daemon instead
  (images_docker_host, the host's socket mounted into the target).
- sysctls: per-namespace settings (net.*) are applied in the container's namespace; the
  machine-wide ones are written to /etc/sysctl.d but not applied (they would change the
  host), and kernel modules are not loaded (the host's kernel, and here it has none).
- jupyter: token, environment and unit are installed; the unit is not started (it needs the
  VM's own dockerd); docker-compose.yml's service is run by test_images.py instead.
"""
from __future__ import annotations

import json
import re
import shutil
import tarfile
import tempfile
import time
from pathlib import Path

import pytest
import yaml
from appliance_support import CACHE, REPO, docker, privileged_args, run

ANSIBLE_ENV = {"ANSIBLE_CONFIG": str(REPO / "ansible/ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
               "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_HOST_KEY_CHECKING": "False",
               "ANSIBLE_LOCAL_TEMP": "/tmp/.ansible-mptcplab", "ANSIBLE_RETRY_FILES_ENABLED": "0",
               "PY_COLORS": "0", "NO_COLOR": "1"}
# per-task timings in the converge output (ansible.posix ships with Debian's ansible)
CONVERGE_ENV = {**ANSIBLE_ENV, "ANSIBLE_CALLBACKS_ENABLED": "ansible.posix.profile_tasks"}
RECAP = re.compile(r"^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)


def test_ansible_lint():
    p = run(["ansible-lint", "--offline", "--nocolor", "-p"], cwd=REPO / "ansible", env=ANSIBLE_ENV,
            check=False, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Passed" in p.stdout + p.stderr or not p.stdout.strip()


@pytest.mark.parametrize("playbook", ["site.yml", "campaign-item.yml", "campaign-host.yml"])
def test_playbook_syntax(playbook):
    run(["ansible-playbook", "-i", "localhost,", "--syntax-check", playbook], cwd=REPO / "ansible",
        env=ANSIBLE_ENV)


def test_kernel_role_rejects_an_unknown_kernel_choice(tmp_path):
    """The kernel role's own check, run on this machine with nothing else of the play."""
    play = tmp_path / "play.yml"
    play.write_text(
        "- hosts: localhost\n  connection: local\n  gather_facts: false\n"
        "  vars: {kernel_mode: bogus, mptcplab_in_container: true, mptcplab_repo: " + str(REPO) + "}\n"
        "  roles: [kernel]\n")
    p = run(["ansible-playbook", "-i", "localhost,", str(play)], env={**ANSIBLE_ENV,
            "ANSIBLE_ROLES_PATH": str(REPO / "ansible/roles")}, check=False)
    want = "kernel_mode must be stock, backports, mainline, source or prebuilt"
    assert p.returncode != 0 and want in p.stdout, p.stdout


def copy_repo(dest: Path) -> None:
    """The repository as the VM's synced folder would show it, without this machine's venv,
    results and build products (the converge creates its own)."""
    skip = {".venv", ".git", ".vagrant", "mptcplab.egg-info", "__pycache__", ".pytest_cache"}

    def flt(info: tarfile.TarInfo):
        parts = Path(info.name).parts
        # results/ only at the top: mptcplab/results/ is a package the images need
        if any(p in skip for p in parts) or parts[:2] == (".", "results") \
                or parts[:2] == (".", "native") and "build" in parts:
            return None
        return info

    tmp = dest.with_suffix(".tar")
    with tarfile.open(tmp, "w") as t:
        t.add(REPO, arcname=".", filter=flt)
    dest.mkdir(parents=True)
    with tarfile.open(tmp) as t:
        t.extractall(dest)
    tmp.unlink()


def recap(out: str, host: str) -> dict[str, int]:
    for m in RECAP.finditer(out):
        if m.group(1) == host:
            return {"ok": int(m.group(2)), "changed": int(m.group(3)), "unreachable": int(m.group(4)),
                    "failed": int(m.group(5))}
    raise AssertionError("no PLAY RECAP for " + host + "\n" + out[-5000:])


@pytest.fixture(scope="module")
def target(resources, built_images, containerlab_binary):
    """A systemd container standing in for the VM, with a copy of the repository at /vagrant."""
    work = resources.add_path(Path(tempfile.mkdtemp(prefix=resources.prefix + "-")))
    ctx = work / "ctx"
    (ctx / "ca").mkdir(parents=True)
    shutil.copy(REPO / "tests/appliance/target.Dockerfile", ctx / "Dockerfile")
    local_ca = Path("/usr/local/share/ca-certificates")
    if local_ca.is_dir():
        for crt in local_ca.rglob("*.crt"):
            shutil.copy(crt, ctx / "ca" / crt.name)
    image = resources.add("image", resources.name("target"))
    docker("build", "-q", "--build-arg", "BASE_IMAGE=mptcplab/debian-base:bookworm", "-t", image, str(ctx),
           timeout=900)
    repo = work / "vagrant"
    copy_repo(repo)
    apt_cache = CACHE / "apt-archives"
    (apt_cache / "partial").mkdir(parents=True, exist_ok=True)
    pip_cache = CACHE / "pip"
    pip_cache.mkdir(parents=True, exist_ok=True)
    cgroup = ["-v", "/sys/fs/cgroup:/sys/fs/cgroup:ro"]
    if Path("/sys/fs/cgroup/cgroup.controllers").exists():  # cgroup v2
        cgroup = ["--cgroupns=host", "-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw"]
    name = resources.add("container", resources.name("target"))
    docker("run", "-d", "--name", name, "--hostname", "mptcplab", *privileged_args(),
           "--tmpfs", "/run", "--tmpfs", "/run/lock", "--tmpfs", "/tmp", *cgroup,
           "-v", f"{repo}:/vagrant",
           "-v", "/var/run/docker.sock:/mnt/host-docker.sock",
           "-v", f"{containerlab_binary}:/mnt/cache/containerlab:ro",
           "-v", f"{apt_cache}:/var/cache/apt/archives",
           "-v", f"{pip_cache}:/root/.cache/pip",
           image)
    # a deadline, not 60 tries: each try is a docker exec, and systemd's boot in the container
    # takes minutes on a loaded shared host (an upper bound, not a timing assertion)
    state, deadline = "", time.monotonic() + 300
    while time.monotonic() < deadline:
        state = docker("exec", name, "systemctl", "is-system-running", check=False).stdout.strip()
        if state in ("running", "degraded"):
            break
        time.sleep(1)
    assert state in ("running", "degraded"), f"systemd in the target after 300 s: {state!r}"
    inventory = work / "inventory.ini"
    inventory.write_text(f"{name} ansible_connection=community.docker.docker "
                         f"ansible_python_interpreter=/usr/bin/python3\n")
    extra = work / "vars.json"
    extra.write_text(json.dumps({
        "mptcplab_repo": "/vagrant",
        "mptcplab_user": "vagrant",
        "kernel_mode": "stock",
        "images_offline": True,
        "images_docker_host": "unix:///mnt/host-docker.sock",
        "containerlab_local_path": "/mnt/cache/containerlab",
    }))
    return {"name": name, "inventory": inventory, "vars": extra, "repo": repo}


def converge(target) -> tuple[dict[str, int], str, float]:
    t0 = time.monotonic()
    p = run(["ansible-playbook", "-i", str(target["inventory"]), "-e", f"@{target['vars']}",
             str(REPO / "ansible/site.yml")], env=CONVERGE_ENV, check=False, timeout=2400)
    took = time.monotonic() - t0
    out = p.stdout + p.stderr
    r = recap(out, target["name"])
    assert p.returncode == 0 and r["failed"] == 0 and r["unreachable"] == 0, out[-8000:]
    return r, out, took


def test_roles_converge_twice_with_no_change_the_second_time(target):
    first, out1, t1 = converge(target)
    # container detection and the limited roles (see the module docstring)
    assert "kernel" in out1 and "has MPTCP" in out1, out1[-4000:]
    second, out2, t2 = converge(target)
    changed = [line for line in out2.splitlines() if line.startswith("changed:")]
    assert second["changed"] == 0, f"second run changed {second['changed']} task(s): {changed}\n{out2[-6000:]}"
    slowest = [line for line in out1.splitlines() if re.search(r"-+ \d+\.\d+s$", line)][:8]
    print(f"\nconverge 1: {t1:.0f} s {first}; converge 2: {t2:.0f} s {second}\nslowest tasks of run 1:\n"
          + "\n".join(slowest))

    name = target["name"]

    def sh(cmd: str) -> str:
        return docker("exec", name, "sh", "-c", cmd).stdout

    # base: the lab tools and the engine's venv (scripts/bootstrap.sh)
    tools = sh("iperf3 --version | head -1; for t in mptcpize tshark tcpdump ethtool nft ip; do command -v $t; done")
    for t in ("iperf 3", "/mptcpize", "/tshark", "/tcpdump", "/ethtool", "/nft", "/ip"):
        assert t in tools, tools
    assert sh("/vagrant/.venv/bin/python -c 'import mptcplab; print(mptcplab.__name__)'").strip() == "mptcplab"
    # sysctls: the file, and the per-namespace values applied
    conf = sh("cat /etc/sysctl.d/90-mptcplab.conf")
    assert "net.mptcp.enabled=1" in conf.replace(" ", "") and "fs.inotify.max_user_instances" in conf
    assert sh("sysctl -n net.ipv4.tcp_no_metrics_save").strip() == "1"
    assert "sch_netem" in sh("cat /etc/modules-load.d/mptcplab.conf")
    # docker: the client, the daemon's configuration, the lab user in the docker group
    assert json.loads(sh("cat /etc/docker/daemon.json"))["log-driver"] == "local"
    assert "docker" in sh("id -nG vagrant").split()
    # containerlab, the pinned version from the local binary
    assert "version: 0.69.3" in docker("exec", "-e", "CLAB_VERSION_CHECK=disable", name,
                                       "containerlab", "version").stdout
    # images: built through the host's daemon
    imgs = sh("DOCKER_HOST=unix:///mnt/host-docker.sock docker images --format '{{.Repository}}:{{.Tag}}'")
    for img in ("mptcplab/host:latest", "mptcplab/router:latest", "mptcplab/jupyter:latest"):
        assert img in imgs
    # jupyter: a 40-character token readable by root only, the unit, the environment
    assert sh("stat -c %a /etc/mptcplab/jupyter.token").strip() == "600"
    assert len(sh("cat /etc/mptcplab/jupyter.token").strip()) == 40
    env = sh("cat /etc/mptcplab/jupyter.env")
    assert "MPTCPLAB_JUPYTER_BIND=0.0.0.0" in env and "MPTCPLAB_UID=1000" in env
    unit = sh("systemctl cat mptcplab-jupyter.service")
    assert "docker-compose -p mptcplab -f /vagrant/docker-compose.yml up --no-build jupyter" in unit
    assert sh("systemctl is-enabled mptcplab-jupyter.service || true").strip() == "enabled"
    assert sh("systemctl is-active mptcplab-jupyter.service || true").strip() == "inactive"


def test_containerlab_parses_the_lab_topologies(containerlab_binary, tmp_path):
    """Every labs/*/topology.clab.yml through containerlab's own parser and checks (graph
    needs no deploy, which this kernel refuses)."""
    labs = sorted((REPO / "labs").glob("*/topology.clab.yml"))
    if not labs:
        pytest.skip("no labs/*/topology.clab.yml")
    for topo in labs:
        d = tmp_path / topo.parent.name
        shutil.copytree(topo.parent, d)
        p = run([str(containerlab_binary), "graph", "--dot", "-t", str(d / "topology.clab.yml")], cwd=d,
                env={"CLAB_VERSION_CHECK": "disable", "NO_COLOR": "1"}, check=False, timeout=120)
        assert p.returncode == 0, f"{topo}: {p.stdout}{p.stderr}"
        dot = next(d.rglob("*.dot")).read_text()
        # every node the lab declares, whatever its name (labs/setup's are cli and srv)
        nodes = yaml.safe_load(topo.read_text())["topology"]["nodes"]
        assert nodes, topo
        for node in nodes:
            assert node in dot, (topo, node)


def test_kernel_source_path_prepares_the_patched_tree_idempotently(target):
    """The kernel role's source mode for real, up to the build: the pinned source from
    Debian's package, the patches applied by ansible.posix.patch, the fragment merged; a
    second run changes nothing. (x86_64 defconfig as the base: a container has no
    /boot/config of its own, and localmodconfig would read the host's modules.)"""
    extra = target["vars"].with_name("kernel-source.json")
    extra.write_text(json.dumps({"kernel_manage": True, "kernel_mode": "source", "kernel_source_build": False,
                                 "kernel_source_base_config": "defconfig",
                                 "kernel_source_localmodconfig": False}))
    cmd = ["ansible-playbook", "-i", str(target["inventory"]), "-e", f"@{target['vars']}", "-e", f"@{extra}",
           "--tags", "kernel", str(REPO / "ansible/site.yml")]
    outs = []
    for _ in range(2):
        p = run(cmd, env=CONVERGE_ENV, check=False, timeout=1800)
        out = p.stdout + p.stderr
        r = recap(out, target["name"])
        assert p.returncode == 0 and r["failed"] == 0, out[-8000:]
        outs.append((r, out))
    assert outs[0][0]["changed"] > 0
    assert outs[1][0]["changed"] == 0, [line for line in outs[1][1].splitlines() if line.startswith("changed:")]

    tree = "/usr/src/mptcplab/linux-source-6.1"
    src = docker("exec", target["name"], "grep", "-c", "icsk->icsk_mtup.enabled = true;",
                 f"{tree}/net/ipv4/tcp_output.c").stdout.strip()
    assert src == "1"
    assert docker("exec", target["name"], "grep", "-c", "mptcplab: subflow",
                  f"{tree}/net/ipv4/tcp_output.c").stdout.strip() == "2"
    config = docker("exec", target["name"], "cat", f"{tree}/.config").stdout
    for line in ("CONFIG_MPTCP=y", "CONFIG_NET_SCH_NETEM=m", "CONFIG_IFB=m", "CONFIG_NETFILTER_NETLINK_QUEUE=m",
                 "CONFIG_BPF_SYSCALL=y", "CONFIG_TRACEPOINTS=y", 'CONFIG_LOCALVERSION="-mptcplab"',
                 'CONFIG_SYSTEM_TRUSTED_KEYS=""', "CONFIG_DEBUG_INFO_NONE=y"):
        assert line in config.splitlines(), line
    release = docker("exec", "-w", tree, target["name"], "make", "-s", "kernelrelease").stdout.strip()
    assert re.fullmatch(r"6\.1\.\d+-mptcplab", release), release


def test_kernel_prebuilt_mode_installs_the_handed_over_image(tmp_path):
    """The kernel role's prebuilt mode on this machine in check mode (nothing installed): the
    manifest of `make kernel-deb` names the packages; the image is chosen (the headers on
    request, never linux-libc-dev) and the release to boot is the manifest's."""
    release = "6.1.192-mptcplab"
    debs = tmp_path / "kernel-debs"
    debs.mkdir()
    names = []
    for kind in ("image", "headers", "libc-dev"):
        pkg = f"linux-{kind}-{release}" if kind != "libc-dev" else "linux-libc-dev"
        root = tmp_path / pkg / "DEBIAN"
        root.mkdir(parents=True)
        (root / "control").write_text(f"Package: {pkg}\nVersion: {release}-0\nArchitecture: amd64\n"
                                      "Maintainer: mptcplab <mptcplab@localhost>\nDescription: test\n")
        names.append(f"{pkg}_{release}-0_amd64.deb")
        run(["dpkg-deb", "-b", str(root.parent), str(debs / names[-1])])
    (debs / "manifest.json").write_text(json.dumps({"release": release, "debs": names}))
    tasks = REPO / "ansible/roles/kernel/tasks/prebuilt.yml"
    for headers, want in ((False, names[:1]), (True, names[:2])):
        play = tmp_path / "play.yml"
        play.write_text(yaml.safe_dump([{
            "hosts": "localhost", "connection": "local", "gather_facts": False,
            "tasks": [{"ansible.builtin.include_tasks": str(tasks),
                       "vars": {"kernel_prebuilt_dir": str(debs), "kernel_prebuilt_headers": headers,
                                "kernel_expected_release": ""}},
                      {"ansible.builtin.debug": {"msg": "wanted={{ kernel_release_wanted }}"}}]}]))
        p = run(["ansible-playbook", "-i", "localhost,", "--check", str(play)], env=ANSIBLE_ENV, check=False)
        assert p.returncode == 0, p.stdout + p.stderr
        installed = re.findall(r"^changed: \[localhost\] => \(item=(\S+)\)", p.stdout, re.M)
        assert sorted(installed) == sorted(want), p.stdout
        assert f"wanted={release}" in p.stdout, p.stdout
    (debs / "manifest.json").unlink()
    p = run(["ansible-playbook", "-i", "localhost,", "--check", str(play)], env=ANSIBLE_ENV, check=False)
    assert p.returncode != 0 and "make kernel-deb" in p.stdout, p.stdout
