"""Rendering of report.md, figures and the terminal table from a hand-made run directory.

The run directory below is invented for the test: it exercises the report's layout (values
appear where given, warnings are loud, absent values show as a dash, PNGs are real), it is
not a measurement of anything.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from mptcplab.lab.schema import Published
from mptcplab.record.model import ICMP_COLUMNS, TIMESERIES_COLUMNS, Summary, load_manifest
from mptcplab.results import figures as F
from mptcplab.results.fmt import DASH
from mptcplab.results.policy import collect_warnings
from mptcplab.results.read import load_icmp, load_summary, load_timeseries
from mptcplab.results.report import print_table, render_report, write_report
from mptcplab.results.summary import build_summary_model
from mptcplab.results.tables import calibration_rows

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _subflow(path: str, src: str, sport: int, *, initial: bool, bytes_: int, share: float,
             median: int | None, max_: int | None, icmp: int = 0,
             established: bool = True) -> dict[str, Any]:
    return {"path": path, "src": src, "sport": sport, "dst": "10.0.9.2", "dport": 5201,
            "initial": initial, "established": established, "bytes": bytes_, "share": share,
            "median_seg": median, "max_seg": max_, "icmp_frag_needed": icmp,
            "retransmissions": 0}


def _scenario(name: str, rep: int, goodput: float, subflows: list[dict[str, Any]], *,
              mptcp: bool, verified: bool = True, fallback: bool = False,
              warnings: list[str] | None = None, calibration_ok: bool = True) -> dict[str, Any]:
    return {"name": name, "rep": rep, "dir": f"scenarios/{name}/rep{rep}",
            "goodput_mbps": goodput, "duration_s": 2.0,
            "mptcp": {"requested": mptcp, "negotiated": mptcp and not fallback,
                      "verified": mptcp and verified and not fallback,
                      "subflows": len(subflows), "fallback": fallback},
            "subflows": subflows, "warnings": warnings or [], "calibration_ok": calibration_ok}


TCG_REASON = ("software-emulated CPU (QEMU without KVM, systemd-detect-virt: qemu): throughput, RTT and "
              "timing numbers are not measurements of the kernel; the run checks plumbing, MPTCP "
              "negotiation and subflows")


KVM = {"virtualization": "kvm", "software_emulated_cpu": False, "source": "systemd-detect-virt"}

# The paper side of the fixture, as a lab's published.yml gives it.
PUB = Published.model_validate({
    "source": {"id": "paper2025", "title": "A Test Paper", "authors": ["a"], "year": 2025, "document": "d",
               "kernel": "Linux 5.4.230, MPTCP v0.96", "testbed": "t"},
    "values": [
        {"id": "seg-a-paper", "scenario": "mptcp-bottleneck", "metric": "median_seg", "path": "A",
         "value": 8928, "unit": "bytes", "where": "Figure 10.13", "note": "a note about conditions"},
        {"id": "base-576-paper", "scenario": "blackhole-base-mss-576", "metric": "goodput_mbps",
         "value": 17.16, "unit": "Mbit/s", "kernel": "5.4.230 patched", "where": "Section 10.7"},
        {"id": "after-fix-paper", "scenario": None, "metric": "goodput_mbps", "value": 56.8,
         "unit": "Mbit/s", "kernel": "5.4.230 + patch", "where": "Section 10.8"},
    ],
    "findings": [
        {"id": "b-idle", "statement": "subflow B | carries nothing", "where": "Fig 10.14",
         "scenario": "mptcp-bottleneck", "expect": {"metric": "subflow_share", "path": "B", "op": "==", "value": 0}},
        {"id": "a-jumbo", "statement": "subflow A uses jumbo segments", "where": "Fig 10.13",
         "scenario": "mptcp-bottleneck", "expect": {"metric": "median_seg", "path": "A", "op": ">", "value": 8000}},
        {"id": "patched", "statement": "needs the patched kernel", "where": "Sec 10.8", "scenario": None},
    ],
})


def make_run_dir(root: Path, *, quick: bool = False, run_kind: str | None = None) -> Path:
    """A small complete-looking run directory with deliberate oddities to render.

    run_kind None leaves it out of summary.json, as in runs written before it existed.
    """
    run = root / "results" / "mtu" / "20990101T000000Z-test"
    A1, B1 = "10.0.1.2", "10.0.2.2"
    scenarios = [
        _scenario("tcp-a", 1, 94.25, [_subflow("A", A1, 40001, initial=True, bytes_=1000,
                                               share=1.0, median=8948, max_=8948)], mptcp=False),
        _scenario("tcp-a", 2, 93.75, [_subflow("A", A1, 40002, initial=True, bytes_=1000,
                                               share=1.0, median=8948, max_=8948)], mptcp=False),
        _scenario("mptcp-bottleneck", 1, 171.5, [
            _subflow("A", A1, 40011, initial=True, bytes_=600, share=0.6, median=8936, max_=8936),
            _subflow("B", B1, 40012, initial=False, bytes_=400, share=0.4, median=1436,
                     max_=1436, icmp=3)], mptcp=True),
        _scenario("mptcp-bottleneck", 2, 97.5, [
            _subflow("A", A1, 40021, initial=True, bytes_=1000, share=1.0, median=8936,
                     max_=8936),
            _subflow("B", B1, 40022, initial=False, bytes_=0, share=0.0, median=None, max_=None,
                     icmp=2)], mptcp=True,
            warnings=["path B: subflow established but carried no data (frag-needed "
                      "received 2x, no retransmission at the smaller size)"]),
        # A fallback the runner did not explain, and a subflow that never formed: the report
        # must say both on its own.
        _scenario("mptcp-reverse", 1, 55.0, [
            _subflow("B", B1, 40031, initial=True, bytes_=500, share=1.0, median=1436,
                     max_=1436),
            _subflow("A", A1, 40032, initial=False, bytes_=0, share=0.0, median=None,
                     max_=None, established=False)], mptcp=True, fallback=True,
            calibration_ok=False),
        _scenario("blackhole-base-mss-576", 1, 12.34, [
            _subflow("A", A1, 40041, initial=True, bytes_=900, share=0.9, median=8936,
                     max_=8936),
            _subflow("B", B1, 40042, initial=False, bytes_=100, share=0.1, median=536,
                     max_=536)], mptcp=True),
    ]
    model = build_summary_model("mtu", run.name, "6.99.0-test", True, quick, scenarios, PUB, [], KVM,
                                repetitions_per_scenario=1 if quick else 2)
    model.run_kind = run_kind
    model.run_kind_reason = (None if run_kind is None else TCG_REASON if run_kind == "functional-check"
                             else "CPU not software-emulated (systemd-detect-virt: kvm)")
    summary = model.to_json()
    # The shape the runner writes (mptcplab/run/lab.py): calibration and sysctls per scenario.
    def check(q: str, conf: float, meas: float, ok: bool) -> dict[str, Any]:
        return {"quantity": q, "configured": conf, "measured": meas, "tolerance": "±10%",
                "ok": ok}

    manifest = {
        "lab": "mtu", "run_id": run.name, "kernel": "6.99.0-test", "cpu_count": 2,
        "started": "2099-01-01T00:00:00Z", "finished": "2099-01-01T00:05:00Z",
        "wall_seconds": 61.5, "traffic_seconds": 12.0,
        "git": {"commit": "abc1234", "dirty": True}, "backend": "netns",
        "link_emulation": "tbf+delayline",
        "calibration": {
            "tcp-a": {"rep1": [{"link": "client:eth1", "configured": {"rate_bps": 100000000},
                                "checks": [check("goodput_mbps", 100, 97.6, True)], "ok": True}]},
            "mptcp-reverse": {"rep1": [{"link": "client:eth2", "configured": {"rate_bps": 10**8},
                                        "checks": [check("goodput_mbps", 100, 61.2, False)],
                                        "ok": False}]},
        },
        "sysctls": {
            "tcp-a": {"client": {"net.ipv4.tcp_mtu_probing": "0", "net.mptcp.enabled": "1"}},
            "blackhole-base-mss-576": {"client": {"net.ipv4.tcp_mtu_probing": "1",
                                                  "net.mptcp.enabled": "1"}},
        },
        "tools": {"iperf3": "iperf 3.12", "tshark": "TShark 4.0.17"},
        "lab_files_sha256": {"experiment.yml": "0123abcd"},
        "command_line": ["mptcplab", "run", "labs/mtu"],
    }
    run.mkdir(parents=True)
    (run / "summary.json").write_text(json.dumps(summary, indent=1))
    (run / "manifest.json").write_text(json.dumps(manifest, indent=1))
    for s in scenarios:
        d = run / s["dir"]
        d.mkdir(parents=True)
        rows = []
        for i in range(20):
            t = round(0.1 * i, 1)
            for sf in s["subflows"]:
                if sf["bytes"]:
                    mbps = 10.0 * sf["share"] * (1 + i % 3)
                    rows.append({"t": t, "path": sf["path"], "subflow": sf["sport"],
                                 "bytes": int(mbps * 1e6 / 8 * 0.1), "mbps": mbps})
        pd.DataFrame(rows, columns=TIMESERIES_COLUMNS).to_csv(d / "timeseries.csv",
                                                                index=False)
        if s["name"] == "mptcp-reverse":
            continue  # icmp.csv deliberately absent: reported as a missing file
        icmp = []
        for sf in s["subflows"]:
            for k in range(sf["icmp_frag_needed"]):
                icmp.append({"t": 0.05 + 0.01 * k, "src": "10.0.12.1", "dst": sf["src"],
                             "type": 3, "code": 4, "mtu": 1500, "quoted_src": sf["src"],
                             "quoted_sport": sf["sport"], "path": sf["path"]})
        pd.DataFrame(icmp, columns=ICMP_COLUMNS).to_csv(d / "icmp.csv", index=False)
    return run


# One run directory and one report for the module: drawing the figures is the slow part.
@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_run_dir(tmp_path_factory.mktemp("run"))


@pytest.fixture(scope="module")
def report(run_dir: Path) -> str:
    path = write_report(run_dir)
    assert path == run_dir / "report.md"
    return path.read_text()


def _section(text: str, title: str) -> str:
    start = text.index(f"## {title}")
    nxt = text.find("\n## ", start + 3)
    return text[start: nxt if nxt != -1 else len(text)]


def _row(section: str, first_cell: str) -> str:
    for line in section.splitlines():
        if line.startswith(f"| {first_cell} |"):
            return line
    raise AssertionError(f"no row starting with {first_cell!r} in:\n{section}")


def test_header_names_run_kernel_backend_and_calibration(report: str) -> None:
    head = report[: report.index("## WARNINGS")]
    for s in ["mtu", "20990101T000000Z-test", "6.99.0-test", "tbf+delayline", "abc1234 (dirty)",
              "Linux 5.4.230, MPTCP v0.96", "A Test Paper", "netns", "61.5 s / 12 s"]:
        assert s in head, s
    assert "Quick mode" not in report
    cal = _section(report, "Link emulation and calibration")
    assert "1 of 2 link checks out of tolerance" in cal
    bad = _row(cal, "mptcp-reverse")
    assert "client:eth2" in bad and "61.2" in bad and "**NO**" in bad
    assert "97.6" in _row(cal, "tcp-a")


def test_run_details_collapse_sysctls(report: str) -> None:
    sec = _section(report, "Run details (from manifest.json)")
    assert "| client | net.mptcp.enabled | 1 | all |" in sec
    assert "| client | net.ipv4.tcp_mtu_probing | 0 | tcp-a |" in sec
    assert "| client | net.ipv4.tcp_mtu_probing | 1 | blackhole-base-mss-576 |" in sec
    assert "TShark 4.0.17" in sec and "0123abcd" in sec and "`mptcplab run labs/mtu`" in sec


def test_calibration_rows_accepts_flat_shapes() -> None:
    flat = calibration_rows([{"link": "l1", "ok": True, "rate": 1.0}])
    assert flat == [{"link": "l1", "ok": True, "rate": 1.0}]
    by_link = calibration_rows({"l1": {"ok": False, "rate": 2.0}})
    assert by_link == [{"link": "l1", "ok": False, "rate": 2.0}]
    assert calibration_rows(None) == []


def test_quick_mode_caveat(tmp_path: Path) -> None:
    text = write_report(make_run_dir(tmp_path, quick=True)).read_text()
    assert "Quick mode" in text and "QUICK" in text


def test_a_report_without_figures_says_how_to_draw_them(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path)
    text = write_report(run_dir, figures=False).read_text()
    assert "Not drawn by this run (`--no-figures`): `mptcplab report RUN_DIR` draws them" in text
    assert "![" not in text and not (run_dir / "figures").exists()


def test_scenario_table_holds_given_values(report: str) -> None:
    sec = _section(report, "Scenarios")
    tcp = _row(sec, "tcp-a")
    assert "94.00 ± 0.35" in tcp and "93.75 – 94.25" in tcp and "| TCP |" in tcp
    assert "1.00 / 8948 / 8948" in tcp
    mb = _row(sec, "mptcp-bottleneck")
    assert "134.50 ± 52.33" in mb and "2/2" in mb
    assert "0.80 / 8936 / 8936" in mb          # path A: mean share, median, max
    assert "0.20 / 1436 / 1436" in mb          # path B: the idle rep has no segment size
    assert "B: 5 (3, 2)" in mb                 # ICMP frag-needed total and per rep
    # No aggregate in the summary for this one: computed from its single rep.
    assert "12.34" in _row(sec, "blackhole-base-mss-576")
    assert "fallback" in _row(sec, "mptcp-reverse")


def test_warnings_are_loud_and_complete(report: str) -> None:
    sec = _section(report, "WARNINGS")
    lines = [ln for ln in sec.splitlines() if ln.startswith("- **WARNING**")]
    text = "\n".join(lines)
    # the runner's own warning, verbatim, with its reason
    assert "`mptcp-bottleneck` rep 2: path B: subflow established but carried no data" in text
    # the ones the runner did not write: fallback, never-formed subflow, calibration
    assert "`mptcp-reverse` rep 1: MPTCP FALLBACK" in text
    assert "SUBFLOW NEVER FORMED on path A (10.0.2.2" not in text  # wrong address would be a bug
    assert "SUBFLOW NEVER FORMED on path A (10.0.1.2:40032" in text
    assert "LINK CALIBRATION FAILED" in text
    assert "MISSING FILE: scenarios/mptcp-reverse/rep1/icmp.csv" in text
    assert "FIGURE NOT DRAWN" not in text
    # the idle path the runner explained is not reported twice
    assert text.count("`mptcp-bottleneck` rep 2") == 1


def test_no_warnings_says_so(tmp_path: Path) -> None:
    run = make_run_dir(tmp_path)
    s = json.loads((run / "summary.json").read_text())
    s["scenarios"] = [x for x in s["scenarios"] if x["name"] == "tcp-a"]
    assert collect_warnings(s) == []


def test_silent_failures_are_named() -> None:
    base: dict[str, Any] = {"lab": "mtu", "run_id": "r", "complete": True, "valid": True}
    # a path the lab expected with no subflow at all in the capture
    s: dict[str, Any] = {**base, "scenarios": [_scenario("mptcp-bottleneck", 1, 90.0, [
        _subflow("A", "10.0.1.2", 1, initial=True, bytes_=1, share=1.0, median=1, max_=1)],
        mptcp=True)]}
    s["scenarios"][0]["mptcp"]["expected_paths"] = ["A", "B"]
    assert any("NO SUBFLOW AT ALL on path B" in w.message and w.code == "no-subflow" and w.path == "B"
               for w in collect_warnings(s))
    # the runner's own fallback wording is not repeated
    s["scenarios"][0]["mptcp"].update(fallback=True, verified=False)
    s["scenarios"][0]["warnings"] = ["MPTCP fell back to TCP during the connection"]
    w = [x.message for x in collect_warnings(s)]
    assert not any("MPTCP FALLBACK" in x for x in w)
    assert any("fell back" in x for x in w)


def test_incomplete_and_invalid_runs_are_flagged() -> None:
    w = [x.message for x in collect_warnings({"lab": "mtu", "run_id": "r", "complete": False, "valid": False,
                          "invalid_reasons": ["iperf3 failed in tcp-b rep 1"], "scenarios": []},
                         manifest={"incomplete_reason": "interrupted by SIGINT"})]
    assert any(x.startswith("RUN INCOMPLETE") and "SIGINT" in x for x in w)
    assert "RUN INVALID: iperf3 failed in tcp-b rep 1" in w


def test_published_table_and_missing_value_dash(report: str) -> None:
    sec = _section(report, "Published vs this run")
    seg = _row(sec, "seg-a-paper")
    assert "8928 bytes" in seg and "Figure 10.13" in seg
    assert "| 8936 (median over reps) | 2 |" in seg  # median_seg's one aggregate, named
    # paper_kernel absent on the entry: the source's kernel is shown
    assert "Linux 5.4.230, MPTCP v0.96" in seg and "6.99.0-test" in seg
    b576 = _row(sec, "base-576-paper")
    assert "17.16 Mbit/s" in b576 and "12.34" in b576 and "5.4.230 patched" in b576
    fix = _row(sec, "after-fix-paper")
    cells = [c.strip() for c in fix.strip("|").split("|")]
    assert cells[1] == DASH                    # no scenario of this lab
    assert cells[3] == "56.8 Mbit/s"
    assert cells[6] == DASH and cells[7] == DASH and cells[8] == DASH  # nothing measured here
    assert "a note about conditions" in sec


def test_findings_table(report: str) -> None:
    sec = _section(report, "Findings of the paper, checked on this run")
    idle = _row(sec, "b-idle")
    # its two repetitions gave 0 and 0.4: too few for an interval; the median 0.2 leans "no"
    assert "median of subflow_share of path B in mptcp-bottleneck = 0.2" in idle
    assert "inconclusive (leans does not hold)" in idle and "too few repetitions for a 90% interval" in idle
    assert "0.2 [0, 0.4] (50%, n = 2)" in idle  # the statistic column: estimate [interval] (coverage, n)
    assert "subflow B \\| carries nothing" in sec   # a pipe in a statement is escaped
    assert "| inconclusive (leans holds) |" in _row(sec, "a-jumbo")
    assert "| not measurable |" in _row(sec, "patched")
    assert "Verdicts: " in sec


def test_figures_are_valid_pngs(run_dir: Path, report: str) -> None:
    names = ["throughput.png", "goodput.png", "subflow_share.png", "segment_sizes.png",
             "icmp.png"]
    for n in names:
        p = run_dir / "figures" / n
        data = p.read_bytes()
        assert data[:8] == PNG_MAGIC, n
        assert len(data) > 5000, n             # an actual drawing, not an empty canvas
        assert f"(figures/{n})" in report


def test_figure_functions_return_figures_from_frames(run_dir: Path) -> None:
    summary = load_summary(run_dir)
    ts = load_timeseries(run_dir, summary)
    icmp = load_icmp(run_dir, summary)
    assert set(ts["scenario"]) >= {"tcp-a", "mptcp-bottleneck"}
    assert ts.attrs["missing"] == []
    assert icmp.attrs["missing"] == ["scenarios/mptcp-reverse/rep1/icmp.csv"]
    tp = F.throughput_by_path(ts, "mptcp-bottleneck")
    assert list(tp.columns) == ["A", "B"]
    # rep 2 sent nothing on B: the mean over both reps is half of rep 1's rate
    rep1 = F.throughput_by_path(ts, "mptcp-bottleneck", mean=False)
    assert tp["B"].iloc[0] == pytest.approx(rep1["B"].iloc[0] / 2)
    for fig in [F.plot_throughput(ts, ["tcp-a"]), F.plot_goodput(summary),
                F.plot_subflow_share(summary), F.plot_segment_sizes(summary, icmp),
                F.plot_icmp(icmp), F.plot_icmp(icmp.iloc[0:0])]:
        assert fig.axes
    assert len(F.frag_needed(icmp)) == 5


def test_print_table(run_dir: Path) -> None:
    out = print_table(load_summary(run_dir))
    lines = out.splitlines()
    assert "6.99.0-test" in lines[0] and "Linux 5.4.230, MPTCP v0.96" in out
    mb = next(ln for ln in lines if ln.startswith("mptcp-bottleneck"))
    assert "134.50 ± 52.33" in mb and "0.80 / 8936" in mb and "0.20 / 1436" in mb
    assert "A median seg 8928" in mb
    assert "goodput 17.16" in next(ln for ln in lines if ln.startswith("blackhole-base-mss-576"))
    tcp = next(ln for ln in lines if ln.startswith("tcp-a"))
    assert tcp.rstrip().endswith(DASH)          # no paper number for this scenario
    assert "FALLBACK" in next(ln for ln in lines if ln.startswith("mptcp-reverse"))
    assert "WARNING(S)" in out


def _rendered(run: Path) -> tuple[Summary, str]:
    """summary and report.md text of a run directory, without drawing the figures."""
    summary = load_summary(run)
    return summary, render_report(summary, load_manifest(run))


def test_functional_check_is_never_presented_as_a_measurement(tmp_path: Path) -> None:
    summary, text = _rendered(make_run_dir(tmp_path, run_kind="functional-check"))
    title, blank, banner = text.splitlines()[:3]
    assert title.startswith("# Lab `mtu`") and blank == ""
    assert banner.startswith(f"> **Functional check, not a measurement**: {TCG_REASON}.")
    assert "| run kind | functional-check |" in text
    assert f"- **WARNING** FUNCTIONAL CHECK, NOT A MEASUREMENT: {TCG_REASON}." in _section(text, "WARNINGS")
    pub = _section(text, "Published vs this run")
    assert "| this run (functional check) |" in pub and "mean ± std" not in pub
    assert "8936 (median over reps)" in _row(pub, "seg-a-paper")  # the numbers are still shown, marked
    assert "no reproduction of the paper's numbers" in pub.split("| after-fix-paper |")[1]
    assert "Functional check: only findings" in _section(text, "Findings of the paper, checked on this run")
    out = print_table(summary).splitlines()
    assert sum("FUNCTIONAL CHECK, NOT A MEASUREMENT" in ln for ln in out) == 1
    assert out[1].startswith("FUNCTIONAL CHECK") or out[2].startswith("FUNCTIONAL CHECK")


@pytest.mark.parametrize("run_kind", ["measurement", None])
def test_measurement_has_no_functional_check_marks(tmp_path: Path, run_kind: str | None) -> None:
    summary, text = _rendered(make_run_dir(tmp_path, run_kind=run_kind))
    assert "functional check" not in text.lower()
    assert "| this run (mean ± std, or the statistic named) |" in _section(text, "Published vs this run")
    assert ("| run kind | measurement |" in text) == (run_kind == "measurement")
    assert "FUNCTIONAL" not in print_table(summary)


def test_missing_summary_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no summary.json"):
        write_report(tmp_path)


def test_notebook_runs_against_fixture(run_dir: Path) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    nb_path = Path(__file__).resolve().parents[2] / "notebooks" / "mtu.ipynb"
    nb = nbformat.read(nb_path, as_version=4)
    # outputs are stripped in the committed file, so the notebook stays diff-friendly
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")
    params = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(params) == 1
    params[0].source += f"\nresults_dir = {str(run_dir)!r}\n"
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": str(nb_path.parent)}})
    client.execute()
    text = json.dumps(nb)
    assert "image/png" in text
    assert "A Test Paper" in text and "17.16" in text


def test_a_coded_link_warning_explains_the_failed_calibration() -> None:
    """The link check's own warning (code link-out-of-tolerance, any wording) says why the
    calibration failed: the policy adds no calibration-failed beside it; without it, it does."""
    base: dict[str, Any] = {"lab": "mtu", "run_id": "r", "complete": True, "valid": False}
    sc = _scenario("tcp-a", 1, 90.0, [_subflow("A", "10.0.1.2", 1, initial=True, bytes_=1, share=1.0,
                                               median=1, max_=1)], mptcp=False,
                   calibration_ok=False)
    codes = [w.code for w in collect_warnings({**base, "scenarios": [sc]})]
    assert codes.count("calibration-failed") == 1
    sc["warnings"] = [{"code": "link-out-of-tolerance", "message": "link x: rtt_min_ms 3 vs 1", "path": None}]
    codes = [w.code for w in collect_warnings({**base, "scenarios": [sc]})]
    assert "calibration-failed" not in codes and "link-out-of-tolerance" in codes
