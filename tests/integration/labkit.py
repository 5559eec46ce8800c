"""Small labs written by the integration tests (one YAML pair per test module) and the helpers
that run them once and read the per-scenario records."""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

from mptcplab.cli import main


def netns() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def write_lab(root: Path, name: str, topology: dict[str, Any], experiment: dict[str, Any]) -> Path:
    lab = root / name
    lab.mkdir(parents=True)
    (lab / "topology.clab.yml").write_text(yaml.safe_dump({"name": name, "topology": topology}, sort_keys=False))
    (lab / "experiment.yml").write_text(yaml.safe_dump(experiment, sort_keys=False))
    return lab


def created_namespaces(run_dir: Path) -> set[str]:
    """The namespaces the run's command logs say it created (other runs on this machine
    create theirs at the same time, so a before/after listing would blame them on us)."""
    out = set()
    for log in run_dir.glob("scenarios/*/rep*/commands.log"):
        for line in log.read_text().splitlines():
            words = line.split()
            if words[:3] == ["ip", "netns", "add"] and len(words) > 3:
                out.add(words[3])
    return out


def run_quick(lab: Path, results: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    """One quick run; asserts nothing was left behind; returns (exit status, summary)."""
    rc = main(["run", str(lab), "--quick", "--results", str(results), *extra])
    runs = sorted((results / lab.name).glob("2*/summary.json"))
    assert runs, f"no summary written (exit {rc})"
    made = created_namespaces(runs[-1].parent)
    assert made, "no namespace in the command logs: the check below would prove nothing"
    assert made & netns() == set(), f"the run left namespaces behind: {made & netns()}"
    return rc, json.loads(runs[-1].read_text())


def run_once(root: Path, name: str, topology: dict[str, Any],
             experiment: dict[str, Any]) -> tuple[Path, dict[str, dict[str, Any]]]:
    """Writes the lab ``name`` under ``root``, runs it once quickly (run_quick: nothing left
    behind) and returns (run directory, each scenario's record by name). A complete run
    judged invalid (exit 1: a loaded host) still returns: the callers' checks hold on it."""
    lab = write_lab(root / "labs", name, topology, experiment)
    rc, summary = run_quick(lab, root / "results")
    assert rc in (0, 1), rc
    run_dir = sorted((root / "results" / name).glob("2*/summary.json"))[-1].parent
    return run_dir, by_name(summary)


def run_scenario(root: Path, name: str, topology: dict[str, Any], experiment: dict[str, Any],
                 scenario: str) -> tuple[Path, dict[str, Any]]:
    """run_once, and ``scenario``'s record alone."""
    run_dir, recs = run_once(root, name, topology, experiment)
    return run_dir, recs[scenario]


def rep_of(run: tuple[Path, dict[str, dict[str, Any]]], scenario: str) -> tuple[Path, dict[str, Any]]:
    """(repetition directory, its rep.json) of ``scenario`` in a run_once result."""
    run_dir, recs = run
    rep = run_dir / recs[scenario]["dir"]
    return rep, json.loads((rep / "rep.json").read_text())


def nstat(rec: dict[str, Any], node: str, counter: str) -> int:
    """A counter's delta over the traffic on ``node`` in a repetition's record (0: absent)."""
    return int(rec["probes"]["nstat"].get(node, {}).get(counter, 0))


def tshark_fields(pcap: Path, *fields: str, where: str) -> list[list[str]]:
    """Each packet of ``pcap`` matching the display filter ``where``: its ``fields``."""
    argv = ["tshark", "-r", str(pcap), "-Y", where, "-T", "fields", *(a for f in fields for a in ("-e", f))]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True).stdout
    return [line.split("\t") for line in out.splitlines() if line.strip()]


REPO = Path(__file__).resolve().parents[2]

#: client - router - server, one link each side (the trace-link tests' line)
LINE_TOPOLOGY = {
    "nodes": {"client": {"kind": "linux", "image": "mptcplab/host:latest"},
              "router": {"kind": "linux", "image": "mptcplab/router:latest"},
              "server": {"kind": "linux", "image": "mptcplab/host:latest"}},
    "links": [{"endpoints": ["client:eth1", "router:eth1"], "mtu": 1500},
              {"endpoints": ["router:eth2", "server:eth1"], "mtu": 1500}],
}


def assert_status(rc: int, summary: dict[str, Any]) -> None:
    """The run's exit status agrees with its summary: 0 for a complete, valid run; 1 for a
    complete run judged invalid, which says why (a late delay line on a loaded host is one).
    Anything else fails: 130 (incomplete), 2 (refused), or a status the summary contradicts."""
    assert summary["complete"], (rc, summary.get("invalid_reasons"))
    if summary["valid"]:
        assert rc == 0, (rc, summary["invalid_reasons"])
    else:
        assert rc == 1 and summary["invalid_reasons"], (rc, summary["invalid_reasons"])


