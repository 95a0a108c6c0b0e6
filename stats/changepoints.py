"""Change points of a metric across library versions, per context (everything but the version).

    changepoints.parquet/.csv (written by stats.analyse): one row per cell of a context run
    with two or more library versions: the context's keys, cell_id, library_version,
    version_order (natural order: 1.9 before 1.10), the metric, the cell's median (estimate, in
    the metric's unit), change_point (E-divisive, apache-otava, on the series of cell medians in
    version order) and note (why no change could be found, where so).

The report draws this table; it never runs the detection itself.
"""

from __future__ import annotations

import re

import numpy as np
import polars as pl

from stats import regress

METRIC = "rtt_net_p50_us"
CONTEXT_KEYS = ("prototype", "transport", "players", "workload", "params", "network_profile")
# "pinned" names whatever version the lock files hold: it has no place in a version order.
PINNED = "pinned"
SCHEMA: dict[str, pl.DataType] = {
    **{k: pl.String() for k in CONTEXT_KEYS},
    "players": pl.Int64(),
    "cell_id": pl.String(),
    "library_version": pl.String(),
    "version_order": pl.Int64(),
    "metric": pl.String(),
    "estimate": pl.Float64(),
    "change_point": pl.Boolean(),
    "note": pl.String(),
}


def version_key(version: str) -> tuple[tuple[int, int | str], ...]:
    """Natural order: 1.9 before 1.10, nightly-2026-01-02 before nightly-2026-01-10."""
    parts = re.findall(r"\d+|[^\d]+", version)
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in parts)


def per_version(runs: pl.DataFrame, cells: pl.DataFrame, metric: str = METRIC) -> pl.DataFrame:
    """The change-point table (see the module docstring); empty, with its columns, when no
    context was run with several library versions."""
    empty = pl.DataFrame(schema=SCHEMA)
    need = {"status", "cell_id", "library_version", *CONTEXT_KEYS}
    if runs.height == 0 or cells.height == 0 or not need <= set(runs.columns):
        return empty
    ok = runs.filter((pl.col("status") == "ok") & (pl.col("library_version") != PINNED))
    ctx = ok.select("cell_id", "library_version", *CONTEXT_KEYS).unique()
    medians = cells.filter(pl.col("metric") == metric).select("cell_id", "metric", "estimate")
    table = ctx.join(medians, on="cell_id").filter(
        pl.col("library_version").n_unique().over(CONTEXT_KEYS) >= 2
    )
    if table.height == 0:
        return empty
    versions = sorted(table["library_version"].unique().to_list(), key=version_key)
    order = {v: i for i, v in enumerate(versions)}
    table = table.with_columns(
        pl.col("library_version")
        .replace_strict(order, return_dtype=pl.Int64)
        .alias("version_order")
    )
    parts = []
    for _, g in table.group_by(CONTEXT_KEYS, maintain_order=True):
        g = g.sort("version_order")
        found = regress.detect_change_points(g["estimate"].to_numpy())
        flags = np.zeros(g.height, dtype=bool)
        flags[found.indices] = True
        parts.append(
            g.with_columns(pl.Series("change_point", flags), pl.lit(found.note).alias("note"))
        )
    return pl.concat(parts).select(list(SCHEMA)).cast(SCHEMA)  # type: ignore[arg-type]
