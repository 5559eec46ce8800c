"""Parsing of the units lab files use: rates, times, sizes, fractions.

Conventions follow tc(8): "mbit" is 10^6 bit/s, "mbps" is 10^6 *bytes*/s (tc's
historic meaning), "KB"/"MB" are 10^3 / 10^6 bytes and "KiB"/"MiB" powers of two.
Bare numbers are bit/s for rates, seconds for times and bytes for sizes.
"""

from __future__ import annotations

import re

_NUM = r"(?P<num>[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)\s*(?P<unit>[A-Za-z%]*)"

_RATE = {
    "": 1, "bit": 1, "bps": 8, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12,
    "kibit": 1024, "mibit": 1024**2, "gibit": 1024**3,
    "kbps": 8e3, "mbps": 8e6, "gbps": 8e9,
}
_TIME = {"": 1.0, "s": 1.0, "sec": 1.0, "ms": 1e-3, "msec": 1e-3, "us": 1e-6, "usec": 1e-6}
_SIZE = {
    "": 1, "b": 1, "k": 1000, "kb": 1000, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
    "kib": 1024, "mib": 1024**2, "gib": 1024**3,
}


class UnitError(ValueError):
    """A value that does not parse; the message says what was expected."""


def _split(value: str | int | float, what: str) -> tuple[float, str]:
    if isinstance(value, bool):
        raise UnitError(f"expected a {what}, got {value!r}")
    if isinstance(value, (int, float)):
        return float(value), ""
    m = re.fullmatch(_NUM, str(value).strip())
    if not m:
        raise UnitError(f"expected a {what} such as {_EXAMPLES[what]}, got {value!r}")
    return float(m.group("num")), m.group("unit")


_EXAMPLES = {"rate": "'100mbit'", "time": "'40ms'", "size": "'4MiB'", "fraction": "'1%' or 0.01"}


def parse_rate(value: str | int | float) -> int:
    """Rate in bit/s."""
    num, unit = _split(value, "rate")
    u = unit.lower()
    if u not in _RATE:
        raise UnitError(f"unknown rate unit {unit!r} in {value!r} (use bit, kbit, mbit, gbit)")
    bps = int(round(num * _RATE[u]))
    if bps <= 0:
        raise UnitError(f"rate must be positive, got {value!r}")
    return bps


def parse_time(value: str | int | float) -> float:
    """Time in seconds."""
    num, unit = _split(value, "time")
    u = unit.lower()
    if u not in _TIME:
        raise UnitError(f"unknown time unit {unit!r} in {value!r} (use s, ms, us)")
    return num * _TIME[u]


def parse_size(value: str | int | float) -> int:
    """Size in bytes."""
    num, unit = _split(value, "size")
    u = unit.lower()
    if u not in _SIZE:
        raise UnitError(f"unknown size unit {unit!r} in {value!r} (use B, KB, KiB, MB, MiB)")
    return int(round(num * _SIZE[u]))


def parse_fraction(value: str | int | float) -> float:
    """A probability in [0, 1]; '1%' is 0.01."""
    num, unit = _split(value, "fraction")
    if unit == "%":
        num /= 100.0
    elif unit:
        raise UnitError(f"expected a fraction such as '1%' or 0.01, got {value!r}")
    if not 0.0 <= num <= 1.0:
        raise UnitError(f"fraction must be between 0 and 1 (0% and 100%), got {value!r}")
    return num


def is_time(value: str | int | float) -> bool:
    """True when value is written as a time ('80ms'), false for a size ('150KB')."""
    try:
        _, unit = _split(value, "time")
    except UnitError:
        return False
    return unit.lower() in _TIME and unit != ""


def fmt_rate(bps: float) -> str:
    for div, name in ((1e9, "gbit"), (1e6, "mbit"), (1e3, "kbit")):
        if bps >= div and (bps / div) == int(bps / div):
            return f"{int(bps / div)}{name}"
    return f"{int(bps)}bit"


def fmt_time_tc(seconds: float) -> str:
    """A time as tc and our tools accept it, in microseconds to keep precision."""
    return f"{int(round(seconds * 1e6))}us"


def fmt_factor(factor: float) -> str:
    """A scale factor as reports print it: '×0.5' (lab/scale.py says what scaling changes)."""
    return f"×{factor:g}"


def rate_unit(factor: float, unit: str = "Mbit/s") -> str:
    """A rate's unit as every table prints it: 'Mbit/s (scaled ×0.1)' when the run is scaled."""
    return unit if factor == 1 else f"{unit} (scaled {fmt_factor(factor)})"
