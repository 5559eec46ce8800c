"""Kind ``transfer``: a verified transfer (traffic/transfer_tool.py): ``bytes`` of a seeded
pseudo-random stream in each ``direction`` (upload, download, or both at once) over one MPTCP
(or TCP) connection; the result says, per direction, whether what arrived hashes (SHA-256) to
what was sent. The connection is proved MPTCP (or a fallback) from the capture like iperf3's
(``connection``). Either family: the client's socket is of ``server_address``'s family and
``bind`` names its interface's address of that family; the server listens on ``::`` (both
families) or on ``server_bind`` alone. ``rate``: each sender's pace; ``fastclose``: that side
closes after ``bytes`` with the peer's data unread (MP_FASTCLOSE): the reset is the expected
end, so what was sent and received is reported, not an error.

Files of a flow ``<name>``: ``transfer-<name>.client.json`` (the client's stdout) and
``transfer-<name>.server.json`` (the server's report). Both sides are told the seed and length,
and each receiver reports where what arrived differs; transfer_diff.py says whose bytes those are."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..lab.network import IPAddress, MappedAddress, wire_address
from ..units import parse_size
from .base import KindContext, Outcome, TrafficKind
from .transfer_diff import foreign_bytes, ranges
from .transfer_schema import TransferFlow
from .transfer_tool import SERVER_SEED_OFFSET

TOOL = Path(__file__).with_name("transfer_tool.py")
PREFIX = "transfer-"
CLIENT_OUT = ".client.json"
SERVER_OUT = ".server.json"


def _tool() -> list[str]:
    # -I: isolated, so nothing from the node's working directory or environment is imported
    return [sys.executable, "-I", str(TOOL)]


def server_file(workdir: Path, name: str) -> Path:
    return workdir / f"{PREFIX}{name}{SERVER_OUT}"


def verdict(sent: str | None, received: str | None, sent_bytes: int | None, received_bytes: int | None) -> str:
    """equal: the same bytes arrived; differs: as many bytes, other content; incomplete:
    fewer (or more) bytes than sent, or a side without a report."""
    if sent is None or received is None or sent_bytes is None or received_bytes is None:
        return "incomplete"
    if sent_bytes != received_bytes:
        return "incomplete"
    return "equal" if sent == received else "differs"


def combined(verdicts: list[str]) -> str:
    """The flow's verdict over its directions: equal when every one is; else differs when one
    does; else incomplete."""
    if verdicts and all(v == "equal" for v in verdicts):
        return "equal"
    return "differs" if "differs" in verdicts else "incomplete"


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _leg(sender: dict[str, Any], receiver: dict[str, Any], size: int | None, client_sends: bool,
         seed: int | None) -> dict[str, Any]:
    """One direction: what ``sender`` sent and ``receiver`` got. A sender's SHA-256 covers its
    first ``size`` bytes (a fast close's peer sends more until the reset), so what arrived is
    compared with that much. Older reports: ``bytes`` is the client's sent, the server's received."""
    sent = _int(sender.get("sent_bytes", sender.get("bytes") if client_sends else None))
    received = _int(receiver.get("received_bytes", receiver.get("bytes") if client_sends else None))
    hashed = sent if sent is None or size is None else min(sent, size)
    leg: dict[str, Any] = {"sent_bytes": sent, "received_bytes": received,
                           "sent_sha256": sender.get("sent_sha256"), "received_sha256": receiver.get("received_sha256")}
    leg["verdict"] = verdict(leg["sent_sha256"], leg["received_sha256"], hashed, received)
    leg.update(_differences(receiver.get("differs"), seed, hashed))
    return leg


def _version(flow: TransferFlow, ctx: KindContext) -> int:
    """The connection's IP version: the server address's (the client's socket family)."""
    return ctx.net.address(flow.server_address).version


def _source(ref: str, flow: TransferFlow, ctx: KindContext) -> IPAddress:
    """The client's ``bind`` interface's address of the connection's family; its IPv4 one
    when it has none of that family (the connect then fails and says so, as before). To an
    IPv4-mapped server address the AF_INET6 socket talks IPv4: its IPv4 address, mapped."""
    dst = ctx.net.address(flow.server_address)
    if wire_address(dst) != dst:
        return MappedAddress(f"::ffff:{ctx.net.address(ref, 4)}")
    version = dst.version
    try:
        return ctx.net.address(ref, version)
    except KeyError:
        return ctx.net.address(ref)


def _json(path: Path) -> tuple[dict[str, Any], str | None]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        return {}, f"{path.name}: {e}"
    return (data, None) if isinstance(data, dict) else ({}, f"{path.name}: not a JSON object")


def _differences(differs: Any, seed: Any, n: Any) -> dict[str, Any]:
    """The server's comparison with the stream: differing bytes, the ranges they make and
    whose bytes those are (transfer_diff.py); nothing when the server did not compare."""
    if not isinstance(differs, dict) or not isinstance(differs.get("differing_bytes"), int):
        return {}
    found = ranges(differs.get("runs") or [], seed if isinstance(seed, int) else None,
                   n if isinstance(n, int) else None)
    return {"differing_bytes": differs["differing_bytes"], "differences": [asdict(r) for r in found],
            "foreign_bytes": foreign_bytes(found, differs["differing_bytes"])}


class TransferKind(TrafficKind[TransferFlow]):
    name = "transfer"
    capture_analysis = "connection"
    result_field = "transfer"
    output_suffix = CLIENT_OUT
    # the server accepts one connection and exits after its end
    server_exits = True

    def server_argv(self, flow: TransferFlow, name: str, ctx: KindContext) -> tuple[str, ...]:
        # by default every address of the node, both families (the tool's `::`, not v6-only):
        # a join to an address the server announces (ADD_ADDR), of either family, needs a
        # listener there, or the server answers its SYN with RST; server_bind: that one only
        bind = (["--address", str(ctx.net.address(flow.server_bind, _version(flow, ctx)))]
                if flow.server_bind else [])
        return (*_tool(), "server", *bind, "--port", str(flow.port),
                "--out", str(server_file(ctx.workdir, name)), "--seed", str(flow.seed),
                "--bytes", str(parse_size(flow.bytes)), *_common(flow), *(["--mptcp"] if flow.mptcp else []))

    def client_argv(self, flow: TransferFlow, name: str, ctx: KindContext) -> tuple[str, ...]:
        argv = [*_tool(), "client", "--address", str(ctx.net.address(flow.server_address)),
                "--port", str(flow.port), "--bytes", str(parse_size(flow.bytes)), "--seed", str(flow.seed),
                *_common(flow)]
        if flow.bind:
            argv += ["--bind", str(_source(flow.bind, flow, ctx))]
        if flow.mptcp:
            argv += ["--mptcp"]
        return tuple(argv)

    def output_name(self, name: str, primary: bool) -> str:
        return f"{PREFIX}{name}{CLIENT_OUT}"

    def read(self, path: Path) -> Outcome:
        name = path.name.removeprefix(PREFIX).removesuffix(CLIENT_OUT)
        client, cerr = _json(path)
        server, serr = _json(server_file(path.parent, name))
        size = _int(client.get("size"))
        seed = _int(client.get("seed"))
        direction = client.get("direction", "upload")
        fastclose = client.get("fastclose_side")
        legs: dict[str, dict[str, Any]] = {}
        if direction in ("upload", "both"):
            legs["upload"] = _leg(client, server, size, True, seed)
        if direction in ("download", "both"):
            legs["download"] = _leg(server, client, size, False,
                                    None if seed is None else seed + SERVER_SEED_OFFSET)
        stopped = bool(client.get("stopped") or server.get("stopped"))
        reset = bool(client.get("reset") or server.get("reset"))
        sent_b = _sum(leg["sent_bytes"] for leg in legs.values())
        recv_b = _sum(leg["received_bytes"] for leg in legs.values())
        metrics: dict[str, Any] = {
            "bytes": sent_b, "received_bytes": recv_b, "size": None if size is None else size * len(legs),
            "stopped": stopped, "connect_s": client.get("connect_s"), "seed": seed,
            "mptcp_socket": client.get("mptcp"), "direction": direction, "fastclose": fastclose,
            "reset": reset, "rate_bps": _int(client.get("rate_bps")), **legs,
            "verdict": combined([leg["verdict"] for leg in legs.values()]),
        }
        if len(legs) == 1:  # one direction: its numbers are the flow's, as they always were
            (leg,) = legs.values()
            metrics.update({k: leg.get(k) for k in ("sent_sha256", "received_sha256")})
            metrics.update({k: leg[k] for k in ("differing_bytes", "differences", "foreign_bytes") if k in leg})
        elif all("differing_bytes" in leg for leg in legs.values()):
            metrics["differing_bytes"] = sum(leg["differing_bytes"] for leg in legs.values())
            metrics["foreign_bytes"] = _sum(leg["foreign_bytes"] for leg in legs.values())
        seconds = server.get("seconds") or client.get("seconds")
        goodput = recv_b * 8 / seconds / 1e6 if isinstance(recv_b, int) and seconds else None
        error = cerr or client.get("error") or serr or server.get("error")
        if error is None and metrics["verdict"] == "incomplete" and not stopped and not fastclose:
            # stopped by the run (its duration limit) is the stall measured, not a failure:
            # the verdict says incomplete and the flow's warning says it was stopped. A fast
            # close cuts the transfer on purpose: the legs say what was sent and received
            error = "incomplete: " + "; ".join(f"{d} {leg['received_bytes']} of {leg['sent_bytes']} bytes received"
                                               for d, leg in legs.items() if leg["verdict"] != "equal")
        return Outcome(goodput_mbps=goodput, seconds=seconds, error=error, metrics=metrics)


def _sum(values: Any) -> int | None:
    got = list(values)
    return None if any(v is None for v in got) else sum(got)


def _common(flow: TransferFlow) -> list[str]:
    """The options both sides are given: who sends, the pace, who closes fast."""
    argv = ["--direction", flow.direction]
    if (rate := flow.rate_bps()) is not None:
        argv += ["--rate", str(rate)]
    if flow.fastclose:
        argv += ["--fastclose", flow.fastclose]
    return argv


#: the kind this module runs (traffic/kinds.py finds it by the module's name)
KIND = TransferKind()
