"""The analysis' tables: named numpy columns of one length, and their CSV files.

Hand-written on purpose, not pandas: `mptcplab analyze` must finish a small capture faster
than one bare tshark pass over it (issue 33: ~0.24 s here), and importing pandas alone takes
0.25-0.3 s on this machine where numpy takes 0.07 s. The analysis was numpy code inside
DataFrames already (columns taken out with ``to_numpy``, groups by integer codes); what it
needs of a table is this module: columns by name, rows taken by position or mask, tables
concatenated, sorted, and written as CSV byte for byte as pandas' ``to_csv(index=False)``
writes them (the files of earlier runs and the readers of results/ stay as they are).
Readers that want a DataFrame (figures, notebooks, tests) call ``to_pandas``, which imports
pandas then.

Three kinds of column:

* ``np.ndarray``: float64 (NaN: absent), int64, bool, or object (Python str / values);
* ``Cat``: strings as integer codes into a list of names (capture points, addresses: few
  distinct values over many rows; the native reader makes the codes);
* ``Nullable``: integers with a presence mask (MPTCP keys, sequence numbers, option fields:
  64-bit values a float64 would round).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import numpy as np

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True, eq=False)
class Cat:
    """Strings as codes into ``names`` (object array of str; a code indexes it). The codes
    take the smallest signed integer type that holds them, as pandas' categoricals do: a
    packet table has seven such columns, and int64 codes made it 10 MB larger for 137k rows."""

    codes: np.ndarray
    names: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.names)
        dt = np.int8 if n < 1 << 7 else np.int16 if n < 1 << 15 else np.int32 if n < 1 << 31 else np.int64
        if self.codes.dtype != dt:
            object.__setattr__(self, "codes", self.codes.astype(dt))

    @staticmethod
    def of(values: Iterable[object], names: Sequence[str] | None = None) -> Cat:
        """Codes of ``values`` (str; None/NaN read as "") into ``names`` (default: "" then the
        distinct values sorted)."""
        vals = ["" if v is None or (isinstance(v, float) and np.isnan(v)) else str(v) for v in values]
        if names is None:
            names = ["", *sorted({v for v in vals if v})]
        index = {n: i for i, n in enumerate(names)}
        missing = sorted({v for v in vals if v not in index})
        if missing:
            raise ValueError(f"values not among the names: {missing[:5]}")
        return Cat(np.fromiter((index[v] for v in vals), dtype=np.int64, count=len(vals)),
                   np.asarray(list(names), dtype=object))

    def __len__(self) -> int:
        return len(self.codes)

    def take(self, rows: np.ndarray) -> Cat:
        return Cat(self.codes[rows], self.names)

    def strings(self) -> np.ndarray:
        """The values, an object array of str."""
        return self.names[self.codes] if len(self.names) else np.full(len(self.codes), "", dtype=object)

    def get(self, i: int) -> str:
        return str(self.names[self.codes[i]])

    def code_of(self, name: str) -> int:
        """The code of ``name``, -1 when no row can have it."""
        hit = np.flatnonzero(self.names == name)
        return int(hit[0]) if len(hit) else -1

    def eq(self, name: str) -> np.ndarray:
        """Rows whose value is ``name``."""
        return self.codes == self.code_of(name)

    def unique(self) -> list[str]:
        """The values present, in order of first appearance."""
        _, first = np.unique(self.codes, return_index=True)
        return [str(self.names[self.codes[i]]) for i in np.sort(first)]


@dataclass(frozen=True, eq=False)
class Nullable:
    """Integers (int64 or uint64) where ``present``; the value under an absent row means
    nothing (``filled`` and ``get`` hide it)."""

    values: np.ndarray
    present: np.ndarray

    @staticmethod
    def of(values: Iterable[int | None], unsigned: bool = False) -> Nullable:
        vals = list(values)
        present = np.fromiter((v is not None for v in vals), dtype=bool, count=len(vals))
        dt = np.uint64 if unsigned else np.int64
        return Nullable(np.array([0 if v is None else int(v) for v in vals], dtype=dt), present)

    def __len__(self) -> int:
        return len(self.values)

    def take(self, rows: np.ndarray) -> Nullable:
        return Nullable(self.values[rows], self.present[rows])

    def get(self, i: int) -> int | None:
        return int(self.values[i]) if self.present[i] else None

    def filled(self, fill: int = 0) -> np.ndarray:
        return np.where(self.present, self.values, self.values.dtype.type(fill))



Column: TypeAlias = np.ndarray | Cat | Nullable
#: an empty column's kind: a numpy dtype, "cat" or "nullable"/"unullable"
Kind: TypeAlias = Literal["float", "int", "bool", "object", "cat", "nullable", "unullable"]
_EMPTY: dict[str, Any] = {"float": np.float64, "int": np.int64, "bool": bool, "object": object}


def column_of(values: Sequence[object], kind: Kind | None = None) -> Column:
    """A column from Python values (see Table.from_records)."""
    if kind == "cat":
        return Cat.of(values)
    if kind in ("nullable", "unullable"):
        return Nullable.of([None if v is None else int(v) for v in values],  # type: ignore[call-overload]
                           unsigned=kind == "unullable")
    if kind is not None:
        if kind == "float":
            return np.asarray([np.nan if v is None else v for v in values], dtype=np.float64)
        return np.asarray(values, dtype=_EMPTY[kind]) if values else np.zeros(0, dtype=_EMPTY[kind])
    if not values:
        return np.zeros(0, dtype=object)
    if all(isinstance(v, bool | np.bool_) for v in values):
        return np.asarray(values, dtype=bool)
    numbers = all(v is None or (isinstance(v, int | float | np.integer | np.floating)
                                and not isinstance(v, bool | np.bool_)) for v in values)
    if numbers and not all(v is None for v in values):
        if all(isinstance(v, int | np.integer) for v in values):
            return np.asarray(values, dtype=np.int64)
        return np.asarray([np.nan if v is None else float(v) for v in values], dtype=np.float64)  # type: ignore[arg-type]
    out = np.empty(len(values), dtype=object)
    out[:] = list(values)
    return out


def constant(value: object, n: int) -> np.ndarray:
    """An object column of ``n`` times ``value`` (a string, or None: absent)."""
    out = np.empty(n, dtype=object)
    out[:] = [value] * n
    return out


def factorize(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(codes, uniques) with codes numbered in order of first appearance, as pandas'
    ``factorize``: NaN gets -1."""
    vals = np.asarray(values)
    n = len(vals)
    nan = np.isnan(vals) if vals.dtype.kind == "f" else np.zeros(n, dtype=bool)
    ok = np.flatnonzero(~nan)
    codes = np.full(n, -1, dtype=np.int64)
    if not len(ok):
        return codes, vals[:0]
    uniq, first, inv = np.unique(vals[ok], return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")       # uniques in order of first appearance
    rank = np.empty(len(uniq), dtype=np.int64)
    rank[order] = np.arange(len(uniq))
    codes[ok] = rank[inv.ravel()]
    return codes, uniq[order]


def factorize_rows(arrays: Sequence[np.ndarray]) -> np.ndarray:
    """Codes of the rows of several integer arrays taken together (a row is the tuple of
    their values), numbered in order of first appearance."""
    if not len(arrays) or not len(arrays[0]):
        return np.zeros(len(arrays[0]) if len(arrays) else 0, dtype=np.int64)
    stacked = np.stack([np.asarray(a, dtype=np.int64) for a in arrays], axis=1)
    _, first, inv = np.unique(stacked, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(first), dtype=np.int64)
    rank[order] = np.arange(len(first))
    return rank[inv.ravel()]


def empty_column(kind: Kind) -> Column:
    if kind == "cat":
        return Cat(np.zeros(0, dtype=np.int64), np.asarray([""], dtype=object))
    if kind in ("nullable", "unullable"):
        return Nullable(np.zeros(0, dtype=np.uint64 if kind == "unullable" else np.int64), np.zeros(0, dtype=bool))
    return np.zeros(0, dtype=_EMPTY[kind])


class Table:
    """Named columns of one length, in order. Immutable by convention: the methods return
    new tables sharing the unchanged columns."""

    __slots__ = ("_cols", "_n")

    def __init__(self, columns: Mapping[str, Column] | None = None) -> None:
        cols = dict(columns or {})
        lengths = {len(c) for c in cols.values()}
        if len(lengths) > 1:
            raise ValueError(f"columns of different lengths: { {k: len(c) for k, c in cols.items()} }")
        self._cols = cols
        self._n = lengths.pop() if lengths else 0

    @staticmethod
    def empty(kinds: Mapping[str, Kind]) -> Table:
        return Table({name: empty_column(k) for name, k in kinds.items()})

    @staticmethod
    def from_records(rows: Sequence[Mapping[str, object]], columns: Sequence[str],
                     kinds: Mapping[str, Kind] | None = None) -> Table:
        """A table of ``columns`` from rows of Python values (a missing key: None). A column's
        kind is ``kinds``' or, as pandas infers it for the same rows: all bool -> bool; all
        int -> int64; numbers with a float or None among them -> float64 (None: NaN);
        anything else -> object. No rows: each column as ``kinds`` says, else object."""
        kinds = kinds or {}
        cols: dict[str, Column] = {}
        for c in columns:
            vals = [r.get(c) for r in rows]
            kind = kinds.get(c)
            cols[c] = column_of(vals, kind) if (rows or kind is None) else empty_column(kind)
        return Table(cols)

    # -- access ------------------------------------------------------------------------------

    def __len__(self) -> int:
        return self._n

    def __contains__(self, name: object) -> bool:
        return name in self._cols

    def __iter__(self) -> Iterator[str]:
        return iter(self._cols)

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(self._cols)

    @property
    def is_empty(self) -> bool:
        return self._n == 0

    def column(self, name: str) -> Column:
        return self._cols[name]

    def arr(self, name: str) -> np.ndarray:
        """A plain column (float, int, bool, object)."""
        c = self._cols[name]
        if not isinstance(c, np.ndarray):
            raise TypeError(f"column {name!r} is a {type(c).__name__}, not an array")
        return c

    def cat(self, name: str) -> Cat:
        c = self._cols[name]
        if not isinstance(c, Cat):
            raise TypeError(f"column {name!r} is not categorical")
        return c

    def nullable(self, name: str) -> Nullable:
        c = self._cols[name]
        if not isinstance(c, Nullable):
            raise TypeError(f"column {name!r} is not a nullable integer column")
        return c

    def strings(self, name: str) -> np.ndarray:
        """A string column's values as an object array (a Cat through its names)."""
        c = self._cols[name]
        if isinstance(c, Cat):
            return c.strings()
        if isinstance(c, Nullable):
            raise TypeError(f"column {name!r} holds integers")
        return c

    def row(self, i: int) -> dict[str, object]:
        """Row ``i`` as Python values (None where absent)."""
        return {name: _value(c, i) for name, c in self._cols.items()}

    def rows(self) -> Iterator[dict[str, object]]:
        for i in range(self._n):
            yield self.row(i)

    # -- new tables --------------------------------------------------------------------------

    def take(self, rows: np.ndarray | Sequence[int]) -> Table:
        """The rows at ``rows``: positions, or a boolean mask of the table's length."""
        idx = np.asarray(rows)
        if idx.dtype == bool:
            idx = np.flatnonzero(idx)
        return Table({k: (c.take(idx) if not isinstance(c, np.ndarray) else c[idx]) for k, c in self._cols.items()})

    def with_columns(self, **columns: Column) -> Table:
        """This table with ``columns`` added (or replacing those of the same name)."""
        return Table({**self._cols, **columns})

    def select(self, names: Sequence[str]) -> Table:
        return Table({n: self._cols[n] for n in names})

    def rename(self, names: Mapping[str, str]) -> Table:
        return Table({names.get(k, k): c for k, c in self._cols.items()})

    def sort(self, by: Sequence[str]) -> Table:
        """Rows by ``by`` (first name first), ascending and stable, NaN last; a Cat sorts by
        its names, strings by their value."""
        return self.take(self.order(by))

    def order(self, by: Sequence[str]) -> np.ndarray:
        """The row positions ``sort`` takes."""
        keys = [_sort_key(self._cols[n]) for n in reversed(by)]
        return np.lexsort(keys) if keys else np.arange(self._n)

    @staticmethod
    def concat(tables: Sequence[Table]) -> Table:
        """Rows of ``tables`` in order; every table has the same columns (a Cat's names are
        merged)."""
        tables = [t for t in tables if t.columns]
        if not tables:
            return Table()
        names = tables[0].columns
        for t in tables[1:]:
            if t.columns != names:
                raise ValueError(f"concat of tables with other columns: {names} and {t.columns}")
        return Table({n: _concat([t._cols[n] for t in tables]) for n in names})

    # -- out ---------------------------------------------------------------------------------

    def csv_text(self) -> str:
        """What pandas' ``DataFrame.to_csv(index=False)`` writes for the same columns: a
        header line, one line per row, ``\\n`` line ends, minimal quoting; NaN, None and an
        absent integer as an empty field, floats as numpy's shortest repr (``0.1``,
        ``1e-05``, ``3.0``), booleans ``True``/``False``."""
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(self.columns)
        if self._n:
            w.writerows(zip(*(_texts(c) for c in self._cols.values()), strict=True))
        return buf.getvalue()

    def to_csv(self, path: Path) -> None:
        path.write_text(self.csv_text())

    def to_pandas(self) -> pd.DataFrame:
        """A DataFrame of the same columns (Cat: categorical, Nullable: pandas' nullable
        Int64/UInt64); imports pandas."""
        import pandas as pd

        data: dict[str, Any] = {}
        for k, c in self._cols.items():
            if isinstance(c, Cat):
                data[k] = pd.Categorical.from_codes(c.codes, categories=pd.Index(c.names, dtype=object),
                                                    validate=False)
            elif isinstance(c, Nullable):
                data[k] = pd.arrays.IntegerArray(c.values, ~c.present)
            else:
                data[k] = c
        return pd.DataFrame(data, copy=False) if data else pd.DataFrame()

    @staticmethod
    def from_pandas(df: pd.DataFrame) -> Table:
        """The table of a DataFrame (categoricals, nullable integers and plain columns)."""
        import pandas as pd

        cols: dict[str, Column] = {}
        for k in df.columns:
            s = df[k]
            if isinstance(s.dtype, pd.CategoricalDtype):
                names = np.asarray([str(v) for v in s.cat.categories], dtype=object)
                codes = s.cat.codes.to_numpy().astype(np.int64)
                if (codes < 0).any():       # NaN in a categorical: the empty string
                    if "" not in set(names):
                        names = np.concatenate([names, np.asarray([""], dtype=object)])
                    codes = np.where(codes < 0, int(np.flatnonzero(names == "")[0]), codes)
                cols[str(k)] = Cat(codes, names)
            elif isinstance(s.dtype, pd.api.extensions.ExtensionDtype) and s.dtype.kind in "iu":
                unsigned = s.dtype.kind == "u"
                present = s.notna().to_numpy()
                vals = s.to_numpy(dtype=np.uint64 if unsigned else np.int64, na_value=0)
                cols[str(k)] = Nullable(vals, present)
            else:
                cols[str(k)] = s.to_numpy()
        return Table(cols)


# -- helpers -------------------------------------------------------------------------------


def _value(c: Column, i: int) -> object:
    if isinstance(c, Cat):
        return c.get(i)
    if isinstance(c, Nullable):
        return c.get(i)
    v = c[i]
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and np.isnan(v):
        return None
    return v


def _texts(c: Column) -> list[str]:
    """A column's CSV fields, as pandas writes them."""
    if isinstance(c, Cat):
        return [str(v) for v in c.strings().tolist()]
    if isinstance(c, Nullable):
        return [str(v) if p else "" for v, p in zip(c.values.tolist(), c.present.tolist(), strict=True)]
    if c.dtype.kind == "f":
        out = c.astype(str)
        out[np.isnan(c)] = ""
        return out.tolist()
    if c.dtype.kind in "iub":
        return c.astype(str).tolist()
    return ["" if v is None or (isinstance(v, float) and v != v) else str(v) for v in c.tolist()]


def _sort_key(c: Column) -> np.ndarray:
    if isinstance(c, Cat):
        # by name: the codes' order is the names' order only for sorted names
        rank = np.argsort(np.argsort(c.names.astype(str), kind="stable"), kind="stable")
        return rank[c.codes] if len(c.names) else c.codes
    if isinstance(c, Nullable):
        return c.filled(0)
    if c.dtype == object:       # strings: by their rank (None and "" first)
        _, rank = np.unique(np.asarray(["" if v is None else str(v) for v in c.tolist()]), return_inverse=True)
        return rank.ravel()
    return c


def _concat(cols: list[Column]) -> Column:
    first = cols[0]
    if isinstance(first, Cat):
        cats = [c for c in cols if isinstance(c, Cat)]
        if len(cats) != len(cols):
            raise ValueError("concat of a categorical column with another kind")
        if all(c.names is first.names or np.array_equal(c.names, first.names) for c in cats):
            return Cat(np.concatenate([c.codes for c in cats]), first.names)
        names = list(dict.fromkeys(n for c in cats for n in c.names.tolist()))
        index = {n: i for i, n in enumerate(names)}
        codes = [np.asarray([index[n] for n in c.names.tolist()], dtype=np.int64)[c.codes] if len(c.codes)
                 else np.zeros(0, dtype=np.int64) for c in cats]
        return Cat(np.concatenate(codes), np.asarray(names, dtype=object))
    if isinstance(first, Nullable):
        nulls = [c for c in cols if isinstance(c, Nullable)]
        if len(nulls) != len(cols):
            raise ValueError("concat of a nullable column with another kind")
        return Nullable(np.concatenate([c.values for c in nulls]), np.concatenate([c.present for c in nulls]))
    arrays = [c for c in cols if isinstance(c, np.ndarray)]
    if len(arrays) != len(cols):
        raise ValueError("concat of an array column with another kind")
    return np.concatenate(arrays)
