"""Suspect runs: a run far from its siblings, and a run measured beside a busy neighbour.

Far from its siblings (one rule, stated here and in the report): Iglewicz and Hoaglin's modified
z-score ("How to Detect and Handle Outliers", 1993) on the logarithm of the run's value among the
ok runs of its cell,

    z = 0.6745 (log x - median(log x)) / MAD(log x),

far when |z| > Z_MAX (3.5) and the value is at least FACTOR_MIN (2) times, or at most half of,
the cell's median. The second condition is needed with the few runs of a cell: the MAD of 6 runs
is itself so uncertain that |z| passes 3.5 for some run in about 17 % of 6-run cells drawn from
one log-normal distribution, and 10 in 1 % of them. With both conditions no run of 20,000 such
cells is named at 10 % spread, and 0.8 % of runs (in 4 % of the cells) at 30 % spread, a noisy
p99 (simulated; tests/python/unit/test_suspects.py holds the rule to it). Logarithms because the
metrics are positive and ratio-scale (a run at twice the median is as far as one at half of it).
When more than half of the runs share one value the MAD is 0 and the mean absolute deviation
stands in (z = (log x - median) / (1.2533 mean absolute deviation)); when that is 0 too every
run has the same value and none is far. Fewer than MIN_RUNS runs name no one: with three runs
one cannot say which is the odd one out.

A busy neighbour is stats.interference's flag (other processes' CPU or steal during the window);
a stalled run is stats.stalls' (the server's ticks or every player's probes stopped).

The comparisons keep a far run (it was measured; the median and Mann-Whitney resist it) and
leave a busy or stalled run out; each comparison a suspect run touches names it and gives the
result with that choice reversed (stats.comparisons).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt
import polars as pl

from stats import interference
from stats.runs_frame import float_column, ok_runs

Z_MAX: Final = 3.5
FACTOR_MIN: Final = 2.0
MIN_RUNS: Final = 4
_MAD_SCALE: Final = 0.6745  # the MAD of a standard normal, as Iglewicz and Hoaglin scale it
_MEAN_AD_SCALE: Final = 1.2533  # sqrt(pi / 2): mean absolute deviation to sigma
RULE: Final = (
    f"a run is far from its siblings when the modified z-score of the logarithm of its value "
    f"among its cell's ok runs exceeds {Z_MAX} (Iglewicz and Hoaglin) and the value is at least "
    f"{FACTOR_MIN:g} times or at most 1/{FACTOR_MIN:g} of the cell's median (from {MIN_RUNS} runs)"
)


def far(values: npt.ArrayLike) -> npt.NDArray[np.bool_]:
    """Which values are far from their siblings (RULE)."""
    x = np.asarray(values, dtype=np.float64)
    z = modified_z(x)
    if not np.isfinite(z).any():
        return np.zeros(x.shape, dtype=bool)
    with np.errstate(all="ignore"):
        factor = np.abs(np.log(x / np.nanmedian(np.where(x > 0, x, np.nan))))
    return np.isfinite(z) & (np.abs(z) > Z_MAX) & (factor >= np.log(FACTOR_MIN))


def modified_z(values: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Each value's modified z-score on the log scale (NaN for a non-positive or missing value,
    and for all values when fewer than MIN_RUNS are usable or all are equal)."""
    x = np.asarray(values, dtype=np.float64)
    z = np.full(x.shape, np.nan)
    usable = np.isfinite(x) & (x > 0)
    if usable.sum() < MIN_RUNS:
        return z
    logs = np.log(x[usable])
    centre = float(np.median(logs))
    dev = logs - centre
    mad = float(np.median(np.abs(dev)))
    if mad > 0:
        z[usable] = _MAD_SCALE * dev / mad
        return z
    mean_ad = float(np.mean(np.abs(dev)))
    if mean_ad > 0:
        z[usable] = dev / (_MEAN_AD_SCALE * mean_ad)
    return z


def far_runs(runs: pl.DataFrame, metrics: Sequence[str]) -> pl.DataFrame:
    """Every (cell, run, metric) whose ok run is far from its siblings: cell_id, run_id, metric,
    value, cell_median (of the cell's ok runs) and z."""
    ok = ok_runs(runs, ("cell_id", "run_id"))
    rows: list[dict[str, object]] = []
    for (cell_id,), group in ok.group_by(["cell_id"], maintain_order=True):
        for metric in metrics:
            if metric not in group.columns:
                continue
            values = float_column(group, metric)
            z, named = modified_z(values), far(values)
            finite = values[np.isfinite(values)]
            for run_id, value, score, hit in zip(group["run_id"], values, z, named, strict=True):
                if hit:
                    rows.append(
                        {"cell_id": cell_id, "run_id": run_id, "metric": metric,
                         "value": float(value), "cell_median": float(np.median(finite)),
                         "z": float(score)}
                    )  # fmt: skip
    schema = {
        "cell_id": pl.String, "run_id": pl.String, "metric": pl.String, "value": pl.Float64,
        "cell_median": pl.Float64, "z": pl.Float64,
    }  # fmt: skip
    return pl.DataFrame(rows, schema=schema)


def left_out(runs: pl.DataFrame) -> pl.Expr:
    """The ok runs the comparisons leave out: measured beside a busy neighbour
    (stats.interference) or stalled inside the window (stats.stalls)."""
    stalled = (
        pl.col("stalled").cast(pl.Boolean).fill_null(False)
        if "stalled" in runs.columns
        else pl.lit(False)
    )
    return interference.interfered(runs) | ((pl.col("status") == "ok") & stalled)


def left_out_runs(runs: pl.DataFrame) -> pl.DataFrame:
    """The ok runs left out of the comparisons: cell_id, run_id, why ("busy" or "stalled") and
    what was measured (others_cpu_cores, steal_cores, stall_reason)."""
    ok = ok_runs(runs, ("cell_id", "run_id"))
    out = ok.filter(left_out(ok))
    busy = interference.interfered(out)
    cols = [c for c in ("others_cpu_cores", "steal_cores", "stall_reason") if c in out.columns]
    return out.select(
        "cell_id",
        "run_id",
        pl.when(busy).then(pl.lit("busy")).otherwise(pl.lit("stalled")).alias("why"),
        *cols,
    )
