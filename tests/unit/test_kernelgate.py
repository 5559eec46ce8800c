"""Kernel symbols as a finding's requirement (mptcp_join.sh's ``continue_if
mptcp_lib_kallsyms_has``) and the gate that leaves a case this kernel cannot judge unrun:
/proc/kallsyms read for the names asked, the verdict's reason, the split of labs/selftests'
cases on the kernels of the campaign, and the cross-kernel table's "skip" cell."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from mptcplab.kernelreq import has_symbol, kallsyms, parse_symbol
from mptcplab.lab.loader import load_lab
from mptcplab.lab.schema import Finding
from mptcplab.record.model import FindingRow
from mptcplab.reproductions.cases import cell
from mptcplab.results.findings import KernelFacts, evaluate, unmet
from mptcplab.run.kernelgate import gate, required_symbols

REPO = Path(__file__).resolve().parents[2]

KALLSYMS = """\
ffffffff81000000 T _stext
ffffffff81a00000 T mptcp_pm_subflow_check_next
ffffffff81a00100 t subflow_rebuild_header
ffffffff81a00200 T subflow_rebuild_header
ffffffffc0000000 t helper_x\t[some_module]
"""


def test_kallsyms_reads_the_names_asked_with_every_type_letter(tmp_path: Path) -> None:
    f = tmp_path / "kallsyms"
    f.write_text(KALLSYMS)
    table = kallsyms(["mptcp_pm_subflow_check_next", "subflow_rebuild_header", "helper_x", "absent_y"], str(f))
    assert table == {"mptcp_pm_subflow_check_next": "T", "subflow_rebuild_header": "Tt", "helper_x": "t",
                     "absent_y": None}
    assert kallsyms([], str(f)) == {}
    assert kallsyms(["x"], str(tmp_path / "none")) is None
    assert has_symbol("mptcp_pm_subflow_check_next", table) is True
    assert has_symbol("t mptcp_pm_subflow_check_next", table) is False  # a global symbol, not a local one
    assert has_symbol("T subflow_rebuild_header", table) is True
    assert has_symbol("absent_y", table) is False
    assert has_symbol("never_read", table) is None
    assert parse_symbol("T mptcp_subflow_send_ack") == ("T", "mptcp_subflow_send_ack")
    with pytest.raises(ValueError, match="kernel symbol"):
        parse_symbol("two words here")


def _finding(**requires: object) -> Finding:
    return Finding.model_validate({
        "id": "f", "scenario": "s", "statement": "x", "where": "y", "requires": requires,
        "expect": {"counter": "MPTcpExtMPJoinSynRx", "node": "server", "op": "==", "value": 1}})


def test_a_symbol_requirement_is_judged_from_the_recorded_symbols() -> None:
    with pytest.raises(ValidationError, match="kernel symbol"):
        _finding(kallsyms=["not a symbol"])
    has = _finding(kallsyms=["mptcp_pm_get_endp_laminar_max"])
    lacks = _finding(kallsyms_absent=["T mptcp_subflow_send_ack"])
    k618 = KernelFacts("6.18.44", (), {"mptcp_pm_get_endp_laminar_max": "T", "mptcp_subflow_send_ack": None})
    k612 = KernelFacts("6.12.117+deb12-amd64", (), {"mptcp_pm_get_endp_laminar_max": None,
                                                     "mptcp_subflow_send_ack": "T"})
    assert has.requires is not None and lacks.requires is not None
    assert unmet(has.requires, k618) is None and unmet(lacks.requires, k618) is None
    assert unmet(has.requires, k612) == ("needs the kernel symbol mptcp_pm_get_endp_laminar_max; "
                                         "6.12.117+deb12-amd64 lacks it")
    assert unmet(lacks.requires, k612) == ("needs a kernel without the symbol T mptcp_subflow_send_ack; "
                                           "6.12.117+deb12-amd64 has it")
    assert unmet(has.requires, KernelFacts("6.18.44", ())) is None  # not recorded: judged, and said
    assert "is not recorded (judged without" in evaluate(has, {}, kernel=KernelFacts("6.18.44", ())).evidence
    row = evaluate(has, {}, kernel=k612)
    assert row.verdict == "not measurable" and row.kernel_lacks.startswith("needs the kernel symbol")
    assert evaluate(has, {}, kernel=k618).kernel_lacks == ""
    assert cell(row, left=True) == f"skip: {row.kernel_lacks}"
    assert cell(row) == "n/a"  # measured, not judged (a reason over 80 characters is left to the report)
    assert cell(FindingRow(id="g", verdict="holds")) == "pass"


def test_the_selftests_cases_a_kernel_lacks_are_left_unrun() -> None:
    lab = load_lab(REPO / "labs" / "selftests")
    names = required_symbols(lab)
    assert {"mptcp_pm_get_endp_laminar_max", "mptcp_pm_subflow_check_next", "subflow_rebuild_header",
            "mptcp_subflow_send_ack", "mptcp_pm_get_endp_fullmesh_max"} <= set(names)
    new = KernelFacts("6.18.44", (), {"mptcp_pm_get_endp_laminar_max": "T", "mptcp_pm_subflow_check_next": "T",
                                      "subflow_rebuild_header": "t", "mptcp_subflow_send_ack": None,
                                      "mptcp_pm_get_endp_fullmesh_max": None})
    assert gate(lab, list(lab.scenarios), new).left == {}
    old = KernelFacts("6.1.0-56-amd64", (), {**dict.fromkeys(names), "mptcp_subflow_send_ack": "T"})
    g = gate(lab, list(lab.scenarios), old)
    assert set(g.left) == {
        "multi-subflows-with-failing-subflow", "multi-subflows-with-subflow-timeout",
        "multi-subflows-fair-usage-on-close", "fullmesh-test-1x1", "signal-addresses-race-test",
        "without-a-laminar-endpoint", "with-a-laminar-endpoint", "with-multiple-laminar-endpoints",
        "single-laminar-endpoint", "sublow-laminar-endpoints", "single-subflow-backup", "single-address-backup",
        "single-address-switch-to-backup", "single-address-with-port-backup", "mpc-backup", "mpc-switch-to-backup",
        "mpc-switch-to-backup-both-sides", "ipv4-sockets-do-not-use-ipv6-addresses", "simult-ipv4-and-ipv6-subflows",
        "simult-ipv4-and-ipv6-subflows-fullmesh-1x1", "simult-ipv4-and-ipv6-subflows-fullmesh-2x2"}
    assert len(g.run) + len(g.left) == len(lab.scenarios)
    assert g.left["with-a-laminar-endpoint"].endswith("6.1.0-56-amd64 lacks it")
    assert g.left["mpc-backup"] == "needs a kernel without the symbol T mptcp_subflow_send_ack; 6.1.0-56-amd64 has it"
    assert any(line.startswith("not on this kernel, not run: mpc-backup: ") for line in g.lines())


def test_a_dry_run_on_an_older_kernel_says_which_cases_it_leaves(monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    import mptcplab.run.kernelgate as kg
    from mptcplab.cli import main

    lab = load_lab(REPO / "labs" / "selftests")
    old = KernelFacts("6.12.117+deb12-amd64", (), {**dict.fromkeys(required_symbols(lab)),
                                                   "mptcp_pm_subflow_check_next": "T", "subflow_rebuild_header": "t"})
    monkeypatch.setattr(kg, "running_kernel", lambda _lab: old)
    assert main(["run", str(REPO / "labs" / "selftests"), "--dry-run", "--quick",
                 "--scenario", "single-subflow", "--scenario", "with-a-laminar-endpoint"]) == 0
    out = capsys.readouterr().out
    assert "# lab selftests: 1 scenario(s) x 1 repetition(s)" in out
    assert ("# not on this kernel, not run: with-a-laminar-endpoint: needs the kernel symbol "
            "mptcp_pm_get_endp_laminar_max; 6.12.117+deb12-amd64 lacks it") in out
    assert "## scenario single-subflow" in out and "## scenario with-a-laminar-endpoint" not in out
