"""The student's path in a real browser: JupyterLab of the Jupyter image, served by
docker-compose.yml as students start it, opened in headless Chromium (Debian's package) on
the host against the container's port, the way a student's browser reaches it.

A quick run of the mtu lab (the netns backend on this host; a few scenarios, one short
repetition each) gives the results; the service mounts a copy of notebooks/ (JupyterLab saves
into it) and that run's results directory. Then, in the browser: without the token no
notebook opens; with it notebooks/mtu.ipynb runs from Run > Run All Cells with no error
shown, its figures rendered as images, its warnings and verdict tables present; the landing
notebook (index.ipynb) runs and lists every lab. Screenshots are kept as test artifacts in
$MPTCPLAB_TEST_ARTIFACTS/browser (default .cache/test-artifacts/browser/ in the checkout).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from appliance_support import REPO, Resources, docker, run

pytestmark = pytest.mark.usefixtures("built_images")

ARTIFACTS = Path(os.environ.get("MPTCPLAB_TEST_ARTIFACTS", REPO / ".cache" / "test-artifacts")) / "browser"
#: a quick run of these scenarios: TCP, MPTCP over the bottleneck, one black hole (the figures'
#: three kinds); MPTCPLAB_BROWSER_SCENARIOS=all runs every scenario (about three times longer)
SCENARIOS = ["tcp-a", "mptcp-bottleneck", "blackhole-probing-1"]


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_http(url: str, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except urllib.error.HTTPError:
            return
        except (urllib.error.URLError, OSError):
            time.sleep(1)
    raise AssertionError(f"{url} did not answer within {seconds:.0f} s")


@pytest.fixture(scope="module")
def workdir(resources: Resources, tmp_path_factory: pytest.TempPathFactory) -> Path:
    # under the checkout's .cache rather than /tmp: the daemon bind-mounts it, and a private /tmp
    # of a sandboxed test runner would not be the daemon's
    d = resources.add_path(REPO / ".cache" / f"{resources.prefix}-browser")
    d.mkdir(parents=True)
    return d


@pytest.fixture(scope="module")
def quick_results(workdir: Path) -> Path:
    """results/ of one quick run of the mtu lab on this host (netns backend), made before any
    notebook opens: the browser tests read a run, they do not start one. MPTCPLAB_BROWSER_RESULTS
    names a results directory of an earlier quick run (holding mtu/latest) to copy instead, so
    that the browser tests can be rerun alone in a few minutes."""
    results = workdir / "results"
    given = os.environ.get("MPTCPLAB_BROWSER_RESULTS")
    if given:
        assert (Path(given) / "mtu" / "latest" / "summary.json").is_file(), \
            f"MPTCPLAB_BROWSER_RESULTS={given} holds no mtu/latest/summary.json"
        shutil.copytree(given, results, symlinks=True)
        return results
    if os.geteuid() != 0:
        pytest.fail("the browser test runs the mtu lab: run make test-appliance as root")
    wanted = [] if os.environ.get("MPTCPLAB_BROWSER_SCENARIOS") == "all" else SCENARIOS
    cmd = [str(REPO / ".venv/bin/mptcplab"), "run", "labs/mtu", "--quick", "--results", str(results)]
    for s in wanted:
        cmd += ["--scenario", s]
    t0 = time.monotonic()
    p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=1200)
    # exit 1 with a complete run is an invalid one (on a loaded host, links out of tolerance): its
    # results are still what the notebook must show, warnings first
    latest = results / "mtu" / "latest" / "summary.json"
    assert p.returncode == 0 or (p.returncode == 1 and latest.is_file()), \
        f"{cmd} exited {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    print(f"\nquick run of labs/mtu ({', '.join(wanted) or 'all scenarios'}): {time.monotonic() - t0:.0f} s, "
          f"exit status {p.returncode}")
    assert latest.is_file()
    return results


@pytest.fixture(scope="module")
def jupyter(resources: Resources, workdir: Path, quick_results: Path) -> Iterator[dict[str, str]]:
    """The docker-compose.yml service over a copy of notebooks/ and the quick run's results."""
    notebooks = workdir / "notebooks"
    shutil.copytree(REPO / "notebooks", notebooks)
    # a notebook with a warning (stderr, not an error) and then a cell that raises: the error
    # check must see the one error and only it, or it checks nothing
    (notebooks / "mplt-raises.ipynb").write_text(json.dumps({
        "cells": [{"cell_type": "code", "execution_count": None, "id": "warns", "metadata": {}, "outputs": [],
                   "source": ["import warnings\nwarnings.warn('mplt: only a warning')"]},
                  {"cell_type": "code", "execution_count": None, "id": "raises", "metadata": {}, "outputs": [],
                   "source": ["raise RuntimeError('mplt: this cell fails on purpose')"]}],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
        "nbformat": 4, "nbformat_minor": 5}))
    # files the server writes (saved notebooks, checkpoints) belong to the container's user
    for d in (notebooks, quick_results):
        for p in [d, *d.rglob("*")]:
            os.chown(p, os.getuid(), os.getgid(), follow_symlinks=False)
    project = resources.prefix + "browser"
    port = _free_port()
    token = os.urandom(16).hex()
    env = {"MPTCPLAB_JUPYTER_TOKEN": token, "MPTCPLAB_JUPYTER_PORT": str(port),
           "MPTCPLAB_UID": str(os.getuid()), "MPTCPLAB_GID": str(os.getgid()),
           "MPTCPLAB_NOTEBOOKS_DIR": str(notebooks), "MPTCPLAB_RESULTS_DIR": str(quick_results),
           "COMPOSE_PROJECT_NAME": project}
    compose = ["docker-compose", "-f", str(REPO / "docker-compose.yml"), "-p", project]
    try:
        run([*compose, "up", "-d", "--no-build", "jupyter"], env=env, timeout=300)
        cid = run([*compose, "ps", "-q", "jupyter"], env=env).stdout.strip()
        resources.add("container", cid)
        base = f"http://127.0.0.1:{port}"
        _wait_http(f"{base}/api/status?token={token}", 300)  # a container start on a loaded host
        yield {"base": base, "token": token, "notebooks": str(notebooks), "cid": cid}
    finally:
        run([*compose, "down", "-v", "--remove-orphans"], env=env, check=False, timeout=120)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from jupyterlab_page import start_chromium

    driver = start_chromium()
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture()
def page(browser: Any, jupyter: dict[str, str]) -> Any:
    from jupyterlab_page import JupyterLabPage

    browser.delete_all_cookies()
    return JupyterLabPage(browser, jupyter["base"], failure_shots=ARTIFACTS)


