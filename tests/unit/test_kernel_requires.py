"""Findings that need a kernel (published.yml ``requires``): the kernel facts a run records
(kernelreq.detect), release ranges, and the verdict: judged on a kernel that has what the
finding needs, "not measurable here" with this kernel named on one that has not."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from mptcplab.kernelreq import detect, in_range, parse_range, release_version
from mptcplab.lab.loader import load_lab
from mptcplab.lab.schema import Finding, Published
from mptcplab.record.model import Manifest
from mptcplab.results.findings import KernelFacts, evaluate, findings_table
from mptcplab.results.summary import build_summary_model, repetitions

REPO = Path(__file__).resolve().parents[2]
PATCHED = KernelFacts("6.1.192-mptcplab", frozenset({"mptcp-pmtu-probing"}))
STOCK = KernelFacts("6.1.0-56-amd64", frozenset())
LOG_LINE = "mptcplab: subflow 10.0.2.1:40001 -> 10.0.9.2:5201 mtup enabled=1 search_low=1076 search_high=9000"


def test_release_versions_and_ranges() -> None:
    assert release_version("6.1.0-56-amd64") == (6, 1, 0)
    assert release_version("6.12.117+deb12-amd64") == (6, 12, 117)
    assert release_version("6.18") == (6, 18, 0)
    assert release_version("vmlinuz") is None
    assert in_range("6.1.0-56-amd64", ">=6.1") is True
    assert in_range("6.12.117+deb12-amd64", ">=6.1,<6.7") is False
    assert in_range("6.1.192-mptcplab", "==6.1") is True  # as many components as given
    assert in_range("6.10.0", "==6.1") is False
    assert in_range("weird", ">=6.1") is None
    assert parse_range(" >= 6.1 , < 6.7") == [(">=", (6, 1)), ("<", (6, 7))]
    with pytest.raises(ValueError, match="'~6.1'"):
        parse_range(">=6.1,~6.1")


@pytest.mark.parametrize("release, log, present, words", [
    ("6.1.0-56-amd64", "[    1.0] random line\n", False, "ends in -mptcplab, and the kernel log has no line"),
    ("6.1.0-56-amd64", None, False, "kernel log could not be read"),
    ("6.1.192-mptcplab", "", True, "ends in -mptcplab"),
    ("6.1.192-mptcplab", f"[ 12.3] {LOG_LINE}\n", True, "the kernel log has the patch's line"),
    ("6.1.192-custom", f"[ 12.3] {LOG_LINE}\n", True, "mtup enabled=1"),  # patched under another name
])
def test_detect_reads_release_and_kernel_log(release: str, log: str | None, present: bool, words: str) -> None:
    [p] = detect(release, log)
    assert p["name"] == "mptcp-pmtu-probing" and p["present"] is present and words in p["evidence"]
    m = Manifest.model_validate({"kernel": release, "kernel_patches": [p]})
    assert m.kernel_patches is not None and m.kernel_patches[0].present is present
    assert Manifest.model_validate({"kernel": release}).kernel_patches is None  # an older run: not recorded


def finding(requires: dict[str, Any], **kw: Any) -> Finding:
    return Finding.model_validate({"id": "f", "scenario": "bh0", "statement": "s", "where": "w",
                                   "requires": requires,
                                   "expect": {"metric": "subflow_share", "path": "B", "op": ">", "value": 0}, **kw})


def reps(share_b: float) -> dict[str, list[Any]]:
    rec = {"name": "bh0", "rep": 1, "goodput_mbps": 50.0,
           "subflows": [{"path": "A", "share": 1 - share_b, "median_seg": 8893},
                        {"path": "B", "share": share_b, "median_seg": 1399 if share_b else None}]}
    # five repetitions: enough for a 90 % interval of the median, so the verdict is decided
    return {"bh0": repetitions([{**rec, "rep": k} for k in range(1, 6)])}


def test_patch_finding_is_judged_only_on_the_patched_kernel() -> None:
    f = finding({"kernel_patch": "mptcp-pmtu-probing"})
    # unpatched: B idle would be "does not hold"; it is not measurable here instead
    row = evaluate(f, reps(0.0), kernel=STOCK)
    assert row.verdict == "not measurable"
    assert row.evidence.startswith("not measurable here: needs the patched kernel (mptcp-pmtu-probing")
    assert row.evidence.endswith("this kernel is 6.1.0-56-amd64, without it")
    row = evaluate(f, reps(0.5), kernel=PATCHED)
    assert row.holds is True
    assert row.evidence.startswith(
        "on 6.1.192-mptcplab (mptcp-pmtu-probing): median of subflow_share of path B in bh0 = 0.5")
    assert evaluate(f, reps(0.0), kernel=PATCHED).holds is False  # judged: the fix did not help
    # a run that did not record its patches cannot tell
    for k in (None, KernelFacts("6.1.0-56-amd64", None)):
        row = evaluate(f, reps(0.5), kernel=k)
        assert row.verdict == "not measurable" and "carries it is not recorded" in row.evidence


def test_release_range_finding() -> None:
    f = finding({"kernel": ">=6.6"})
    row = evaluate(f, reps(0.5), kernel=STOCK)
    assert row.verdict == "not measurable"
    assert row.evidence == "not measurable here: needs a kernel >=6.6; this kernel is 6.1.0-56-amd64"
    assert evaluate(f, reps(0.5), kernel=KernelFacts("6.12.117+deb12-amd64", None)).holds is True
    assert "not a version" in evaluate(f, reps(0.5), kernel=KernelFacts("custom", None)).evidence
    both = finding({"kernel": ">=6.1", "kernel_patch": "mptcp-pmtu-probing"})
    assert evaluate(both, reps(0.5), kernel=PATCHED).holds is True
    assert evaluate(both, reps(0.5), kernel=KernelFacts("5.4.230-mptcplab", frozenset({"mptcp-pmtu-probing"}))
                    ).verdict == "not measurable"


@pytest.mark.parametrize("requires, extra, words", [
    ({"kernel_patch": "nope"}, {}, "no kernel patch 'nope' (known: mptcp-pmtu-probing)"),
    ({"kernel": "6.1"}, {}, "a comparison"),
    ({}, {}, "kernel_patch, kernel, kallsyms or kallsyms_absent"),
    ({"kernel": ">=6.1", "colour": "red"}, {}, "Extra inputs"),
])
def test_bad_requires_is_refused(requires: dict[str, Any], extra: dict[str, Any], words: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(words)):
        finding(requires, **extra)
    with pytest.raises(ValidationError, match="requires goes with expect"):
        Finding.model_validate({"id": "f", "scenario": None, "statement": "s", "where": "w",
                                "requires": {"kernel": ">=6.1"}, "not_measurable": "x"})


def test_mtu_probing_fix_findings_on_stock_and_patched_kernels() -> None:
    pub = load_lab(REPO / "labs" / "mtu").published
    assert isinstance(pub, Published)
    ids = ("probing-fix-both-subflows-used", "probing-fix-1024-segments")
    recs = [{"name": "blackhole-probing-0", "rep": k, "goodput_mbps": 60.0,
             "subflows": [{"path": "A", "share": 0.49, "median_seg": 8893},
                          {"path": "B", "share": 0.51, "median_seg": 1399}]} for k in range(1, 6)]
    for kernel, verdicts in ((STOCK, ["not measurable", "not measurable"]), (PATCHED, ["holds", "does not hold"])):
        s = build_summary_model("mtu", "r", kernel.release or "", True, True, recs, pub, [], {"emulated": True},
                                kernel_patches=sorted(kernel.patches or ()))
        rows = {r.id: r for r in s.findings}
        assert [rows[i].verdict for i in ids] == verdicts, [rows[i].evidence for i in ids]
        assert s.kernel_patches == sorted(kernel.patches or ())
    stock = {r.id: r for r in findings_table(pub, repetitions(recs), kernel=STOCK)}
    assert "this kernel is 6.1.0-56-amd64, without it" in stock["probing-fix-both-subflows-used"].evidence
