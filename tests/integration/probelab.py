"""The small two-path MPTCP lab the probe tests run (client with two paths through one
router to a single-homed server), with every probe on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .labkit import write_lab

TOPOLOGY: dict[str, Any] = {
    "nodes": {"client": {"kind": "linux", "image": "mptcplab/host:latest"},
              "r": {"kind": "linux", "image": "mptcplab/router:latest"},
              "server": {"kind": "linux", "image": "mptcplab/host:latest"}},
    "links": [{"endpoints": ["client:eth1", "r:eth1"]}, {"endpoints": ["client:eth2", "r:eth2"]},
              {"endpoints": ["r:eth3", "server:eth1"]}],
}
PATHS = {"A": "client:eth1", "B": "client:eth2"}


def experiment(rate: str = "40mbit", duration: str = "3s", probes: dict[str, bool] | None = None) -> dict[str, Any]:
    return {
        "paths": PATHS,
        "links": {ep: {"rate": rate} for ep in PATHS.values()},
        "nodes": {
            "client": {"role": "host", "mptcp": {"limits": {"subflows": 2, "add_addr_accepted": 0},
                                                 "endpoints": [{"address": "client:eth2", "flags": ["subflow"]}]}},
            "r": {"role": "router"},
            "server": {"role": "host", "mptcp": {"limits": {"subflows": 2, "add_addr_accepted": 0}}},
        },
        "traffic": {"flows": {"main": {"client": "client", "server": "server", "server_address": "server:eth1",
                                       "bind": "client:eth1", "mptcp": True, "duration": duration,
                                       "cc": "cubic"}}},
        "capture": [{"point": ep} for ep in PATHS.values()],
        "probes": probes if probes is not None else {"tcp_probe": True, "nstat": True, "mptcp_monitor": True},
        "calibration": {"enabled": False},
        "quick": {"duration": duration, "repetitions": 1},
        "scenarios": [{"name": "two-paths"}],
    }


def write(root: Path, name: str, **kw: Any) -> Path:
    return write_lab(root, name, TOPOLOGY, experiment(**kw))
