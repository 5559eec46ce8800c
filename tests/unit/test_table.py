"""analysis/table.py: the analysis' tables without pandas. Its CSV must be what pandas'
``to_csv(index=False)`` wrote for the same columns (the files of earlier runs, and every
reader of results/, stay as they were), so pandas is the oracle here: random tables of every
column kind, written both ways."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mptcplab.analysis.table import Cat, Column, Nullable, Table, factorize, factorize_rows

FLOATS = st.one_of(st.floats(allow_nan=True, allow_infinity=False, width=64),
                   st.sampled_from([0.1, 1e-05, 3.0, 1e16, 123456789.123, -0.0, 2.5e-300]))
TEXTS = st.one_of(st.none(), st.text(alphabet='ab,"\n x;', max_size=6))


@st.composite
def tables(draw: st.DrawFn) -> Table:
    n = draw(st.integers(0, 12))
    names = draw(st.lists(st.sampled_from(["", "10.0.1.2", "fd00::2", "a,b"]), min_size=1, max_size=4, unique=True))
    cols: dict[str, Column] = {
        "f": np.asarray(draw(st.lists(FLOATS, min_size=n, max_size=n)), dtype=np.float64),
        "i": np.asarray(draw(st.lists(st.integers(-2**62, 2**62), min_size=n, max_size=n)), dtype=np.int64),
        "b": np.asarray(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool),
        "o": np.asarray(draw(st.lists(TEXTS, min_size=n, max_size=n)) + [None], dtype=object)[:n],
        "c": Cat(np.asarray(draw(st.lists(st.integers(0, len(names) - 1), min_size=n, max_size=n)), dtype=np.int64),
                 np.asarray(names, dtype=object)),
        "u": Nullable.of(draw(st.lists(st.one_of(st.none(), st.integers(0, 2**64 - 1)), min_size=n, max_size=n)),
                         unsigned=True),
        "s": Nullable.of(draw(st.lists(st.one_of(st.none(), st.integers(-2**63, 2**63 - 1)), min_size=n, max_size=n))),
    }
    return Table(cols)


@settings(max_examples=150, deadline=None)
@given(tables())
def test_the_csv_is_what_pandas_writes(t: Table) -> None:
    assert t.csv_text() == t.to_pandas().to_csv(index=False)


@settings(max_examples=100, deadline=None)
@given(tables(), st.data())
def test_rows_taken_by_mask_or_position_and_sorted_as_pandas_does(t: Table, data: st.DataObject) -> None:
    df = t.to_pandas()
    mask = np.asarray(data.draw(st.lists(st.booleans(), min_size=len(t), max_size=len(t))), dtype=bool)
    assert t.take(mask).csv_text() == df[mask].to_csv(index=False)
    order = data.draw(st.permutations(list(range(len(t)))))
    assert t.take(np.asarray(order, dtype=np.int64)).csv_text() == df.iloc[order].to_csv(index=False)
    # a stable sort by a float and an int column, NaN last as pandas puts it
    got = t.sort(["i", "f"]).csv_text()
    assert got == df.sort_values(["i", "f"], kind="stable", na_position="last").to_csv(index=False)


def test_pandas_round_trip_keeps_every_kind() -> None:
    t = Table({"c": Cat.of(["x", "", "y"]), "u": Nullable.of([1, None, 2**64 - 1], unsigned=True),
               "f": np.array([0.5, np.nan, 2.0]), "b": np.array([True, False, True])})
    back = Table.from_pandas(t.to_pandas())
    assert back.csv_text() == t.csv_text()
    assert isinstance(back.column("c"), Cat) and isinstance(back.column("u"), Nullable)
    assert back.nullable("u").get(2) == 2**64 - 1 and back.nullable("u").get(1) is None


def test_concat_merges_the_names_of_categorical_columns() -> None:
    a = Table({"c": Cat.of(["p", "q"])})
    b = Table({"c": Cat.of(["r", "p"])})
    both = Table.concat([a, b])
    assert list(both.strings("c")) == ["p", "q", "r", "p"]
    with pytest.raises(ValueError, match="other columns"):
        Table.concat([a, Table({"d": np.zeros(1)})])
    with pytest.raises(ValueError, match="different lengths"):
        Table({"a": np.zeros(2), "b": np.zeros(3)})


def test_records_are_typed_as_pandas_infers_them() -> None:
    rows: list[dict[str, object]] = [{"n": 1, "m": None, "ok": True, "x": [1500], "s": "a,b", "g": 1.0},
                                     {"n": 2, "m": 3, "ok": None, "x": [], "s": None, "g": 2}]
    cols = ["n", "m", "ok", "x", "s", "g"]
    assert Table.from_records(rows, cols).csv_text() == pd.DataFrame(rows, columns=cols).to_csv(index=False)
    assert Table.from_records([], cols).csv_text() == pd.DataFrame([], columns=cols).to_csv(index=False)


def test_factorize_numbers_by_first_appearance_and_nan_apart() -> None:
    v = np.array([3.0, 1.0, np.nan, 3.0, 2.0, 1.0])
    codes, uniq = factorize(v)
    want, want_uniq = pd.factorize(v)
    assert codes.tolist() == want.tolist() and uniq.tolist() == want_uniq.tolist()
    rows = factorize_rows([np.array([1, 1, 2, 1]), np.array([5, 6, 5, 5])])
    assert rows.tolist() == [0, 1, 2, 0]


def test_the_capture_analysis_imports_no_pandas(tmp_path: Path) -> None:
    """`mptcplab analyze` must not import pandas (or matplotlib) unless asked for figures:
    their import alone is longer than a tshark pass over a small capture."""

    pcap = Path(__file__).resolve().parents[1] / "data" / "tcp__client_eth1.pcap"
    code = ("import sys; from mptcplab.cli import main; "
            f"rc = main(['analyze', {str(pcap)!r}, '--out', {str(tmp_path / 'o')!r}]); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pandas', 'matplotlib', 'scipy')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout
    assert (tmp_path / "o" / "summary.json").is_file()