def _cell_count(notebook: str) -> int:
    return len(json.loads((REPO / "notebooks" / notebook).read_text())["cells"])


def _cell(cells: list[Any], needle: str) -> Any:
    found = [c for c in cells if c.kind == "code" and needle in c.source]
    assert found, f"no code cell containing {needle!r}"
    return found[0]


def _png(cell: Any) -> list[dict[str, Any]]:
    """The cell's output images that are inline PNGs the browser decoded (not broken)."""
    return [i for i in cell.images if i["src"].startswith("data:image/png") and i["complete"] and i["w"] > 100]


def test_without_the_token_no_notebook_opens(page: Any, jupyter: dict[str, str]) -> None:
    for token in (None, "0" * 32):
        page.driver.delete_all_cookies()
        url = f"{jupyter['base']}/lab/tree/notebooks/mtu.ipynb" + (f"?token={token}" if token else "")
        page.driver.get(url)
        assert not page.notebook_shown(8), f"{url} showed a notebook"
        assert "/login" in page.driver.current_url, page.driver.current_url
        # the login form asks for the token; the notebook's text is nowhere on the page
        body = page.driver.page_source
        assert "password" in body.lower() or "token" in body.lower()
        assert "Different path MTUs" not in body
    page.screenshot(ARTIFACTS / "00-no-token-login.png")


