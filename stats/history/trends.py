"""Per-cell trends over nights with change points, and the verdicts of the newest night against
the one before.

    netstick history compute NIGHT1 NIGHT2 [NIGHT3 ...] --out DIR
    netstick compare NIGHT1 NIGHT2 [NIGHT3 ...] [--out FILE]

Each NIGHT is a results directory of the stats stage (data/results/<campaign>, or a campaign
name under data/results/), oldest first; its label is the library version its runs record when
they all record one, else the directory's name. compute() writes into DIR: trends.csv (per cell
and night: the median over ok runs with its order-statistic interval, and whether a change point
starts there), verdicts.csv (stats.regress.per_cell, newest night against the one before) and
history.json (the findings as records, stats.findings); report/history.py draws them. compare()
is the same verdicts and change points as one document, for the command line.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from stats import intervals, regress
from stats.findings import LEVEL, finding, num
from stats.history import DEFAULT_METRIC, DEFAULT_MIN_EFFECT, HistoryError, metric_unit
from workflow.files import replace_atomically, write_json


def _label(runs: pl.DataFrame, path: Path) -> str:
    versions = (
        runs["library_version"].unique().to_list() if "library_version" in runs.columns else []
    )
    if len(versions) == 1 and versions[0] not in (None, "pinned"):
        return str(versions[0])
    return path.name


def load(paths: Sequence[Path]) -> list[tuple[str, pl.DataFrame]]:
    """(label, runs table) per night, oldest first."""
    out = []
    for p in paths:
        f = p / "runs.parquet"
        if not f.is_file():
            raise HistoryError(f"{f}: missing; run `netstick stats` for that night first")
        runs = pl.read_parquet(f)
        out.append((_label(runs, p), runs))
    labels = [lab for lab, _ in out]
    if len(set(labels)) != len(labels):
        # Two nights with the same version (a rerun): keep them apart by position.
        out = [(f"{i + 1}:{lab}", r) for i, (lab, r) in enumerate(out)]
    return out


def trends(nights: Sequence[tuple[str, pl.DataFrame]], metric: str) -> pl.DataFrame:
    """Per cell and night: median over ok runs with its order-statistic interval, and whether a
    change point (E-divisive over the cell's nightly medians) starts at that night."""
    rows: list[dict[str, Any]] = []
    for order, (label, runs) in enumerate(nights):
        if metric not in runs.columns:
            raise HistoryError(f"night {label}: runs.parquet has no column {metric!r}")
        ok = runs.filter(pl.col("status") == "ok")
        for (cell,), group in ok.group_by(["cell_id"], maintain_order=True):
            vals = group[metric].cast(pl.Float64).drop_nulls().to_numpy()
            vals = vals[np.isfinite(vals)]
            iv = intervals.quantile_ci(vals, 0.5, level=LEVEL)
            rows.append(
                {
                    "cell_id": cell,
                    "night": label,
                    "night_order": order,
                    "median": iv.estimate if vals.size else None,
                    "ci_low": num(iv.low),
                    "ci_high": num(iv.high),
                    "n_runs": int(vals.size),
                }
            )
    table = pl.DataFrame(rows, infer_schema_length=None)
    parts = []
    for _, g in table.sort("night_order").group_by("cell_id", maintain_order=True):
        cps = regress.detect_change_points(g["median"].cast(pl.Float64).fill_null(float("nan")))
        flags = np.zeros(g.height, dtype=bool)
        flags[cps.indices] = True
        parts.append(
            g.with_columns(pl.Series("change_point", flags), pl.lit(cps.note).alias("cp_note"))
        )
    return pl.concat(parts).sort("cell_id", "night_order")


def verdicts(
    nights: Sequence[tuple[str, pl.DataFrame]], metric: str, min_effect: float
) -> pl.DataFrame:
    """stats.regress.per_cell of the newest night against the one before, one row per cell."""
    (base_label, base), (cand_label, cand) = nights[-2], nights[-1]
    found = regress.per_cell(base, cand, metric, min_effect=min_effect, level=LEVEL)
    rows = [
        dataclasses.asdict(v) | {"baseline": base_label, "candidate": cand_label} for v in found
    ]
    return pl.DataFrame(rows, infer_schema_length=None)


def findings(
    trend: pl.DataFrame, verdict: pl.DataFrame, metric: str, min_effect: float
) -> list[dict[str, Any]]:
    """Regressions and improvements of the newest night, the verdict counts, every change
    point, and a record saying so when there are too few nights to find change points."""
    out = []
    if verdict.height:
        base, cand = verdict["baseline"][0], verdict["candidate"][0]
        pair = {"metric": metric, "baseline": base, "candidate": cand}
        for r in verdict.sort("cell_id").iter_rows(named=True):
            if r["verdict"] in (regress.REGRESSION, regress.IMPROVEMENT):
                out.append(
                    finding(
                        "night_verdict",
                        {"cell_id": r["cell_id"], **pair},
                        r["ratio"],  # median(candidate) / median(baseline)
                        "ratio",
                        r["ci_low"],
                        r["ci_high"],
                        r["level"],
                        verdict=r["verdict"],
                        p_adjusted=num(r["p_adjusted"]),
                        n_baseline=r["n_baseline"],
                        n_candidate=r["n_candidate"],
                    )
                )
        counts = verdict.group_by("verdict").len().sort("verdict")
        out.append(
            finding(
                "verdict_counts",
                pair,
                verdict.height,  # cells compared
                "count",
                cells_by_verdict=dict(counts.iter_rows()),
                min_effect=min_effect,
                max_pvalue=1 - LEVEL,  # BH-adjusted Mann-Whitney p at most this
            )
        )
    for r in trend.filter(pl.col("change_point")).iter_rows(named=True):
        prev = trend.filter(
            (pl.col("cell_id") == r["cell_id"]) & (pl.col("night_order") == r["night_order"] - 1)
        )
        before = prev["median"][0] if prev.height else None
        ratio = r["median"] / before if before and r["median"] is not None else None
        out.append(
            finding(
                "change_point",
                {"cell_id": r["cell_id"], "night": r["night"], "metric": metric},
                ratio,  # the night's median over the night before's
                "ratio",
            )
        )
    n_nights = trend["night"].n_unique()
    if n_nights < regress.CP_MIN_POINTS:
        out.append(
            finding(
                "too_few_nights",
                {"metric": metric},
                n_nights,
                "count",
                min_nights=regress.CP_MIN_POINTS,
            )
        )
    return out


def compute(
    nights: Sequence[Path],
    out: Path,
    metric: str = DEFAULT_METRIC,
    min_effect: float = DEFAULT_MIN_EFFECT,
) -> dict[str, Any]:
    """Trends, verdicts and findings of the nights (results directories, oldest first) as
    trends.csv, verdicts.csv and history.json in out; returns the history.json document."""
    if len(nights) < 2:
        raise HistoryError("need at least two nights (results directories), oldest first")
    loaded = load(nights)
    trend = trends(loaded, metric)
    verdict = verdicts(loaded, metric, min_effect)
    replace_atomically(out / "trends.csv", trend.write_csv)
    replace_atomically(out / "verdicts.csv", verdict.write_csv)
    doc = {
        "metric": metric,
        "unit": metric_unit(metric),
        "min_effect": min_effect,
        "level": LEVEL,
        "nights": [label for label, _ in loaded],
        "sources": [p.name for p in nights],
        "findings": findings(trend, verdict, metric, min_effect),
    }
    write_json(out / "history.json", doc, sort_keys=False, strict=True)
    return doc


def resolve(names: Sequence[str], data_dir: Path) -> list[Path]:
    """Results directories as given, or campaign names under data_dir/results."""
    return [Path(n) if Path(n).is_dir() else data_dir / "results" / n for n in names]


def change_points(trend: pl.DataFrame) -> dict[str, list[int]]:
    """Per cell of a trends table, the nights (by position, oldest 0) where a change point
    starts."""
    marked = trend.filter(pl.col("change_point")).sort("cell_id", "night_order")
    cells = trend["cell_id"].unique(maintain_order=True)
    found: dict[str, list[int]] = {cell: [] for cell in cells}
    for cell, order in marked.select("cell_id", "night_order").iter_rows():
        found[cell].append(int(order))
    return found


def compare(
    nights: Sequence[Path],
    metric: str = DEFAULT_METRIC,
    min_effect: float = DEFAULT_MIN_EFFECT,
) -> dict[str, Any]:
    """The newest night against the one before, cell by cell (verdicts), and each cell's change
    points over all the nights (`netstick compare`): the document of compute() without its
    files."""
    if len(nights) < 2:
        raise HistoryError("need at least two nights (results directories), oldest first")
    loaded = load(nights)
    return {
        "baseline": str(nights[-2]),
        "candidate": str(nights[-1]),
        "metric": metric,
        "min_effect": min_effect,
        "cells": verdicts(loaded, metric, min_effect).to_dicts(),
        "change_points": change_points(trends(loaded, metric)),
    }
