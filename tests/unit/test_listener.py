"""The userspace path manager's listener (timeline/listener.py) and the node setting that
turns it off (``nodes.<n>.mptcp.listener: false``): which nodes get one, what the dry run
prints, and the one-line refusals where the setting means nothing."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from mptcplab.cli import main
from mptcplab.errors import LabInputError
from mptcplab.lab.loader import load_lab
from mptcplab.timeline.listener import LISTENER_ARGV, listener_cmds, upm_nodes

REPO = Path(__file__).resolve().parents[2]
BASE = REPO / "tests" / "data" / "bad-labs" / "_base"


def lab_with(tmp_path: Path, client: dict[str, Any], server: dict[str, Any] | None = None,
             probes: dict[str, Any] | None = None) -> Path:
    """The bad-lab suite's valid base with these keys merged into the nodes' ``mptcp``."""
    lab = tmp_path / "lab"
    shutil.copytree(BASE, lab)
    exp = yaml.safe_load((lab / "experiment.yml").read_text())
    exp["nodes"]["client"]["mptcp"].update(client)
    exp["nodes"]["server"]["mptcp"].update(server or {})
    if probes is not None:
        exp["probes"] = probes
    (lab / "experiment.yml").write_text(yaml.safe_dump(exp, sort_keys=False))
    return lab


def test_a_userspace_node_gets_a_listener_unless_it_says_not(tmp_path: Path) -> None:
    lab = load_lab(lab_with(tmp_path, {"path_manager": "userspace", "listener": False},
                            {"path_manager": "userspace"}))
    body = lab.scenarios[0].body
    assert upm_nodes(body) == ["server"]
    cmds = listener_cmds(body)
    assert [(c.node, tuple(c.argv)) for c in cmds] == [("server", LISTENER_ARGV)]


def test_the_listener_defaults_to_on(tmp_path: Path) -> None:
    body = load_lab(lab_with(tmp_path, {"path_manager": "userspace"})).scenarios[0].body
    assert body.nodes["client"].mptcp is not None and body.nodes["client"].mptcp.listener is True
    assert upm_nodes(body) == ["client"]


def test_the_userspace_pm_by_sysctl_may_go_without_a_listener(tmp_path: Path) -> None:
    lab = lab_with(tmp_path, {"listener": False})
    exp = yaml.safe_load((lab / "experiment.yml").read_text())
    exp["nodes"]["client"]["sysctls"]["net.mptcp.pm_type"] = 1
    (lab / "experiment.yml").write_text(yaml.safe_dump(exp, sort_keys=False))
    assert upm_nodes(load_lab(lab).scenarios[0].body) == []


def test_the_dry_run_prints_no_listener_for_that_node(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lab = lab_with(tmp_path, {"path_manager": "userspace", "listener": False}, {"path_manager": "userspace"})
    assert main(["run", str(lab), "--dry-run", "--quick", "--scenario", "mptcp-*", "--results",
                 str(tmp_path / "results")]) == 0
    monitors = [line.split("#")[0] for line in capsys.readouterr().out.splitlines() if "mptcp monitor" in line]
    # one per repetition of the two sweep points, every one in the server's namespace
    assert len(monitors) == 2 and all("-server " in m and "-client " not in m for m in monitors), monitors
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize(("client", "probes", "problem"), [
    ({"listener": False}, None, "only with the userspace path manager"),
    ({"path_manager": "kernel", "listener": False}, None, "only with the userspace path manager"),
    ({"path_manager": "userspace", "listener": False}, {"mptcp_monitor": True}, "probes.mptcp_monitor"),
])
def test_listener_false_where_it_means_nothing_is_one_line(tmp_path: Path, client: dict[str, Any],
                                                           probes: dict[str, Any] | None, problem: str,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    lab = lab_with(tmp_path, client, probes=probes)
    with pytest.raises(LabInputError) as e:
        load_lab(lab)
    assert e.value.field.endswith("nodes.client.mptcp.listener") and problem in e.value.problem, e.value
    assert main(["validate", str(lab)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "nodes.client.mptcp.listener" in err and "experiment.yml" in err, err


def test_listener_true_on_a_kernel_pm_node_is_the_default_and_accepted(tmp_path: Path) -> None:
    assert load_lab(lab_with(tmp_path, {"listener": True})).scenarios
