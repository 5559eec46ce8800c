"""Bad lab files: one line naming file, field and problem; exit status 2; nothing created."""

from pathlib import Path

import pytest
import yaml

from mptcplab.cli import main
from mptcplab.errors import LabInputError
from mptcplab.lab.loader import load_lab

LABS = Path(__file__).resolve().parents[2] / "labs"


def edit(path: Path, fn) -> None:
    data = yaml.safe_load(path.read_text())
    fn(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def test_mtu_lab_is_valid_and_expands_sweeps():
    lab = load_lab(LABS / "mtu")
    names = [s.name for s in lab.scenarios]
    assert names == ["tcp-a", "tcp-b", "mptcp-uniform", "mptcp-bottleneck", "mptcp-reverse",
                     "blackhole-probing-0", "blackhole-probing-1", "blackhole-probing-2",
                     "blackhole-base-mss-576", "blackhole-base-mss-1024",
        "tcp-a-unshaped", "mptcp-uniform-unshaped", "mptcp-bottleneck-unshaped"]
    bh = {s.name: s for s in lab.scenarios}["blackhole-base-mss-576"]
    assert bh.body.nodes["client"].sysctls["net.ipv4.tcp_base_mss"] == 576
    assert bh.body.nodes["client"].sysctls["net.ipv4.tcp_mtu_probing"] == 1
    assert bh.body.nodes["rb1"].drop_icmp_frag_needed
    # the override replaced the endpoint list of the reverse scenario, not appended to it
    rev = {s.name: s for s in lab.scenarios}["mptcp-reverse"]
    rev_mptcp = rev.body.nodes["client"].mptcp
    assert rev_mptcp is not None
    assert [e.address for e in rev_mptcp.endpoints] == ["client:eth1"]
    assert set(lab.file_hashes) == {"topology.clab.yml", "experiment.yml", "published.yml"}


#: a latency flow added beside the mtu lab's own (port 5301: its own server port)
LAT = {"kind": "latency", "client": "client", "server": "server", "server_address": "server:eth1",
       "role": "competing"}

CASES = [
    ("experiment.yml", lambda d: d["links"]["client:eth1"].update(rate="fast"), "links.client:eth1.rate", "rate"),
    ("experiment.yml", lambda d: d["links"].update({"nosuch:eth9": {"rate": "1mbit"}}), "links.nosuch:eth9", "no link"),
    ("experiment.yml", lambda d: d["nodes"]["client"].update(colour="red"), "nodes.client.colour", "unknown field"),
    ("experiment.yml", lambda d: d["traffic"]["flows"]["main"].update(duration="-3s"),
     "traffic.flows.main.duration", "time"),
    ("experiment.yml", lambda d: d["nodes"]["ra"].update(role="switch"), "nodes.ra.role", "must be"),
    ("experiment.yml", lambda d: d["traffic"]["flows"]["main"].update(client="ra"),
     "traffic.flows.main.client", "router"),
    ("experiment.yml", lambda d: d["scenarios"][2]["override"]["links"]["rb1:eth2"].update(mtu=20),
     "scenarios[2] (mptcp-uniform): links.rb1:eth2.mtu", "greater than or equal to 68"),
    ("experiment.yml", lambda d: d["scenarios"][5]["sweep"][0].update(path=["nodes", "client", "sysctls", "x", "y"]),
     "scenarios[5].sweep.path", "does not lead"),
    ("experiment.yml",
     lambda d: (d["addressing"].update({"pool": "10.0.0.0/30"}) if "addressing" in d
                else d.update(addressing={"pool": "10.0.0.0/29", "prefixlen": 30})),
     "addressing.pool", "too few"),
    ("topology.clab.yml", lambda d: d["topology"]["links"][0].update(endpoints=["client:eth1", "ghost:eth1"]),
     "topology.links[0].endpoints", "not defined"),
    ("topology.clab.yml", lambda d: d["topology"]["links"][0].update(mtu=100000), "topology.links[0].mtu", "less than"),
    ("experiment.yml", lambda d: d["traffic"]["flows"].update(lat={**LAT, "block": "100MB"}),
     "traffic.flows.lat.block", "outside the latency tool's block range 32 to 67108864"),
    ("experiment.yml", lambda d: d["traffic"]["flows"].update(lat={**LAT, "sndbuf": "lots"}),
     "traffic.flows.lat.sndbuf", "size"),
    ("experiment.yml", lambda d: d["traffic"]["flows"].update(lat={**LAT, "rate": "2Mbit", "blocks_per_s": 10}),
     "traffic.flows.lat", "rate and blocks_per_s exclude each other"),
    ("experiment.yml", lambda d: d["traffic"]["flows"].update(lat={**LAT, "direction": "download"}),
     "traffic.flows.lat.direction", "must be 'upload'"),
    ("published.yml", lambda d: d["values"][0].update(scenario="no-such-scenario"),
     "values[0].scenario", "no scenario"),
]


@pytest.mark.parametrize("file,mutate,field,problem", CASES)
def test_bad_input_names_file_field_problem(copy_lab, file, mutate, field, problem):
    lab = copy_lab()
    edit(lab / file, mutate)
    with pytest.raises(LabInputError) as e:
        load_lab(lab)
    assert e.value.file.endswith(file)
    assert e.value.field.startswith(field), e.value.field
    assert problem in e.value.problem
    assert "\n" not in str(e.value)


def test_yaml_syntax_error_has_line(copy_lab):
    lab = copy_lab()
    (lab / "experiment.yml").write_text("nodes: {client: [\n")
    with pytest.raises(LabInputError) as e:
        load_lab(lab)
    assert e.value.field.startswith("line ")


def test_cli_exit_status_2_one_line_nothing_created(copy_lab, tmp_path, capsys):
    lab = copy_lab()
    edit(lab / "experiment.yml", lambda d: d["links"]["client:eth1"].update(delay="soon"))
    results = tmp_path / "results"
    rc = main(["run", str(lab), "--results", str(results)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert len(err) == 1 and "experiment.yml" in err[0] and "links.client:eth1.delay" in err[0]
    assert not results.exists()


def test_impossible_cli_parameter(tmp_path, capsys):
    rc = main(["run", str(LABS / "mtu"), "--reps", "0", "--results", str(tmp_path / "r")])
    assert rc == 2 and "--reps" in capsys.readouterr().err
    rc = main(["run", str(LABS / "mtu"), "--scenario", "nope", "--results", str(tmp_path / "r")])
    assert rc == 2 and "nope" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_scenario_patterns_select_in_lab_order(tmp_path, capsys):
    from mptcplab.run import select_scenarios

    lab = load_lab(LABS / "rcvbuf")
    picked = [s.name for s in select_scenarios(lab, ["fig7-*", "emu1-*-rmem200k", "emu1-mptcp-rmem200k"])]
    # lab order, each once, an exact name and a pattern overlapping it
    assert picked == ["emu1-tcp-wifi-rmem200k", "emu1-tcp-3g-rmem200k", "emu1-mptcp-rmem200k", "fig7-mptcp",
                      "fig7-tcp-wifi-sndbuf200k", "fig7-tcp-wifi-sndbuf40k"]
    assert [s.name for s in select_scenarios(lab, ["dss-csum-o[nf]*-mtu1500"])] == [
        "dss-csum-off-mtu1500", "dss-csum-on-mtu1500"]
    # a pattern matching nothing is the same one-line error as an unknown name, before anything exists
    rc = main(["run", str(LABS / "rcvbuf"), "--scenario", "fig8-*", "--results", str(tmp_path / "r")])
    assert rc == 2 and "fig8-*" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_calibrate_bad_parameter_exit_2(capsys):
    rc = main(["calibrate", "--rate", "lots", "--delay", "40ms"])
    err = capsys.readouterr().err
    assert rc == 2 and "--rate" in err and len(err.strip().splitlines()) == 1


def test_sweep_labels_name_the_points(copy_lab):
    lab = copy_lab()
    edit(lab / "experiment.yml", lambda d: d["scenarios"][5]["sweep"][0].update(labels=["off", "blackhole", "always"]))
    (lab / "published.yml").unlink()  # it names the default scenario names
    names = [s.name for s in load_lab(lab).scenarios]
    assert "blackhole-probing-always" in names and "blackhole-probing-2" not in names


def test_sweep_values_that_make_bad_names_need_labels(copy_lab):
    lab = copy_lab()
    edit(lab / "experiment.yml", lambda d: d["scenarios"][5]["sweep"][0].update(values=["a b", "c d", "e f"]))
    with pytest.raises(LabInputError) as e:
        load_lab(lab)
    assert e.value.field == "scenarios[5].sweep" and "labels" in e.value.problem


def test_calibrate_names_the_emulation_as_run_does():
    """`calibrate --emulation` as `run --emulation`; `--backend`, its earlier name, still works."""
    from mptcplab.cli import _parser

    for flag in ("--emulation", "--backend"):
        a = _parser().parse_args(["calibrate", "--rate", "10mbit", flag, "nfqueue"])
        assert a.emulation == "nfqueue"
