"""Reading a runs table (runs.parquet as a polars DataFrame, one row per run): the ok runs and a
metric column as floats. The statistics that compare or fit runs (stats.scaling, stats.regress)
take their inputs through these two, so "ok" and "missing value" mean the same everywhere."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import polars as pl


def float_column(runs: pl.DataFrame, name: str) -> npt.NDArray[np.float64]:
    """Column ``name`` as float64; nulls and values that do not parse as numbers become NaN."""
    col = runs.get_column(name).cast(pl.Float64, strict=False).fill_null(float("nan"))
    return np.asarray(col.to_numpy(), dtype=np.float64)


def ok_runs(runs: pl.DataFrame, columns: Sequence[str]) -> pl.DataFrame:
    """The runs with status ok (all runs if there is no status column).

    Raises ValueError naming the missing columns when ``columns`` are not all in the table.
    """
    missing = [c for c in columns if c not in runs.columns]
    if missing:
        raise ValueError(f"runs table lacks column(s) {missing}; has {runs.columns}")
    if "status" in runs.columns:
        return runs.filter(pl.col("status").cast(pl.String) == "ok")
    return runs
