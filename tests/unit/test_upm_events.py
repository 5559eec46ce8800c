"""Endpoint operations and userspace path-manager actions as timeline events (issue 35):
the commands generated (with the run-time placeholders the dry run shows), the lookup
that fills them (a connection's token from ss, a subflow's local port, an endpoint's id),
the executor that runs the lookup first, the netlink requests of timeline/upm_tool.py,
and the one-line lab errors."""

from __future__ import annotations

import shutil
import struct
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import TypeAdapter

from mptcplab.cli import main
from mptcplab.commands import Cmd
from mptcplab.emulation.nfqueue import NfqueueEmulator
from mptcplab.errors import LabInputError
from mptcplab.lab.events import Event as LabEvent
from mptcplab.lab.loader import load_lab
from mptcplab.lab.network import build_network
from mptcplab.net.mptcp import endpoint_id_of, parse_endpoints
from mptcplab.timeline import upm_tool
from mptcplab.timeline.actions import resolve, subject
from mptcplab.timeline.env import ActionEnv, fill
from mptcplab.timeline.scheduler import backend_executor
from mptcplab.timeline.upm import LPORT, TOKEN, LookupFailed, MptcpToken, flow_connection

REPO = Path(__file__).resolve().parents[2]
BASE = REPO / "tests" / "data" / "bad-labs" / "_base"
LAB_EVENT: TypeAdapter[Any] = TypeAdapter(LabEvent)

#: ss -tinM on a client (iproute2 6.1, kernel 6.18): iperf3's control connection (token
#: 1111aaaa, a few bytes) and its data connection (247961eb) with a second subflow from 10.0.2.2
SS_CLIENT = """\
Netid State Recv-Q Send-Q Local Address:Port  Peer Address:PortProcess
tcp   ESTAB 0      0           10.0.1.2:40000     10.0.3.2:5201
\t cubic wscale:10,10 rto:204 rtt:0.1/0.05 mss:1448 cwnd:10 bytes_sent:120 bytes_acked:121 bytes_received:40 \
tcp-ulp-mptcp flags:Mmec token:0000(id:0)/1111aaaa(id:0) seq:1 sfseq:1 ssnoff:1 maplen:0
tcp   ESTAB 0      0           10.0.1.2:53914     10.0.3.2:5201
\t cubic wscale:10,10 rto:204 rtt:0.042/0.01 mss:1448 cwnd:156 bytes_sent:1620000 bytes_acked:1620001 \
tcp-ulp-mptcp flags:Mmec token:0000(id:0)/247961eb(id:0) seq:9f08 sfseq:1 ssnoff:63379010 maplen:0
tcp   ESTAB 0      0           10.0.2.2:58145     10.0.3.2:5201
\t cubic wscale:10,10 rto:204 rtt:0.042/0.021 mss:1448 cwnd:10 bytes_acked:1 \
tcp-ulp-mptcp flags:Jjec token:edb5a7e5(id:0)/247961eb(id:2) seq:9f08 sfseq:0 ssnoff:6089ec8b maplen:0
mptcp ESTAB 0      0           10.0.1.2:53914     10.0.3.2:5201
\t subflows:1 remote_key token:247961eb write_seq:dd06 snd_una:dd06 rcv_nxt:9f08
"""
#: the same on the server, a receiver: the data connection acks nothing, it receives
SS_SERVER = """\
tcp   ESTAB 0      0           10.0.3.2:5201     10.0.1.2:40000
\t cubic mss:1448 cwnd:10 bytes_sent:40 bytes_acked:41 bytes_received:120 \
tcp-ulp-mptcp flags:Mec token:1111aaaa(id:0)/2222bbbb(id:0) seq:1 sfseq:1 ssnoff:1 maplen:0
tcp   ESTAB 0      0           10.0.3.2:5201     10.0.1.2:53914
\t cubic mss:1448 cwnd:10 bytes_acked:1 bytes_received:1620000 \
tcp-ulp-mptcp flags:Mec token:247961eb(id:0)/3333cccc(id:0) seq:1 sfseq:1 ssnoff:1 maplen:0
"""


def ev(**kw: Any) -> Any:
    return LAB_EVENT.validate_python({"at": 1, **kw})


