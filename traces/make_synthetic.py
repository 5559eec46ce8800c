#!/usr/bin/env python3
"""Writes the synthetic delivery traces of this directory (Mahimahi's format: one line
per delivery opportunity of 1504 bytes, its time in ms; README.md says what each is).

Usage: python3 traces/make_synthetic.py [DIR]   (default: this script's directory)

The files are committed; this script is how they were made, so a change to one is a
change here first. Deterministic: the same files every time.
"""

from __future__ import annotations

import sys
from pathlib import Path

#: bytes per opportunity (Mahimahi's PACKET_SIZE); one opportunity per ms is 12.032 Mbit/s
OPPORTUNITY_BYTES = 1504


def opportunities_per_ms(mbps: float) -> float:
    return mbps * 1e6 / 8 / OPPORTUNITY_BYTES / 1000


def segments(parts: list[tuple[float, float]]) -> list[int]:
    """Opportunity times for consecutive (seconds, Mbit/s) segments: at each ms the whole
    opportunities the cumulative rate has reached by then, so rates that are not a whole
    number per ms are spread evenly (0 Mbit/s: an outage, no line)."""
    out: list[int] = []
    t0, credit = 0, 0.0
    for seconds, mbps in parts:
        per_ms = opportunities_per_ms(mbps)
        for ms in range(t0 + 1, t0 + round(seconds * 1000) + 1):
            before = int(credit)
            credit += per_ms
            out += [ms] * (int(credit) - before)
        t0 += round(seconds * 1000)
    if not out or out[-1] != t0:
        # the period is the last line's time: end on the last ms of the pattern so the loop
        # has the pattern's length (the extra opportunity is there if the rate gave none)
        out.append(t0)
    return out


#: name -> (seconds, Mbit/s) segments; rates are multiples of 12.032 Mbit/s / k where
#: possible, so the opportunities are evenly spaced
TRACES: dict[str, list[tuple[float, float]]] = {
    # one opportunity per ms: Mahimahi's README example ("a file that contains just 1")
    "const-12mbit": [(1.0, 12.032)],
    # 2 s at each of 6, 12 and 24 Mbit/s (one opportunity per 2 ms, per ms, two per ms)
    "steps-6-12-24mbit": [(2.0, 6.016), (2.0, 12.032), (2.0, 24.064)],
    # a known pattern around a 2 s outage: 12 Mbit/s, 24 Mbit/s, nothing, 6 Mbit/s (8 s loop)
    "outage-2s": [(2.0, 12.032), (2.0, 24.064), (2.0, 0.0), (2.0, 6.016)],
    # a WiFi-like path at rest: two opportunities per ms (a timeline switches it to the walk)
    "const-24mbit": [(1.0, 24.064)],
    # walking out of WiFi and back (labs/mobile: a link_change switches to it at the walk's
    # start, trace_offset 0): 1 s at 24 Mbit/s, a fade over 3 s in 0.5 s steps (20, 16, 12,
    # 8, 4, 1 Mbit/s), 3 s out of range (no opportunity), back over 1 s (8, 16 Mbit/s), then
    # 24 Mbit/s to the 12 s loop: it starts and ends at rest, so the loop is seamless
    "wifi-walk-12s": [(1.0, 24.064), (0.5, 20.0), (0.5, 16.0), (0.5, 12.0), (0.5, 8.0), (0.5, 4.0),
                      (0.5, 1.0), (3.0, 0.0), (0.5, 8.0), (0.5, 16.0), (4.0, 24.064)],
}


def main(argv: list[str]) -> int:
    out_dir = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent
    for name, parts in TRACES.items():
        stamps = segments(parts)
        (out_dir / f"{name}.trace").write_text("".join(f"{ms}\n" for ms in stamps))
        print(f"{name}.trace: {len(stamps)} lines, period {stamps[-1]} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
