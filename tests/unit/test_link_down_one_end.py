"""link_down / link_up with ``ends: one``: ``ip link set down`` on the named end only, as
mptcp_join.sh's link_failure (``ip -net ns1 link set ns1ethN down``): the schema, the
commands generated, the events.csv columns, and the analysis retiring the path."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from eventkit import BASE, ev
from pydantic import ValidationError

from mptcplab.analysis.labspec import retired_paths
from mptcplab.emulation.nfqueue import NfqueueEmulator
from mptcplab.errors import LabInputError
from mptcplab.lab.events import LinkDown, LinkUp
from mptcplab.lab.loader import load_lab
from mptcplab.lab.network import build_network
from mptcplab.record.model import Event as Recorded
from mptcplab.timeline.actions import resolve, subject
from mptcplab.timeline.env import ActionEnv


@pytest.fixture(scope="module")
def lab() -> Any:
    return load_lab(BASE)


def env(lab: Any) -> ActionEnv:
    return ActionEnv(build_network(lab.topology, lab.scenarios[0].body), NfqueueEmulator(binary=Path("/bin/true")))


def argvs(ev_: Any, e: ActionEnv) -> list[tuple[str | None, str]]:
    return [(c.node, " ".join(c.argv)) for c in resolve(e, ev_).cmds]


# ------------------------------------------------------------------ schema
def test_ends_defaults_to_both_and_one_is_taken_with_ip_link() -> None:
    assert ev(action="link_down", link="rb:eth1").ends == "both"
    down = ev(action="link_down", link="rb:eth1", ends="one")
    assert isinstance(down, LinkDown) and down.ends == "one" and down.how == "ip-link"
    assert isinstance(ev(action="link_up", link="rb:eth1", ends="one"), LinkUp)


@pytest.mark.parametrize("action", ["link_down", "link_up"])
def test_ends_one_with_drop_and_direction_one_with_ip_link_are_refused(action: str) -> None:
    with pytest.raises(ValidationError, match="ends: one needs how: ip-link"):
        ev(action=action, link="rb:eth1", ends="one", how="drop")
    with pytest.raises(ValidationError, match="direction: one needs how: drop"):
        ev(action=action, link="rb:eth1", direction="one", ends="one")
    with pytest.raises(ValidationError, match="ends"):
        ev(action=action, link="rb:eth1", ends="server")


def test_link_change_has_no_ends() -> None:
    with pytest.raises(ValidationError, match="ends"):
        ev(action="link_change", link="rb:eth1", rate="1mbit", ends="one")


def test_the_loader_names_the_event(tmp_path: Path) -> None:
    lab = tmp_path / "base"
    shutil.copytree(BASE, lab)
    exp = yaml.safe_load((lab / "experiment.yml").read_text())
    exp["traffic"]["events"] = [{"at": 1, "action": "link_down", "link": "rb:eth1", "ends": "one", "how": "drop"}]
    (lab / "experiment.yml").write_text(yaml.safe_dump(exp))
    with pytest.raises(LabInputError, match=r"traffic\.events\[0\].*ends: one needs how: ip-link"):
        load_lab(lab)


# ------------------------------------------------------------------ commands
def test_down_takes_only_the_named_end_down(lab: Any) -> None:
    e = env(lab)
    assert argvs(ev(action="link_down", link="rb:eth1", ends="one"), e) == [("rb", "ip link set dev eth1 down")]
    assert argvs(ev(action="link_down", link="client:eth2", ends="one"), e) == [
        ("client", "ip link set dev eth2 down")]
    # both ends, as before
    assert argvs(ev(action="link_down", link="rb:eth1"), e) == [
        ("client", "ip link set dev eth2 down"), ("rb", "ip link set dev eth1 down")]


def test_up_brings_the_named_end_up_and_puts_back_only_its_routes(lab: Any) -> None:
    e = env(lab)
    up = argvs(ev(action="link_up", link="client:eth2", ends="one"), e)
    assert up[0] == ("client", "ip link set dev eth2 up")
    routes = up[1:]
    # the client's per-source table of path B (its default route) comes back; the peer (rb),
    # which only lost carrier, kept its routes: no command on it
    assert routes and {n for n, _ in routes} == {"client"}, up
    assert all(a.startswith("ip route replace ") and a.split(" dev ")[1].split()[0] == "eth2" for _, a in routes)
    assert any(a.startswith("ip route replace default via 10.0.2.1 dev eth2 table ") for _, a in routes), routes
    both = argvs(ev(action="link_up", link="client:eth2"), e)
    assert {n for n, _ in both} == {"client", "rb"} and len(both) > len(up)


def test_the_events_csv_columns_and_target(lab: Any) -> None:
    e = env(lab)
    r = resolve(e, ev(action="link_down", link="rb:eth1", ends="one"))
    assert r.target == "rb:eth1 this end only"
    assert subject(r.event) == {"node": "rb", "link": "rb:eth1", "direction": "both"}
    assert resolve(e, ev(action="link_down", link="rb:eth1")).target == "rb:eth1 (both)"


def test_the_analysis_retires_the_path_of_a_one_ended_link_down(lab: Any) -> None:
    """events.csv carries the link and direction only: a one-ended link_down retires the
    path through that link as a both-ended one does (no packet crosses either way), and
    the link_up gives it back."""
    e = env(lab)
    sc = next(s for s in lab.scenarios if s.body.traffic.flows["main"].mptcp)
    net = build_network(lab.topology, sc.body)
    flow = sc.body.traffic.flows["main"]

    def rec(epoch: float, event: Any) -> Recorded:
        r = resolve(e, event)
        return Recorded.model_validate({"planned_s": 1.0, "actual_s": 1.0, "rc": 0, "epoch_s": epoch,
                                        "action": r.action, "target": r.target, **subject(r.event)})

    down = rec(100.0, ev(action="link_down", link="rb:eth1", ends="one"))
    got, why = retired_paths(sc.body, net, flow, [down])
    assert got == {"B": 100.0} and "rb:eth1" in why["B"], (got, why)
    # the far link of path B (rb:eth2 -- ra:eth3), the server's end of neither path: B too
    assert retired_paths(sc.body, net, flow, [rec(100.0, ev(action="link_down", link="ra:eth3", ends="one"))])[0] \
        == {"B": 100.0}
    up = rec(101.0, ev(action="link_up", link="rb:eth1", ends="one"))
    assert retired_paths(sc.body, net, flow, [down, up])[0] == {}