def upm_lab(tmp_path: Path, events: list[dict[str, Any]], pm: str | None = "userspace",
            node: str = "client") -> Path:
    """The bad-lab suite's valid base with ``node`` on the userspace path manager and ``events``."""
    lab = tmp_path / "upm"
    shutil.copytree(BASE, lab)
    exp = yaml.safe_load((lab / "experiment.yml").read_text())
    if pm is not None:
        exp["nodes"][node]["mptcp"]["path_manager"] = pm
    exp["traffic"]["events"] = events
    (lab / "experiment.yml").write_text(yaml.safe_dump(exp, sort_keys=False))
    return lab


@pytest.fixture
def env(tmp_path: Path) -> ActionEnv:
    lab = load_lab(upm_lab(tmp_path, []))
    body = lab.scenarios[0].body
    return ActionEnv(build_network(lab.topology, body), NfqueueEmulator(binary=Path("/bin/true")), body=body)


def refused(tmp_path: Path, events: list[dict[str, Any]], **kw: Any) -> LabInputError:
    with pytest.raises(LabInputError) as e:
        load_lab(upm_lab(tmp_path, events, **kw))
    assert "\n" not in str(e.value)
    return e.value


# ------------------------------------------------------------------ endpoint operations

def test_endpoint_operations_are_the_commands_iproute2_takes(env: ActionEnv) -> None:
    eth2 = str(env.net.address("client:eth2"))

    def argv(**kw: Any) -> list[tuple[str, ...]]:
        return [c.argv for c in resolve(env, ev(**kw)).cmds]

    assert argv(action="endpoint_add", node="client", address="client:eth2", id=3, flags=["subflow", "fullmesh"]) \
        == [("ip", "mptcp", "endpoint", "add", eth2, "dev", "eth2", "id", "3", "subflow", "fullmesh")]
    assert argv(action="endpoint_add", node="client", address="client:eth2", flags=["signal"], port=7000) \
        == [("ip", "mptcp", "endpoint", "add", eth2, "dev", "eth2", "port", "7000", "signal")]
    assert argv(action="endpoint_flags", node="client", id=2, flags="nofullmesh") \
        == [("ip", "mptcp", "endpoint", "change", "id", "2", "nofullmesh")]
    assert argv(action="limits", node="server", subflows=4) == [("ip", "mptcp", "limits", "set", "subflows", "4")]
    assert argv(action="limits", node="server", subflows=1, add_addr_accepted=2) \
        == [("ip", "mptcp", "limits", "set", "subflows", "1", "add_addr_accepted", "2")]
    # a non-zero id is deleted by id: the kernel ignores an address there
    assert argv(action="endpoint_delete", node="client", id=2, address="client:eth2") \
        == [("ip", "mptcp", "endpoint", "delete", "id", "2")]


def test_delete_by_address_reads_the_id_when_it_runs(env: ActionEnv) -> None:
    eth2 = str(env.net.address("client:eth2"))
    r = resolve(env, ev(action="endpoint_delete", node="client", address="client:eth2"))
    assert r.lookup is not None and r.lookup.cmd.argv == ("ip", "mptcp", "endpoint", "show")
    assert r.cmds[0].argv == ("ip", "mptcp", "endpoint", "delete", "id", "{id}")
    shown = f"10.9.9.9 id 1 signal \n{eth2} id 7 subflow dev eth2 \n"
    assert [fill(c, r.lookup.values(shown)).argv for c in r.cmds] == [("ip", "mptcp", "endpoint", "delete", "id", "7")]
    with pytest.raises(LookupError, match="no endpoint"):
        r.lookup.values("10.9.9.9 id 1 signal\n")


def test_endpoint_show_parser() -> None:
    eps = parse_endpoints("10.0.2.2 id 2 subflow fullmesh dev eth2 \nfd00::2 port 7000 id 4 signal \n")
    assert [(str(e.address), e.id, e.port, e.flags) for e in eps] == [
        ("10.0.2.2", 2, None, ("subflow", "fullmesh")), ("fd00::2", 4, 7000, ("signal",))]
    assert endpoint_id_of("fd00::2 port 7000 id 4 signal\n", "fd00:0::2") == 4


# ------------------------------------------------------------------ userspace PM

