"""How values are shown: numbers, absent values, markdown tables. No policy, no data access."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd

DASH = "—"  # shown wherever a value is absent; never 0, which would be a measurement

# How each metric is printed. Segment sizes are whole bytes; shares and Mbit/s two decimals.
METRIC_FORMAT = {
    "goodput_mbps": "{:.2f}",
    "subflow_share": "{:.2f}",
    "median_seg": "{:.0f}",
    "max_seg": "{:.0f}",
    "jain_index": "{:.3f}",
    "aggregation_benefit": "{:.2f}",
}


def missing(v: Any) -> bool:
    """None, NaN or pandas' NA (pandas 3 stores an absent string as NaN)."""
    if v is None:
        return True
    if isinstance(v, (list, tuple, dict)):
        return False
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def text(v: Any) -> str | None:
    """A text field of a frame, None when absent."""
    return None if missing(v) or v == "" else str(v)


def fmt_num(v: Any, metric: str | None = None) -> str:
    """A number for a table cell; DASH when absent."""
    if missing(v):
        return DASH
    f = float(v)
    if metric in METRIC_FORMAT:
        return METRIC_FORMAT[metric].format(f)
    # Counts and anything else: no spurious decimals ("3", "2.33").
    s = f"{f:.2f}".rstrip("0").rstrip(".")
    return s if s not in ("", "-0") else "0"


def fmt_mean_std(mean: Any, std: Any, metric: str | None = None) -> str:
    if missing(mean):
        return DASH
    if missing(std):
        return fmt_num(mean, metric)
    return f"{fmt_num(mean, metric)} ± {fmt_num(std, metric)}"


def cell(v: Any) -> str:
    """Markdown table cell: pipes and newlines would break the row."""
    if missing(v):
        return DASH
    s = str(v).replace("|", "\\|").replace("\n", " ").strip()
    return s if s else DASH


def md_table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    head = [str(h).replace("|", "\\|") for h in header]  # a blank header stays blank
    lines = ["| " + " | ".join(head) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    for r in rows:
        lines.append("| " + " | ".join(cell(c) for c in r) + " |")
    return "\n".join(lines)


def df_to_md(df: pd.DataFrame) -> str:
    return md_table([str(c) for c in df.columns], df.astype(object).values.tolist())


def yes_no(v: Any, no: str = "**NO**") -> str:
    return DASH if missing(v) else "yes" if bool(v) else no


def show(v: Any) -> str:
    """Any JSON value in one cell."""
    if isinstance(v, bool):
        return "yes" if v else "**NO**"
    if isinstance(v, float):
        return fmt_num(v)
    if isinstance(v, dict):
        return ", ".join(f"{k}={show(x)}" for k, x in v.items())
    if isinstance(v, list):
        return ", ".join(show(x) for x in v)
    return DASH if v is None else str(v)
