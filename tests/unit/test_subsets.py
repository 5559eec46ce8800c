"""A lab's named subsets (experiment.yml ``subsets:``, ``run --subset NAME``): the loader's
one-line errors, the selection and its repetitions, the dry run's header, the manifest's
record, the report's note of the findings a subset cannot judge, and the wall-time estimate."""

import json
from pathlib import Path

import pytest
import yaml

from mptcplab.cli import main
from mptcplab.errors import LabInputError
from mptcplab.lab.loader import load_lab
from mptcplab.lab.selection import finding_coverage
from mptcplab.record.model import Manifest
from mptcplab.results.read import as_summary
from mptcplab.results.report import _header
from mptcplab.run import RunOptions, repetitions, select_scenarios
from mptcplab.walltime import DEFAULT_OVERHEAD_S, estimate, measured_overhead, traffic_seconds

LABS = Path(__file__).resolve().parents[2] / "labs"
#: a subset of the mtu lab: a pattern and an exact name, out of the lab's order
PMTUD = {"description": "PMTUD only", "scenarios": ["tcp-b", "blackhole-probing-*"], "repetitions": 2}


def with_subsets(lab: Path, subsets: object) -> Path:
    path = lab / "experiment.yml"
    data = yaml.safe_load(path.read_text())
    data["subsets"] = subsets
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return lab


@pytest.mark.parametrize("subsets,field,problem", [
    ({"pmtud": {"scenarios": ["tcp-b", "fig8-*"]}}, "subsets.pmtud.scenarios[1]", "no scenario matches 'fig8-*'"),
    ({"pmtud": {"scenarios": ["tcp-c"]}}, "subsets.pmtud.scenarios[0]", "no scenario is named 'tcp-c'"),
    ({"pmtud": {"scenarios": ["tcp-b"], "repetitions": 0}}, "subsets.pmtud.repetitions", "greater than or equal to 1"),
    ({"pmtud": {"scenarios": ["tcp-b"], "repetitions": 1000}}, "subsets.pmtud.repetitions", "less than or equal"),
    ({"pmtud": {"scenarios": ["tcp-b"], "repetitions": "many"}}, "subsets.pmtud.repetitions", "integer"),
    ({"pmtud": {"scenarios": []}}, "subsets.pmtud.scenarios", "at least 1"),
    ({"pmtud": {"scenarios": ["tcp-b"], "reps": 3}}, "subsets.pmtud.reps", "unknown field"),
    ({"Paper Subset": {"scenarios": ["tcp-b"]}}, "subsets.Paper Subset", "pattern"),
])
def test_bad_subset_names_file_field_problem(copy_lab, subsets, field, problem):
    lab = with_subsets(copy_lab(), subsets)
    with pytest.raises(LabInputError) as e:
        load_lab(lab)
    assert e.value.file.endswith("experiment.yml")
    assert e.value.field.startswith(field), e.value.field
    assert problem in e.value.problem, e.value.problem
    assert "\n" not in str(e.value)


def test_subset_selects_in_lab_order_with_its_repetitions(copy_lab):
    lab_dir = with_subsets(copy_lab(), {"pmtud": PMTUD})
    lab = load_lab(lab_dir)
    # a subset is not part of a scenario's body: the scenarios are those of the lab without it
    assert len(lab.scenarios) == 13
    opts = RunOptions.with_subset(lab, "pmtud")
    picked = [s.name for s in select_scenarios(lab, opts.scenarios)]
    assert picked == ["tcp-b", "blackhole-probing-0", "blackhole-probing-1", "blackhole-probing-2"]
    assert opts.subset is not None and opts.subset.name == "pmtud"
    assert {repetitions(lab, opts, s) for s in select_scenarios(lab, opts.scenarios)} == {2}
    # the command line wins, as over a scenario's own count
    assert repetitions(lab, RunOptions.with_subset(lab, "pmtud", reps=5)) == 5
    assert repetitions(lab, RunOptions.with_subset(lab, "pmtud", quick=True)) == lab.experiment.quick.repetitions
    # a subset without repetitions keeps each scenario's own
    lab2 = load_lab(with_subsets(lab_dir, {"pmtud": {"scenarios": ["tcp-b"]}}))
    tcp_b = lab2.scenarios[1]
    assert repetitions(lab2, RunOptions.with_subset(lab2, "pmtud"), tcp_b) == tcp_b.body.repetitions


def test_unknown_subset_is_one_line_naming_those_the_lab_has(copy_lab):
    lab = load_lab(with_subsets(copy_lab(), {"pmtud": PMTUD}))
    with pytest.raises(LabInputError) as e:
        RunOptions.with_subset(lab, "paper")
    assert e.value.field == "--subset" and "no subset 'paper'" in e.value.problem and "have: pmtud" in e.value.problem
    with pytest.raises(LabInputError, match="have: none"):
        RunOptions.with_subset(load_lab(LABS / "mtu"), "paper")