def test_the_token_is_the_flows_busiest_connection() -> None:
    c = flow_connection(SS_CLIENT, 5201, server_side=False)
    assert c.token == MptcpToken(0x247961EB) and str(c.token) == "611934699"
    assert c.local_port("10.0.2.2", "10.0.3.2", 5201) == 58145
    with pytest.raises(LookupFailed, match="no subflow 10.0.2.9"):
        c.local_port("10.0.2.9", "10.0.3.2", 5201)
    # a receiver acks nothing: bytes received decide
    assert flow_connection(SS_SERVER, 5201, server_side=True).token.hex == "3333cccc"
    with pytest.raises(LookupFailed, match="port 5301"):
        flow_connection(SS_CLIENT, 5301, server_side=False)


def test_upm_events_plan_with_placeholders_and_fill_at_run_time(env: ActionEnv) -> None:
    eth2 = str(env.net.address("client:eth2"))
    srv = str(env.net.address("server:eth1"))
    create = resolve(env, ev(action="upm_subflow_create", node="client", flow="main", local="client:eth2",
                             local_id=2, remote="server:eth1"))
    assert create.lookup is not None and create.lookup.cmd.argv == ("ss", "-tinM")
    (c,) = create.cmds
    assert c.node == "client" and c.argv[1:3] == ("-I", str(upm_tool.__file__))
    assert c.argv[3:] == ("subflow-create", "--token", TOKEN, "--local", eth2, "--local-id", "2",
                          "--remote", srv, "--remote-port", "5201")
    assert "{token}" in create.lookup.note
    ss = SS_CLIENT.replace("10.0.1.2", str(env.net.address("client:eth1"))).replace("10.0.2.2", eth2) \
        .replace("10.0.3.2", srv)
    assert fill(c, create.lookup.values(ss)).argv[5] == "611934699"
    destroy = resolve(env, ev(action="upm_subflow_destroy", node="client", flow="main", local="client:eth2",
                              remote="server:eth1"))
    assert destroy.lookup is not None
    (d,) = destroy.cmds
    assert LPORT in d.argv
    filled = fill(d, destroy.lookup.values(ss)).argv
    assert filled[filled.index("--local-port") + 1] == "58145" and filled[filled.index("--token") + 1] == "611934699"
    assert subject(destroy.event) == {"node": "client", "flow": "main", "address": "client:eth2"}


def test_announce_and_remove(tmp_path: Path) -> None:
    lab = load_lab(upm_lab(tmp_path, [], node="server"))
    body = lab.scenarios[0].body
    env = ActionEnv(build_network(lab.topology, body), NfqueueEmulator(binary=Path("/bin/true")), body=body)
    ann = resolve(env, ev(action="upm_announce", node="server", flow="main", address="server:eth1", id=5, port=7001))
    assert ann.cmds[0].argv[3:] == ("announce", "--token", TOKEN, "--address", str(env.net.address("server:eth1")),
                                    "--id", "5", "--port", "7001")
    rem = resolve(env, ev(action="upm_remove", node="server", flow="main", id=0))
    assert rem.cmds[0].argv[3:] == ("remove", "--token", TOKEN, "--id", "0")
    assert rem.lookup is not None and fill(rem.cmds[0], rem.lookup.values(SS_SERVER)).argv[5] == str(0x3333CCCC)


def _fake_run(outputs: dict[str, str], ran: list[tuple[str, ...]]) -> Any:
    def run(cmds: Sequence[Cmd]) -> list[subprocess.CompletedProcess[str]]:
        ran.extend(c.argv for c in cmds)
        return [subprocess.CompletedProcess(c.argv, 0, outputs.get(c.argv[0], ""), "") for c in cmds]
    return run


