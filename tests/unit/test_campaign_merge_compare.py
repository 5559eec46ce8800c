"""Merge of two targets' results and the compare report, from synthetic but model-valid
result directories."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mptcplab.campaign.compare import verdict_cells
from mptcplab.campaign.merge import merge
from mptcplab.cli import main
from mptcplab.lab.loader import load_lab
from mptcplab.record import store
from mptcplab.record.model import MptcpVerdict, Repetition, Subflow, load_manifest
from mptcplab.results.read import load_summary
from mptcplab.results.summary import build_summary_model

REPO = Path(__file__).resolve().parents[2]
MTU = REPO / "labs" / "mtu"


def rep(name: str, rep_no: int, goodput: float, seg_b: float, share_b: float = 1.0) -> Repetition:
    return Repetition(name=name, rep=rep_no, goodput_mbps=goodput, calibration_ok=True,
                      mptcp=MptcpVerdict(requested=False),
                      subflows=[Subflow(path="B", share=share_b, median_seg=seg_b, max_seg=int(seg_b),
                                        established=True, icmp_frag_needed=1, icmp_mtus=[1500])])


def write_run(results_root: Path, run_id: str, reps: list[Repetition], kernel: str, hostname: str,
              complete: bool = True, patches: list[str] | None = None) -> Path:
    d = results_root / "mtu" / run_id
    d.mkdir(parents=True)
    pub = load_lab(MTU).published
    s = build_summary_model("mtu", run_id, kernel, complete, True, reps, pub, [], {"emulated": False}, [],
                            repetitions_per_scenario=1, kernel_patches=patches)
    store.write_json(d / "summary.json", s.to_json())
    extra = {} if patches is None else {"kernel_patches": [{"name": p, "present": True} for p in patches]}
    store.write_json(d / "manifest.json", {"lab": "mtu", "run_id": run_id, "complete": complete, "kernel": kernel,
                                           "hostname": hostname, "cpu_count": 2, "os_release": "Debian 12",
                                           "tools": {"iperf3": "iperf 3.12"}, "wall_seconds": 9.5, **extra})
    return d


def write_campaign(out: Path, items: list[dict[str, Any]], targets: dict[str, Any] | None = None) -> None:
    """items: target, round, kernel, host, goodput, seg (tcp-b), complete, patches."""
    targets = targets or {i["target"]: {"kind": "local", "host": None, "description": None} for i in items}
    recs = {}
    for n, i in enumerate(items):
        iid = f"mtu__{i['target']}__r{i['round']}__0000000{n}"
        recs[iid] = {"target": i["target"], "kind": "local", "host": None, "lab": "mtu", "lab_dir": str(MTU),
                     "round": i["round"], "scenarios": ["tcp-b"], "run": {}}
        write_run(out / "items" / iid / "results", f"20261123T0000{n:02d}Z-abcd",
                  [rep("tcp-b", 1, i["goodput"], i["seg"])], i["kernel"], i["host"], i.get("complete", True),
                  i.get("patches"))
    (out / "campaign.json").write_text(json.dumps({"name": "synthetic", "seed": 1, "shuffle": True,
                                                   "targets": targets, "order": list(recs), "items": recs}))

ITEMS = [
    # target k61: segments fit the 1500 bottleneck (the finding holds); k618: they do not
    {"target": "k61", "round": 1, "kernel": "6.1.0-28", "host": "vm1", "goodput": 90.0, "seg": 1448},
    {"target": "k61", "round": 2, "kernel": "6.1.0-28", "host": "vm1", "goodput": 94.0, "seg": 1448},
    {"target": "k61", "round": 3, "kernel": "6.1.0-28", "host": "vm1", "goodput": 80.0, "seg": 1448},
    {"target": "k618", "round": 1, "kernel": "6.18.0", "host": "here", "goodput": 50.0, "seg": 8948},
    {"target": "k618", "round": 2, "kernel": "6.18.0", "host": "here", "goodput": 60.0, "seg": 8948},
    # killed: its incomplete run is kept on disk but is not a result
    {"target": "k618", "round": 3, "kernel": "6.18.0", "host": "here", "goodput": 999.0, "seg": 8948,
     "complete": False},
]


@pytest.fixture
def campaign(tmp_path: Path) -> Path:
    out = tmp_path / "camp"
    write_campaign(out, ITEMS)
    return out


def test_merge_two_targets(campaign: Path) -> None:
    cols = merge(campaign)
    assert [(c.lab, c.target) for c in cols] == [("mtu", "k61"), ("mtu", "k618")]
    k61, k618 = cols
    assert [r.rep for r in k61.summary.scenarios] == [1, 2, 3]
    assert [r.goodput_mbps for r in k618.summary.scenarios] == [50.0, 60.0], "the incomplete run is no result"
    assert k61.summary.aggregates[0].n == 3 and k61.summary.aggregates[0].goodput_mean == pytest.approx(88.0)
    assert k61.fingerprint["kernels"] == ["6.1.0-28"] and k618.fingerprint["hostnames"] == ["here"]
    assert len(k618.fingerprint["runs"]) == 2
    verdict = {c.target: next(f.verdict for f in c.summary.findings if f.id == "tcp-segments-fit-bottleneck")
               for c in cols}
    assert verdict == {"k61": "holds", "k618": "does not hold"}
    # written through the model and readable by it
    s = load_summary(campaign / "merged" / "mtu" / "k618")
    assert s.complete and len(s.scenarios) == 2 and s.kernel == "6.18.0"
    fp = json.loads((campaign / "merged" / "mtu" / "k618" / "fingerprint.json").read_text())
    assert fp["target"] == "k618" and fp["tools"] == {"iperf3": "iperf 3.12"}
    for r in s.scenarios:  # every merged repetition points at its measured files
        assert Path(r.dir or "").is_relative_to(campaign / "items")


def test_a_campaign_named_by_a_relative_path_merges_into_dirs_that_resolve(
        campaign: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`mptcplab compare results/campaigns/X` from the checkout: each merged repetition's
    directory must still lead to its files when read from the merged column's directory
    (a relative one would be taken relative to the column and lead nowhere)."""
    monkeypatch.chdir(campaign.parent)
    merge(Path(campaign.name))
    s = load_summary(Path(campaign.name) / "merged" / "mtu" / "k61")
    for r in s.scenarios:
        assert Path(r.dir or "").is_absolute(), r.dir
        d = r.files_dir()
        assert d is not None and (d.parent.parent.parent / "summary.json").is_file(), d


