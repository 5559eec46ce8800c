"""A copy of each capture file holding only the analyzed connection's subflows, to open in
Wireshark without the rest of the capture (mptcpanalyzer's ``clean_pcap``).

tcpdump does the copying (``-r IN -w OUT`` with a filter): it keeps every byte of the packets
it keeps, in the input's order and time stamps, and reads pcap and pcapng. The filter is built
as argument words from the subflows' 4-tuples, each matched in both directions exactly (not
"host A and port p", which would also match the ports the other way round); nothing from the
capture reaches a shell. What it leaves out: every other connection, and ICMP errors about the
subflows (their quoted header is not a 4-tuple a filter can match).
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from mptcplab.commands import Cmd, cmd
from mptcplab.errors import RunFailed

from .model import SubflowResult


def subflow_filter(subflows: Sequence[SubflowResult]) -> tuple[str, ...]:
    """The pcap-filter expression, one word per argument, matching the TCP packets of
    ``subflows`` in both directions; empty when there are none (tcpdump would keep all)."""
    tuples = sorted({(s.src, s.sport, s.dst, s.dport) for s in subflows})
    words: list[str] = []
    for a, ap, b, bp in tuples:
        for sh, sp, dh, dp in ((a, ap, b, bp), (b, bp, a, ap)):
            words += [*(("or",) if words else ()), "(", "src", "host", sh, "and", "src", "port", str(sp),
                      "and", "dst", "host", dh, "and", "dst", "port", str(dp), ")"]
    return ("tcp", "and", "(", *words, ")") if words else ()


def clean_path(src: Path, out: Path) -> Path:
    """Where the filtered copy of ``src`` goes in the output directory ``out``."""
    return out / f"{src.stem}.clean.pcap"


def clean_commands(files: Sequence[Path], subflows: Sequence[SubflowResult], out: Path) -> list[Cmd]:
    """One tcpdump per capture file (see the module docstring); none without subflows.
    Nanosecond stamps are asked for, so a nanosecond file keeps them (a microsecond one loses
    nothing)."""
    flt = subflow_filter(subflows)
    if not flt:
        return []
    return [cmd("tcpdump", "-n", "--time-stamp-precision", "nano", "-r", str(f), "-w", str(clean_path(Path(f), out)),
                *flt, why=f"the analyzed connection's {len(subflows)} subflow(s) of {Path(f).name}")
            for f in files]


def run_commands(cmds: Sequence[Cmd]) -> list[str]:
    """Run the tcpdump commands on this host; the warnings (a file cut short mid-packet: tcpdump
    writes the packets before it and says so). Any other failure: RunFailed."""
    warnings: list[str] = []
    for c in cmds:
        r = subprocess.run(list(c.argv), capture_output=True, text=True)
        if r.returncode != 0:
            if "truncated" not in r.stderr:
                raise RunFailed(f"{c.render()} failed: {r.stderr.strip()}")
            warnings.append(f"{c.argv[c.argv.index('-r') + 1]}: the last packet was cut short; "
                            "the packets before it were copied")
    return warnings