def test_the_executor_looks_up_first_and_records_the_values(env: ActionEnv) -> None:
    eth2, srv = str(env.net.address("client:eth2")), str(env.net.address("server:eth1"))
    ss = SS_CLIENT.replace("10.0.2.2", eth2).replace("10.0.3.2", srv)
    item = resolve(env, ev(action="upm_subflow_destroy", node="client", flow="main", local="client:eth2",
                           remote="server:eth1"))
    ran: list[tuple[str, ...]] = []
    out = backend_executor(_fake_run({"ss": ss}, ran), lambda c: " ".join(c.argv))(item)
    assert out.rc == 0 and ran[0] == ("ss", "-tinM") and "58145" in ran[1] and "611934699" in ran[1]
    assert "{token}=611934699" in out.result and out.commands.startswith("ss -tinM ; ")
    # nothing found: recorded as failed, the command not run
    ran.clear()
    out = backend_executor(_fake_run({"ss": ""}, ran), lambda c: " ".join(c.argv))(item)
    assert out.rc == 1 and out.result.startswith("lookup: no MPTCP connection") and ran == [("ss", "-tinM")]


def test_the_tool_sends_the_kernels_attributes() -> None:
    p = upm_tool.parser()
    cmd, attrs = upm_tool.request_of(p.parse_args(
        ["subflow-create", "--token", "611934699", "--local", "10.0.2.2", "--local-id", "2",
         "--remote", "10.0.3.2", "--remote-port", "5201"]))
    assert cmd == upm_tool.CMD_SUBFLOW_CREATE
    top = upm_tool._attrs(attrs)
    assert struct.unpack("=I", top[upm_tool.ATTR_TOKEN]) == (611934699,)
    local, remote = upm_tool._attrs(top[upm_tool.ATTR_ADDR]), upm_tool._attrs(top[upm_tool.ATTR_ADDR_REMOTE])
    assert local[upm_tool.ADDR_ADDR4] == bytes([10, 0, 2, 2]) and local[upm_tool.ADDR_ID] == b"\x02"
    assert struct.unpack("=H", remote[upm_tool.ADDR_PORT]) == (5201,)  # host order: the kernel applies htons
    assert upm_tool.ADDR_FLAGS not in local
    cmd, attrs = upm_tool.request_of(p.parse_args(["announce", "--token", "1", "--address", "fd00::2", "--id", "9"]))
    addr = upm_tool._attrs(upm_tool._attrs(attrs)[upm_tool.ATTR_ADDR])
    assert cmd == upm_tool.CMD_ANNOUNCE and len(addr[upm_tool.ADDR_ADDR6]) == 16
    assert struct.unpack("=I", addr[upm_tool.ADDR_FLAGS]) == (upm_tool.FLAG_SIGNAL,)  # the kernel requires it


def test_the_tool_reports_the_kernels_refusal() -> None:
    # an NLMSG_ERROR for seq 2: EINVAL with the extended ack's text; one for seq 1 is someone else's
    tlv = upm_tool.attr(upm_tool.NLMSGERR_ATTR_MSG, b"invalid token\0")
    err = struct.pack("=i", -22) + struct.pack("=IHHII", 16, 0, 0, 2, 0) + tlv
    msg = struct.pack("=IHHII", 16 + len(err), upm_tool.NLMSG_ERROR, upm_tool.NLM_F_ACK_TLVS | 0x100, 2, 0) + err
    stale = struct.pack("=IHHII", 36, upm_tool.NLMSG_ERROR, 0x100, 1, 0) + struct.pack("=i", 0) + bytes(16)
    assert upm_tool.parse_reply(stale, 2) == ([], False)
    with pytest.raises(upm_tool.NetlinkError, match="invalid token") as e:
        upm_tool.parse_reply(stale + msg, 2)
    assert e.value.code == 22


# ------------------------------------------------------------------ lab errors