def run_repo_lab(lab: str, results: Path, nodes: int, scenarios: int, *selectors: str) -> Path:
    """A quick run of the repository's labs/<lab> (``--scenario`` per selector; all when
    none); asserts the command logs name ``nodes`` namespaces per scenario (``scenarios``
    of them) and that none is left. Exit 1 is accepted: a run judged invalid (a late delay
    line on a loaded host) still writes complete results, whose validity the summary states.
    Returns the run directory."""
    argv = ["run", str(REPO / "labs" / lab), "--quick", "--results", str(results)]
    for sel in selectors:
        argv += ["--scenario", sel]
    rc = main(argv)
    runs = sorted((results / lab).glob("2*/summary.json"))
    assert runs, f"no summary written (exit {rc})"
    made = created_namespaces(runs[-1].parent)
    assert len(made) == nodes * scenarios, sorted(made)
    assert made & netns() == set(), f"the run left namespaces behind: {made & netns()}"
    assert_status(rc, json.loads(runs[-1].read_text()))
    latest = results / lab / "latest"
    assert latest.is_symlink() and latest.resolve() == runs[-1].parent
    return runs[-1].parent


def by_name(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["name"]: s for s in summary["scenarios"]}


def codes(rec: dict[str, Any]) -> list[str]:
    return [f["code"] for f in rec.get("findings", [])]


def on_path(rec: dict[str, Any], path: str) -> list[dict[str, Any]]:
    return [s for s in rec["subflows"] if s["path"] == path]


def run_notebook(name: str, results_dir: Path, timeout: int = 300) -> str:
    """Execute notebooks/<name>.ipynb headless against ``results_dir`` (its parameters cell
    gets ``results_dir`` and ``run_lab = False``) and return every cell output as text."""
    import nbformat
    from nbclient import NotebookClient

    notebooks = Path(__file__).resolve().parents[2] / "notebooks"
    nb = nbformat.read(notebooks / f"{name}.ipynb", as_version=4)
    for cell in nb.cells:
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            cell.source += f"\nresults_dir = {str(results_dir)!r}\nrun_lab = False\n"
    NotebookClient(nb, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(notebooks)}}).execute()
    return "".join(str(o) for c in nb.cells for o in c.get("outputs", []))


def side(finding: dict[str, Any] | Any) -> bool | None:
    """Which side of its claim a finding's repetitions put it: its verdict when decided,
    else what every inconclusive check leans to (a quick run's one repetition decides
    nothing); None when not measurable or the checks lean both ways."""
    f = finding if isinstance(finding, dict) else finding.model_dump()
    if f["verdict"] in ("holds", "does not hold"):
        return bool(f["verdict"] == "holds")
    if f["verdict"] != "inconclusive":
        return None
    # a check that holds counts for "holds"; one that does not hold would have decided the finding
    leans = {True if c["verdict"] == "holds" else c["leans"] for c in f["checks"]}
    return leans.pop() if len(leans) == 1 and None not in leans else None


def measured(finding: dict[str, Any] | Any) -> bool:
    """Whether this run measured every check of a finding (a verdict other than "not
    measurable", each check with its estimate), whichever side its checks fall on: one
    repetition may put two checks on different sides."""
    f = finding if isinstance(finding, dict) else finding.model_dump()
    return bool(f["verdict"] != "not measurable" and f["checks"]
                and all(c["estimate"] is not None for c in f["checks"]))


def rep_record(run_dir: Path, scenario: str, rep: int = 1) -> dict[str, Any]:
    """A repetition's rep.json."""
    return dict(json.loads((run_dir / "scenarios" / scenario / f"rep{rep}" / "rep.json").read_text()))


def ran_events(run_dir: Path, scenario: str, rep: int = 1) -> dict[str, dict[str, str]]:
    """A repetition's events.csv by action, each row checked to have run (rc 0) and to be on
    the capture's axis."""
    with (run_dir / "scenarios" / scenario / f"rep{rep}" / "events.csv").open() as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        assert r["rc"] == "0" and r["capture_s"], r
    return {r["action"]: r for r in rows}


def assert_upm_subflow_window(rec: dict[str, Any], created: float, destroyed: float, done: float, *,
                              min_bytes: int, first_within: float, a_until: float) -> dict[str, Any]:
    """A userspace-PM subflow created at ``created`` and destroyed at ``destroyed`` (its command
    done at ``done``), capture times: one joined subflow on path B carrying more than
    ``min_bytes``, its data from within ``first_within`` after the create to the destroy (the
    tool's start and the queue's last packets after it); path A's initial subflow carrying
    the connection before the create and after ``a_until``; one join in nstat. Returns B."""
    b = [s for s in rec["subflows"] if s["path"] == "B"]
    assert len(b) == 1 and b[0]["initial"] is False and b[0]["established"], rec["subflows"]
    sub = b[0]
    assert (sub["bytes"] or 0) > min_bytes, sub
    assert created < sub["first_data_t"] < created + first_within, (created, sub)
    assert destroyed - 0.5 < sub["last_data_t"] < done + 0.3, (destroyed, done, sub)
    a = [s for s in rec["subflows"] if s["path"] == "A" and s["initial"]]
    assert a and a[0]["first_data_t"] < created and a[0]["last_data_t"] > a_until, a
    mib = rec["probes"]["nstat"]
    assert mib["client"].get("MPTcpExtMPJoinSynTx") == 1 and mib["server"].get("MPTcpExtMPJoinAckRx") == 1, mib
    return sub