def test_cli_subset_errors_exit_2_and_create_nothing(copy_lab, tmp_path, capsys):
    lab = with_subsets(copy_lab(), {"pmtud": PMTUD})
    results = tmp_path / "r"
    assert main(["run", str(lab), "--subset", "nope", "--results", str(results)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--subset" in err[0] and "nope" in err[0]
    with pytest.raises(SystemExit) as e:  # argparse: the two select alike, one or the other
        main(["run", str(lab), "--subset", "pmtud", "--scenario", "tcp-a", "--results", str(results)])
    assert e.value.code == 2 and "not allowed with" in capsys.readouterr().err
    assert not results.exists()


def test_dry_run_names_the_subset_and_estimates_wall_time(copy_lab, tmp_path, capsys):
    lab = with_subsets(copy_lab(), {"pmtud": PMTUD})
    rc = main(["run", str(lab), "--subset", "pmtud", "--dry-run", "--emulation", "nfqueue", "--backend", "netns",
               "--results", str(tmp_path / "r")])
    out = capsys.readouterr().out
    assert rc == 0, out
    header = out.splitlines()[0]
    assert "4 scenario(s) (subset pmtud: tcp-b blackhole-probing-*) x 2 repetition(s)" in header
    assert "# estimated wall time:" in out and "8 repetition(s)" in out
    assert "# subset pmtud: 4 of 13 scenarios" in out
    assert [ln for ln in out.splitlines() if ln.startswith("## scenario ")] == [
        "## scenario tcp-b: plain TCP over path B; PMTUD must find the 1500-byte bottleneck",
        *[ln for ln in out.splitlines() if ln.startswith("## scenario blackhole-probing-")]]
    assert not (tmp_path / "r").exists()


def test_rcvbuf_paper_subset_findings_it_cannot_judge():
    lab = load_lab(LABS / "rcvbuf")
    opts = RunOptions.with_subset(lab, "paper")
    names = [s.name for s in select_scenarios(lab, opts.scenarios)]
    assert len(names) == 9 and opts.reps == 3
    cov = finding_coverage(lab.published, names)
    # judged whole: none of these is in either list
    judged = {"p3.2-checksum-costs-at-jumbo", "p4.1-tcp-wifi-beats-mptcp-200k", "p4.4-m12-at-200k",
              "p7.1-large-latencies", "p7.2-tcp-wifi-waits-in-send-buffer",
              "p7.3-reduced-sndbuf-below-mptcp", "p7-sanity-send-buffer-delay"}
    assert not judged & set(cov.not_run + cov.partly_run)
    assert set(cov.partly_run) == {"dss-checksum-negotiated", "p4.3-megabyte-needed", "p4.4-m12-matches-best-path"}
    assert {"p4.2-370k-insufficient", "p6a-slow-3g-at-200k", "p6c-symmetric-links", "fig9-never-below-tcp",
            "fig5-sender-memory-order", "p4.3g-used-with-bigger-buffer"} <= set(cov.not_run)
    # findings without a check (not measurable, or not checkable) are neither
    assert "fig8-receiver-cpu" not in cov.not_run and "s4.2-buffer-formula" not in cov.not_run
    rec = opts.subset.record(lab, names) if opts.subset else {}
    assert rec["scenarios_run"] == 9 and rec["scenarios_in_lab"] == 76 and rec["findings_not_run"] == cov.not_run


def test_rcvbuf_paper_subset_fits_in_30_minutes():
    lab = load_lab(LABS / "rcvbuf")
    opts = RunOptions.with_subset(lab, "paper")
    selected = select_scenarios(lab, opts.scenarios)
    est = estimate(lab, selected, lambda sc: repetitions(lab, opts, sc), quick=False)
    # 3 x (4 Fig 4 + 3 Fig 7 scenarios of 60 s + 2 checksum scenarios of 10 s)
    assert est.traffic_seconds == 3 * (7 * 60 + 2 * 10) and est.repetitions == 27
    assert est.overhead_source == "default" and est.wall_seconds < 30 * 60
    assert traffic_seconds(selected[0].body, quick=True) == 5.0


def test_rcvbuf_trace_subset_judges_its_findings_whole_in_under_25_minutes():
    """campaigns/rcvbuf-trace.yml runs this subset: the trace variants and the constant-rate
    scenarios their findings compare them with, each replaying its traces from the flow's start."""
    lab = load_lab(LABS / "rcvbuf")
    opts = RunOptions.with_subset(lab, "trace")
    selected = select_scenarios(lab, opts.scenarios)
    names = [s.name for s in selected]
    assert names == ["emu1-mptcp-rmem1m", "fig7-mptcp", "trace-emu1-mptcp-rmem1m", "trace-fig7-mptcp"]
    assert lab.published is not None
    cov = finding_coverage(lab.published, names)
    trace_findings = {f.id for f in lab.published.findings if f.id.startswith("trace-")}
    assert trace_findings == {"trace-fig4-1m-keeps-utilisation", "trace-fig7-longer-tail"}
    assert not trace_findings & set(cov.not_run + cov.partly_run)
    est = estimate(lab, selected, lambda sc: repetitions(lab, opts, sc), quick=False)
    assert est.repetitions == 20 and est.wall_seconds < 25 * 60
    for sc in selected[2:]:
        wifi, g3 = sc.body.links["rw:eth2"].egress, sc.body.links["r3:eth2"].egress
        assert wifi is not None and wifi.trace == "verizon-lte-down-60s"
        assert g3 is not None and g3.trace == "tmobile-umts-down-60s"
        restarts = {e.link for e in sc.body.traffic.events if e.action == "link_change"}
        assert restarts == {"rw:eth2", "r3:eth2"}


def test_estimate_takes_the_labs_latest_complete_run(tmp_path):
    run = tmp_path / "rcvbuf" / "20261123T000000Z-abcd"
    run.mkdir(parents=True)
    (tmp_path / "rcvbuf" / "latest").symlink_to(run.name)
    manifest = {"lab": "rcvbuf", "complete": True, "repetitions": 3, "scenarios": ["a", "b"],
                "wall_seconds": 660.0, "traffic_seconds": 600.0}
    (run / "manifest.json").write_text(json.dumps(manifest))
    seconds, source = measured_overhead(tmp_path, "rcvbuf") or (None, None)
    assert seconds == pytest.approx(10.0) and source == str(run.resolve())
    (run / "manifest.json").write_text(json.dumps({**manifest, "complete": False}))
    assert measured_overhead(tmp_path, "rcvbuf") is None
    assert measured_overhead(tmp_path, "mtu") is None
    assert DEFAULT_OVERHEAD_S > 0


def test_report_says_a_subset_ran_and_what_it_cannot_judge():
    summary = as_summary({"lab": "rcvbuf", "run_id": "x", "complete": True, "quick": False, "records": [],
                          "aggregates": [], "findings": []})
    m = Manifest.model_validate({"subset": {"name": "paper", "scenarios": ["fig7-*"], "repetitions": 3,
                                            "scenarios_run": 3, "scenarios_in_lab": 74,
                                            "findings_not_run": ["p6c-symmetric-links"],
                                            "findings_partly_run": ["p4.4-m12-matches-best-path"]}})
    text = "\n".join(_header(summary, m))
    assert "| subset | `paper` (3 of 74 scenarios): fig7-* |" in text
    assert "Subset `paper` of the lab" in text and "p6c-symmetric-links" in text
    assert "p4.4-m12-matches-best-path" in text
    assert "Subset" not in "\n".join(_header(summary, Manifest()))


def test_flows_that_end_by_count_make_the_estimate_an_upper_bound_until_a_run_says(tmp_path):
    lab = load_lab(LABS / "setup")
    opts = RunOptions(quick=False)
    selected = select_scenarios(lab, opts.scenarios)
    est = estimate(lab, selected, lambda sc: 3, quick=False, results_root=tmp_path)
    # 20,000 connections take 40-120 s here; the churn's 600 s is its limit
    assert est.by_count == ("churn",) and est.traffic_source is None
    assert est.traffic_seconds == 18 * 600 and "at most" in est.line() and "upper bound" in est.line()
    # a complete full run of the lab says how long its repetitions' traffic took
    run = tmp_path / "setup" / "20261124T000000Z-abcd"
    run.mkdir(parents=True)
    (tmp_path / "setup" / "latest").symlink_to(run.name)
    manifest = {"lab": "setup", "complete": True, "repetitions": 3, "scenarios": ["a", "b"],
                "wall_seconds": 600.0, "traffic_seconds": 480.0, "quick": False}
    (run / "manifest.json").write_text(json.dumps(manifest))
    est = estimate(lab, selected, lambda sc: 3, quick=False, results_root=tmp_path)
    assert est.traffic_seconds == pytest.approx(18 * 80) and est.traffic_source == str(run.resolve())
    assert "at most" not in est.line() and "as long as they took in" in est.line()
    # a quick run says nothing of a full one
    (run / "manifest.json").write_text(json.dumps({**manifest, "quick": True}))
    assert estimate(lab, selected, lambda sc: 3, quick=False, results_root=tmp_path).traffic_source is None
    # a lab whose flows run for their duration is not affected
    mtu = load_lab(LABS / "mtu")
    assert estimate(mtu, select_scenarios(mtu, None), lambda sc: 1, quick=False).by_count == ()