@pytest.mark.parametrize(("events", "kw", "field", "problem"), [
    ([{"at": 2, "action": "upm_subflow_create", "node": "client", "flow": "main", "local": "client:eth2",
       "local_id": 2, "remote": "server:eth1"}], {"pm": None}, "traffic.events[0].node",
     "does not select the userspace path manager"),
    ([{"at": 2, "action": "upm_remove", "node": "ra", "flow": "main", "id": 1}], {}, "traffic.events[0].node",
     "neither the client nor the server"),
    ([{"at": 2, "action": "upm_remove", "node": "client", "flow": "nope", "id": 1}], {}, "traffic.events[0].flow",
     "no flow 'nope'"),
    ([{"at": 2, "action": "upm_subflow_create", "node": "client", "flow": "main", "local": "client:eth2",
       "local_id": 2, "remote": "client:eth1"}], {}, "traffic.events[0].remote", "not an interface of server"),
    ([{"at": 2, "action": "upm_subflow_destroy", "node": "client", "flow": "main", "local": "10.99.0.1",
       "remote": "server:eth1"}], {}, "traffic.events[0].local", "not an address of client"),
    ([{"at": 2, "action": "upm_subflow_create", "node": "client", "flow": "main", "local": "client:eth2",
       "local_id": 0, "remote": "server:eth1"}], {}, "traffic.events[0].upm_subflow_create.local_id",
     "greater than or equal to 1"),
    ([{"at": 2, "action": "endpoint_add", "node": "client", "address": "client:eth2",
       "flags": ["signal", "fullmesh"]}], {}, "traffic.events[0].endpoint_add.flags", "signal and fullmesh"),
    ([{"at": 2, "action": "endpoint_add", "node": "client", "address": "client:eth2", "flags": ["subflow"],
       "port": 7000}], {}, "traffic.events[0].endpoint_add", "only a signal endpoint"),
    ([{"at": 2, "action": "endpoint_delete", "node": "client"}], {}, "traffic.events[0].endpoint_delete",
     "needs id, address, or both"),
    ([{"at": 2, "action": "endpoint_flags", "node": "client", "flags": "fullmesh"}], {},
     "traffic.events[0].endpoint_flags", "needs the endpoint's address or id"),
    ([{"at": 2, "action": "limits", "node": "client"}], {}, "traffic.events[0].limits", "needs subflows"),
    ([{"at": 2, "action": "limits", "node": "client", "subflows": 9}], {}, "traffic.events[0].limits.subflows",
     "less than or equal to 8"),
])
def test_bad_events_are_one_line_naming_the_field(tmp_path: Path, events: list[dict[str, Any]], kw: dict[str, Any],
                                                   field: str, problem: str) -> None:
    e = refused(tmp_path, events, **kw)
    assert e.field == field and problem in e.problem, (e.field, e.problem)


def test_a_node_endpoint_with_signal_and_fullmesh_is_refused(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    lab = upm_lab(tmp_path, [], pm=None)
    exp = yaml.safe_load((lab / "experiment.yml").read_text())
    exp["nodes"]["client"]["mptcp"]["endpoints"] = [{"address": "client:eth2", "flags": ["signal", "fullmesh"]}]
    (lab / "experiment.yml").write_text(yaml.safe_dump(exp, sort_keys=False))
    assert main(["validate", str(lab)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "nodes.client.mptcp.endpoints[0].flags" in err and "fullmesh" in err


def test_the_userspace_pm_may_be_chosen_by_sysctl(tmp_path: Path) -> None:
    lab = upm_lab(tmp_path, [{"at": 2, "action": "upm_remove", "node": "client", "flow": "main", "id": 2}], pm=None)
    exp = yaml.safe_load((lab / "experiment.yml").read_text())
    exp["nodes"]["client"]["sysctls"]["net.mptcp.pm_type"] = 1
    (lab / "experiment.yml").write_text(yaml.safe_dump(exp, sort_keys=False))
    assert load_lab(lab).scenarios


def test_the_dry_run_prints_the_lookup_then_the_command_with_its_placeholder(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lab = upm_lab(tmp_path, [
        {"at": 2, "action": "upm_subflow_create", "node": "client", "flow": "main", "local": "client:eth2",
         "local_id": 2, "remote": "server:eth1"},
        {"at": 3, "action": "endpoint_delete", "node": "server", "address": "server:eth1"}])
    assert main(["run", str(lab), "--dry-run", "--quick", "--scenario", "mptcp-*", "--results",
                 str(tmp_path / "results")]) == 0
    lines = capsys.readouterr().out.splitlines()
    ss = next(i for i, line in enumerate(lines) if line.split("#")[0].rstrip().endswith("ss -tinM")
              and "{token}" in line)
    assert "upm_tool.py subflow-create --token '{token}'" in lines[ss + 1], lines[ss:ss + 2]
    show = next(i for i, line in enumerate(lines) if "mptcp endpoint show" in line)
    assert "mptcp endpoint delete id '{id}'" in lines[show + 1], lines[show:show + 2]
    assert not (tmp_path / "results").exists()
