"""results/series_figures.py: several scenarios on one axis, packets/s per path, and a
figure that says what is missing instead of failing."""

from __future__ import annotations

import pandas as pd

from mptcplab.results import series_figures as SF


def _ts() -> pd.DataFrame:
    rows = []
    for scenario, per_rep in {"tcp": [[1000] * 10], "s2": [[500] * 10, [300] * 5]}.items():
        for rep, bins in enumerate(per_rep, start=1):
            for path in ("link01", "link02"):
                for i, b in enumerate(bins):
                    rows.append({"scenario": scenario, "rep": rep, "t": i * 0.1, "path": path, "subflow": f"{path}:1",
                                 "bytes": b, "mbps": b * 8 / 0.1 / 1e6, "packets": b // 100})
    return pd.DataFrame(rows)


def test_connection_series_sums_paths_and_averages_reps_with_zeros() -> None:
    s = SF.connection_series(_ts(), "s2")
    # rep 1: 2 x 500 B per bin; rep 2: 2 x 300 B for 5 bins, then no row (0): mean of the two
    assert s.iloc[0] == (0.08 + 0.048) / 2 and s.iloc[9] == 0.08 / 2
    assert SF.connection_series(_ts(), "nope").empty


def test_compare_draws_one_line_per_scenario_and_names_the_missing() -> None:
    fig = SF.plot_compare(_ts(), ["tcp", "s2", "s9"], title="t", scale=0.25)
    ax = fig.axes[0]
    assert len(ax.get_lines()) == 2
    assert "not in this run: s9" in ax.get_title()
    assert "scaled" in ax.get_ylabel()
    empty = SF.plot_compare(_ts(), ["s9"], title="only missing")
    assert "none of s9" in empty.axes[0].texts[0].get_text()


def test_packets_per_path_and_a_run_without_the_column() -> None:
    pp = SF.packets_by_path(_ts(), "tcp")
    assert list(pp.columns) == ["link01", "link02"] and (pp["link01"] == 100.0).all()  # 10 packets per 0.1 s
    fig = SF.plot_packets(_ts().drop(columns=["packets"]), "tcp")
    assert "no packets column" in fig.axes[0].texts[0].get_text()