def test_an_error_in_a_cell_is_seen(page: Any, jupyter: dict[str, str]) -> None:
    page.open_notebook("notebooks/mplt-raises.ipynb", jupyter["token"], cells=2)
    done = page.run_all()
    # Run All stops at the raising cell: the wait ends there, it does not run into a time limit
    assert done.prompts[1].strip("[]: ").isdigit(), done
    cells = page.cells()
    assert [c.error_outputs for c in cells] == [0, 1], [(c.source, c.output_text) for c in cells]
    assert "only a warning" in cells[0].output_text and "this cell fails on purpose" in cells[1].output_text


def test_mtu_notebook_runs_all_cells_in_the_browser(page: Any, jupyter: dict[str, str]) -> None:
    t0 = time.monotonic()
    page.open_notebook("notebooks/mtu.ipynb", jupyter["token"], cells=_cell_count("mtu.ipynb"))
    page.screenshot(ARTIFACTS / "10-mtu-opened.png")
    done = page.run_all()
    page.save()
    print(f"\nmtu.ipynb opened, run and saved in the browser: {time.monotonic() - t0:.0f} s "
          f"(Run All {done.seconds:.0f} s)")
    cells = page.cells()
    code = [c for c in cells if c.kind == "code"]
    in_file = sum(c["cell_type"] == "code" for c in json.loads((REPO / "notebooks/mtu.ipynb").read_text())["cells"])
    assert len(code) == in_file, f"{len(code)} code cells rendered, the notebook has {in_file}"
    # none shows an error (Run All stops at the first one: it is the reason when cells did not
    # run), and every code cell ran (a number in its prompt)
    errors = [(c.index, c.source[:80], c.output_text[-500:]) for c in cells if c.error_outputs]
    assert not errors, f"cells showing an error: {errors}"
    assert done.all_run and all(c.prompt.strip("[]: ").isdigit() for c in code), [c.prompt for c in code]

    # the run read is the quick run, and the run-lab cell says where a run would happen
    load = _cell(cells, "RUN = find_run(results_dir)")
    assert "quick mode:** True" in load.output_text or "quick mode: True" in load.output_text, load.output_text
    runcell = _cell(cells, "plan_quick_run(")
    assert "Jupyter container" in runcell.output_text, runcell.output_text

    warnings = _cell(cells, "collect_warnings(")
    assert "WARNING" in warnings.output_text or "No warnings" in warnings.output_text, warnings.output_text
    gaps = _cell(cells, "run_gaps(")
    assert "Nothing missing" in gaps.output_text or "MISSING" in gaps.output_text, gaps.output_text

    goodput = _cell(cells, "F.plot_goodput(")
    assert goodput.tables >= 1, "no scenario table above the goodput figure"
    assert "mptcp-bottleneck" in goodput.output_text and "tcp-a" in goodput.output_text
    assert _png(goodput), f"goodput figure not rendered as an image: {goodput.images}"
    throughput = _cell(cells, "F.plot_throughput(ts, tcp_and_mptcp)")
    assert _png(throughput), f"throughput figure not rendered as an image: {throughput.images}"
    for needle in ("F.plot_subflow_share(", "F.plot_icmp("):
        assert _png(_cell(cells, needle)), f"{needle} drew no image"

    findings = _cell(cells, "findings_table(")
    assert findings.tables == 1, findings.output_text[:500]
    assert any(v in findings.output_text for v in ("holds", "inconclusive", "not measurable")), \
        findings.output_text[:500]
    published = _cell(cells, "published_table(")
    assert published.tables >= 1 and "8928" in published.output_text  # the thesis' segment size

    page.scroll_to_top()
    page.screenshot(ARTIFACTS / "11-mtu-top.png")
    page.screenshot_cell(warnings, ARTIFACTS / "12-mtu-warnings.png")
    page.screenshot_cell(goodput, ARTIFACTS / "13-mtu-goodput.png")
    page.screenshot_cell(throughput, ARTIFACTS / "14-mtu-throughput.png")
    page.screenshot_cell(findings, ARTIFACTS / "15-mtu-findings.png", output_only=True)

    # what JupyterLab saved agrees with what the page showed: no error output, PNG figures
    saved = json.loads((Path(jupyter["notebooks"]) / "mtu.ipynb").read_text())
    outputs = [o for c in saved["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])]
    assert outputs and not [o for o in outputs if o["output_type"] == "error"]
    assert sum("image/png" in o.get("data", {}) for o in outputs) >= 5


def test_landing_notebook_lists_every_lab(page: Any, jupyter: dict[str, str]) -> None:
    t0 = time.monotonic()
    page.open_notebook("notebooks/index.ipynb", jupyter["token"], cells=_cell_count("index.ipynb"))
    done = page.run_all()
    print(f"\nindex.ipynb opened and run in the browser: {time.monotonic() - t0:.0f} s (Run All {done.seconds:.0f} s)")
    cells = page.cells()
    errors = [(c.index, c.source[:80], c.output_text[-500:]) for c in cells if c.error_outputs]
    assert not errors, f"cells showing an error: {errors}"
    assert done.all_run, done
    glance = _cell(cells, "| lab | paper | latest run | notebook |")
    labs = sorted(p.name for p in (REPO / "labs").iterdir() if (p / "experiment.yml").is_file())
    for lab in labs:
        assert lab in glance.output_text, (lab, glance.output_text)
    assert "Manoratne" in glance.output_text and "Kato" in glance.output_text
    # mtu has a run (the quick run) and a notebook link; a lab without a run says so
    anchors = glance.element.find_elements("css selector", ".jp-OutputArea a")
    links = [a for a in anchors if a.text.strip() == "mtu.ipynb"]
    assert links, f"no link to mtu.ipynb: {[(a.text, a.get_attribute('href')) for a in anchors]}"
    per_lab = _cell(cells, "verdict_table(s)")
    assert per_lab.tables >= 2, per_lab.output_text[:800]  # mtu: scenarios and findings
    # a lab with no run here (sndbuf, and any lab added since) is said to have none, not an error
    assert "no run yet" in per_lab.output_text
    # notebooks are found in the directory: compare.ipynb and the test's extra notebook belong to no lab
    assert "Other notebooks: compare.ipynb, mplt-raises.ipynb" in glance.output_text, glance.output_text
    page.scroll_to_top()
    page.screenshot(ARTIFACTS / "20-index-top.png")
    page.screenshot_cell(glance, ARTIFACTS / "21-index-labs.png")
    page.screenshot_cell(per_lab, ARTIFACTS / "22-index-verdicts.png", output_only=True)
    # the link opens the lab's notebook in JupyterLab
    page.driver.execute_script("arguments[0].scrollIntoView();", links[0])
    links[0].click()
    page.wait_until(lambda: "Different path MTUs" in page.driver.page_source, 180, "mtu.ipynb did not open")
    docker("exec", jupyter["cid"], "true")  # the service still answers after all of it


def _wait_for_line(log: Path, needle: str, proc: subprocess.Popen, seconds: float) -> str:
    """The first line of ``log`` containing ``needle``, waiting up to ``seconds`` while ``proc`` lives."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = [line.strip() for line in log.read_text(errors="replace").splitlines() if needle in line]
        if found:
            return found[0]
        assert proc.poll() is None, f"exited {proc.returncode} before printing {needle!r}:\n{log.read_text()[-3000:]}"
        time.sleep(0.5)
    raise AssertionError(f"no line with {needle!r} within {seconds:.0f} s:\n{log.read_text()[-3000:]}")


def test_make_notebooks_serves_the_venv_on_loopback_with_token(browser: Any, workdir: Path) -> None:
    """`make notebooks` (scripts/notebooks.sh): JupyterLab from .venv, no Docker, 127.0.0.1 only,
    the token required; the landing notebook opens in the browser from the printed URL, with a
    kernel of the virtual environment; SIGTERM stops the server and its kernel."""
    from jupyterlab_page import JupyterLabPage

    port = _free_port()
    token = os.urandom(16).hex()
    jdir = workdir / "make-notebooks"
    jdir.mkdir()
    # the server's own files (workspace, kernel connection files) in the test's directory: no
    # tab restored from an earlier session, nothing left in the home directory
    env = {**os.environ, "MPTCPLAB_JUPYTER_TOKEN": token, "JUPYTERLAB_WORKSPACES_DIR": str(jdir / "workspaces"),
           "JUPYTER_RUNTIME_DIR": str(jdir / "runtime")}
    # its output goes to a file, not a pipe: a pipe nobody reads after the URL line fills up with
    # the server's log, and a server blocked writing its log neither serves nor stops on SIGTERM
    # (what failed on main: the wait for it to stop ran out)
    log = ARTIFACTS / "30-make-notebooks.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as out:
        # SIGINT as a terminal's Ctrl-C finds it: a test process started as a background job
        # of a script (nohup ... &) has SIGINT ignored, every child inherits that, and a
        # non-interactive bash cannot trap a signal ignored on entry: nothing would stop
        proc = subprocess.Popen(["make", "-s", "notebooks", f"NOTEBOOKS_PORT={port}"], cwd=REPO, env=env,
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        url = _wait_for_line(log, "/lab/tree/notebooks/index.ipynb?token=", proc, 120)
        assert url == f"http://127.0.0.1:{port}/lab/tree/notebooks/index.ipynb?token={token}"
        base = f"http://127.0.0.1:{port}"
        _wait_http(f"{base}/api/status?token={token}", 180)
        listening = run(["ss", "-Hltn", f"sport = :{port}"]).stdout.split()
        assert f"127.0.0.1:{port}" in listening, listening
        for bad in ("", "?token=wrong"):
            try:
                urllib.request.urlopen(f"{base}/api/status{bad}", timeout=30)
                raise AssertionError(f"/api/status{bad} answered without the token")
            except urllib.error.HTTPError as e:
                assert e.code == 403
        browser.delete_all_cookies()
        page = JupyterLabPage(browser, base, failure_shots=ARTIFACTS)
        page.driver.get(url)
        page.wait_until(lambda: page.notebook_shown(1), 180, "index.ipynb did not open from the printed URL")
        # the kernel comes from the virtual environment's kernel spec and starts
        page.wait_until(lambda: page.kernel_status() == "idle", 300, "the kernel of index.ipynb did not become idle")
        page.dismiss_news()
        page.screenshot(ARTIFACTS / "30-make-notebooks-index.png")
        kernels = json.loads(urllib.request.urlopen(f"{base}/api/kernels?token={token}", timeout=30).read())
        assert [k["name"] for k in kernels] == ["python3"], kernels
        # ... and it is the virtual environment's Python (the one with mptcplab installed), not
        # whatever a kernel spec in the home directory points at
        pids = run(["pgrep", "-f", f"{jdir / 'runtime'}/kernel-"]).stdout.split()
        exes = {Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode() for pid in pids}
        assert exes and all(e.startswith(str(REPO / ".venv")) for e in exes), exes
        # Ctrl-C while the page is loading again (its requests in flight): the moment at which
        # jupyter_server alone hangs for good on its way out (scripts/notebooks.sh says why)
        page.driver.get(url)
    finally:
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in the terminal sends to make and its children
        rc: int | None
        try:
            rc = proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            rc = None
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    assert rc is not None, f"make notebooks did not stop within 120 s of Ctrl-C:\n{log.read_text()[-3000:]}"
    assert not run(["ss", "-Hltn", f"sport = :{port}"]).stdout.strip(), "the port still listens"
    # the kernel went with it (it leaves on its own when its server is gone: ipykernel's parent poller)
    page.wait_until(lambda: not list((jdir / "runtime").glob("kernel-*.json"))
                    or not run(["pgrep", "-f", str(jdir / "runtime")], check=False).stdout.strip(),
                    60, "the notebook's kernel outlived make notebooks")