def test_compare_highlights_the_changing_verdict(campaign: Path, tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    assert main(["compare", str(campaign), "--out", str(out)]) == 0
    md = (out / "compare.md").read_text()
    assert (out / "compare-mtu-goodput.png").stat().st_size > 1000
    head, _, body = md.partition("## lab mtu")
    assert "finding `tcp-segments-fit-bottleneck`" in head
    row = next(line for line in body.splitlines() if "tcp-segments-fit-bottleneck |" in line)
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells == ["⚠ tcp-segments-fit-bottleneck", "holds", "**does not hold** ⚠", "**changes**"]
    # a verdict the same in both columns is not highlighted
    same = next(line for line in body.splitlines() if line.startswith("| tcp-pmtud-icmp-frag-needed |"))
    assert "⚠" not in same and "**" not in same
    # goodput: median [min–max] (n) per column, beside the paper's 1070
    gp = next(line for line in body.splitlines() if line.startswith("| tcp-b | 1070"))
    assert "90 [80–94] (n=3)" in gp and "55 [50–60] (n=2)" in gp
    # per path: share and median segment, the paper's 1024 beside them
    seg = next(line for line in body.splitlines() if line.startswith("| tcp-b | B | median segment"))
    assert "1024" in seg and "1448" in seg and "8948" in seg
    assert "6.1.0-28" in body and "6.18.0" in body


def test_compare_run_directories_as_columns(tmp_path: Path) -> None:
    a = write_run(tmp_path / "ra", "20261123T000000Z-aaaa", [rep("tcp-b", 1, 90.0, 1448)], "6.1.0", "vm1")
    b = write_run(tmp_path / "rb", "20261123T000000Z-bbbb", [rep("tcp-b", 1, 91.0, 8948)], "6.18.0", "here")
    out = tmp_path / "cmp"
    assert main(["compare", str(a), str(b), "--out", str(out), "--no-figures"]) == 0
    md = (out / "compare.md").read_text()
    assert "vm1 6.1.0" in md and "here 6.18.0" in md
    assert "**does not hold** ⚠" in md and not list(out.glob("*.png"))


def test_compare_refuses_what_is_not_a_result(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inc = write_run(tmp_path / "r", "20261123T000000Z-cccc", [rep("tcp-b", 1, 90.0, 1448)], "6.1.0", "vm1",
                    complete=False)
    for p in (inc, tmp_path / "nothing", tmp_path):
        assert main(["compare", str(p), "--out", str(tmp_path / "cmp")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "RUN_OR_CAMPAIGN" in err


@pytest.mark.parametrize("verdicts, cells, changed", [
    (["holds", "holds"], ["holds", "holds"], False),
    (["holds", "not measurable", "does not hold"], ["holds", "not measurable", "**does not hold** ⚠"], True),
    (["inconclusive", "does not hold", "does not hold", "holds"],
     ["inconclusive", "does not hold", "does not hold", "**holds** ⚠"], True),
    (["holds", "inconclusive", "holds"], ["holds", "inconclusive", "holds"], False),
    (["not run", "holds"], ["not run", "holds"], False),
])
def test_verdict_cells(verdicts: list[str], cells: list[str], changed: bool) -> None:
    assert verdict_cells(verdicts) == (cells, changed)


def test_a_cell_shows_its_interval_and_changes_as_its_verdict() -> None:
    shown = ["does not hold (4.9 [4.3, 5.4] 94%)", "does not hold", "holds (9 [8.6, 9.3] 94%)"]
    assert verdict_cells(["does not hold", "does not hold", "holds"], shown) == (
        ["does not hold (4.9 [4.3, 5.4] 94%)", "does not hold", "**holds (9 [8.6, 9.3] 94%)** ⚠"], True)


def test_qemu_targets_kernel_and_patches_in_the_comparison(tmp_path: Path) -> None:
    out = tmp_path / "camp"
    targets = {"k6.1-stock": {"kind": "qemu", "host": None, "description": None,
                              "debs": "/var/cache/k61", "release": "6.1.0-56-amd64"},
               "k6.1-patched": {"kind": "qemu", "host": None, "description": None,
                                "debs": "/srv/debs", "release": "6.1.192-mptcplab"}}
    write_campaign(out, [
        {"target": "k6.1-stock", "round": 1, "kernel": "6.1.0-56-amd64", "host": "qemu-run", "goodput": 50.0,
         "seg": 1448, "patches": []},
        # the packages say one release, the run ran on another: a note
        {"target": "k6.1-patched", "round": 1, "kernel": "6.1.192-other", "host": "qemu-run", "goodput": 52.0,
         "seg": 1448, "patches": ["mptcp-pmtu-probing"]},
    ], targets)
    cols = {c.target: c for c in merge(out)}
    stock, patched = cols["k6.1-stock"], cols["k6.1-patched"]
    assert stock.fingerprint["release"] == "6.1.0-56-amd64" and stock.fingerprint["debs"] == "/var/cache/k61"
    assert stock.summary.kernel_patches == [] and patched.summary.kernel_patches == ["mptcp-pmtu-probing"]
    assert any("are release 6.1.192-mptcplab, but its runs ran on 6.1.192-other" in n for n in patched.notes)
    assert not stock.notes
    # the probing-fix findings: not measurable on the stock kernel, judged on the patched one
    fix = {c: next(f for f in cols[c].summary.findings if f.id == "probing-fix-both-subflows-used")
           for c in cols}
    assert "this kernel is 6.1.0-56-amd64, without it" in fix["k6.1-stock"].evidence
    assert "blackhole-probing-0 not run" in fix["k6.1-patched"].evidence  # judged: its scenario is missing
    assert main(["compare", str(out), "--out", str(tmp_path / "cmp"), "--no-figures"]) == 0
    md = (tmp_path / "cmp" / "compare.md").read_text()
    row = next(line for line in md.splitlines() if line.startswith("| k6.1-patched"))
    assert "| qemu |" in row and "6.1.192-other (+mptcp-pmtu-probing)" in row
    row = next(line for line in md.splitlines() if line.startswith("| k6.1-stock"))
    assert "| 6.1.0-56-amd64 |" in row


def test_the_merged_column_reads_as_one_run(campaign: Path) -> None:
    """merged/<lab>/<target>/ has a manifest too: the report and the notebooks read the
    merged column as a run of as many repetitions as rounds."""
    checks = [{"link": "a-b", "configured": {"rate": "10mbit"}, "checks": [], "ok": True}]
    for d in sorted(campaign.glob("items/mtu__k61__*/results/mtu/2*")):
        m = json.loads((d / "manifest.json").read_text())
        m["calibration"] = {"tcp-b": {"rep1": checks}}
        m["started"], m["finished"] = f"start-{d.name}", f"end-{d.name}"
        (d / "manifest.json").write_text(json.dumps(m))
    merge(campaign)
    col = campaign / "merged" / "mtu" / "k61"
    m = load_manifest(col)
    assert m.present and m.complete and m.repetitions == 3 and m.run_id == "campaign:synthetic:k61"
    assert m.wall_seconds == pytest.approx(3 * 9.5)
    assert sorted(m.calibration["tcp-b"]) == ["rep1", "rep2", "rep3"], "numbered by round, as the summary's reps"
    assert m.started == "start-20261123T000000Z-abcd" and m.finished == "end-20261123T000002Z-abcd"
    assert [x["round"] for x in (m.model_extra or {})["merged_from"]] == [1, 2, 3]
    assert main(["report", str(col)]) == 0
    report = (col / "report.md").read_text()
    assert "campaign:synthetic:k61" in report and "has no manifest.json" not in report


POOL_ITEMS = [
    # one pool target whose rounds landed on two hosts that differ: m1's segments fit the 1500
    # bottleneck (the finding holds), m2's do not; merged as one column the difference is averaged
    {"target": "pool", "round": 1, "kernel": "6.18.0", "host": "m1", "goodput": 90.0, "seg": 1448},
    {"target": "pool", "round": 2, "kernel": "6.18.0", "host": "m2", "goodput": 50.0, "seg": 8948},
    {"target": "pool", "round": 3, "kernel": "6.18.0", "host": "m1", "goodput": 92.0, "seg": 1448},
    {"target": "pool", "round": 4, "kernel": "6.18.0", "host": "m2", "goodput": 52.0, "seg": 8948},
]


def _pool_campaign(out: Path, item_json: bool = True) -> None:
    write_campaign(out, POOL_ITEMS, {"pool": {"kind": "ansible", "host": "pool", "pool": ["m1", "m2"]}})
    for n, i in enumerate(POOL_ITEMS):
        d = out / "items" / f"mtu__pool__r{i['round']}__0000000{n}"
        if item_json:  # the inventory host, which need not be the machine's host name
            (d / "item.json").write_text(json.dumps({"host": f"inv-{i['host']}"}))


@pytest.mark.parametrize("item_json", [True, False])
def test_merge_by_host_splits_a_pool_target_per_host(tmp_path: Path, item_json: bool) -> None:
    out = tmp_path / "camp"
    _pool_campaign(out, item_json)
    (whole,) = merge(out)
    assert [r.rep for r in whole.summary.scenarios] == [1, 2, 3, 4]
    hosts = [r["host"] for r in whole.fingerprint["runs"]]
    pre = "inv-" if item_json else ""
    assert hosts == [f"{pre}m1", f"{pre}m2", f"{pre}m1", f"{pre}m2"]

    cols = merge(out, by_host=True)
    assert [c.target for c in cols] == [f"pool @ {pre}m1", f"pool @ {pre}m2"]
    m1, m2 = cols
    assert [r.rep for r in m1.summary.scenarios] == [1, 3] and [r.rep for r in m2.summary.scenarios] == [2, 4]
    assert m1.summary.aggregates[0].goodput_mean == pytest.approx(91.0)
    assert m2.summary.aggregates[0].goodput_mean == pytest.approx(51.0)
    # each host's column is judged on its own rounds: two planned, two measured
    assert m1.summary.invalid_reasons == [] and m1.fingerprint["host"] == f"{pre}m1"
    verdict = [next(f.verdict for f in c.summary.findings if f.id == "tcp-segments-fit-bottleneck") for c in cols]
    assert verdict == ["holds", "does not hold"]
    # the split is a view: the campaign's merged column stays the one of all its rounds
    assert sorted(p.name for p in (out / "merged" / "mtu").iterdir()) == ["pool"]


def test_compare_by_host_shows_the_host_effect(tmp_path: Path) -> None:
    out = tmp_path / "camp"
    _pool_campaign(out)
    cmp = tmp_path / "cmp"
    assert main(["compare", str(out), "--by", "host", "--out", str(cmp), "--no-figures"]) == 0
    md = (cmp / "compare.md").read_text()
    assert "Split by host" in md and "finding `tcp-segments-fit-bottleneck`" in md.partition("## lab mtu")[0]
    body = md.partition("## lab mtu")[2]
    gp = next(line for line in body.splitlines() if line.startswith("| tcp-b | 1070"))
    assert "91 [90–92] (n=2)" in gp and "51 [50–52] (n=2)" in gp
    # the column table: the inventory host in the label, the machine's host name beside it
    row = next(line for line in body.splitlines() if line.startswith("| pool @ inv-m2"))
    assert "| ansible | m2 |" in row, row
    # without --by: one column of all four rounds
    assert main(["compare", str(out), "--out", str(tmp_path / "one"), "--no-figures"]) == 0
    one = (tmp_path / "one" / "compare.md").read_text()
    assert "(n=4)" in one and "@" not in one.partition("## lab mtu")[2]
