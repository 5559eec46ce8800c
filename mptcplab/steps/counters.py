"""The firewall and middlebox counters after traffic: packets the PMTUD black hole's rule
dropped, packets each middlebox matched (nft's JSON)."""

from __future__ import annotations

import json

from ..commands import Cmd
from ..middlebox.nft import counter_cmd as mb_counter_cmd
from ..net.config import firewall_counter_cmd
from .base import Planned, Rep, Step


def nft_counted(stdout: str) -> int:
    """Packets the counters of a table counted (``nft -j list table``); -1: unreadable."""
    try:
        rules = [x["rule"] for x in json.loads(stdout)["nftables"] if "rule" in x]
        return sum(e["counter"]["packets"] for r in rules for e in r["expr"] if "counter" in e)
    except (ValueError, KeyError, TypeError):
        return -1


class FirewallCounters(Step):
    title = "firewall counters (packets the PMTUD black hole dropped, the middleboxes matched)"

    @staticmethod
    def _cmds(rep: Rep) -> list[tuple[str, Cmd]]:
        nodes = rep.body.nodes.items()
        return ([("firewall", firewall_counter_cmd(n)) for n, spec in nodes if spec.drop_icmp_frag_needed]
                + [("middlebox", mb_counter_cmd(n)) for n, spec in nodes if spec.middlebox])

    def commands(self, rep: Rep) -> list[Planned]:
        return [Planned(c) for _, c in self._cmds(rep)]

    def run(self, rep: Rep) -> None:
        out: dict[str, dict[str, int]] = {}
        for what, c in self._cmds(rep):
            assert c.node is not None
            out.setdefault(what, {})[c.node] = nft_counted(rep.backend.run([c])[0].stdout)
        rep.extra["firewall"] = out.get("firewall", {})
        if "middlebox" in out:
            rep.extra["middlebox"] = out["middlebox"]

