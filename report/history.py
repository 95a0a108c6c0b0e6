"""A regression report over nightly results: per-cell trends with change points and the verdicts
of the newest night against the one before.

    python -m report.history NIGHT1 NIGHT2 [NIGHT3 ...] --out report/_output/history/index.html
                             [--metric rtt_net_p50_us] [--min-effect 0.05] [--tables DIR]

Each NIGHT is a results directory of the stats stage (data/results/<campaign>, or a campaign
name under data/results/), oldest first; its label is the library version its runs record when
they all record one, else the directory's name. Everything is computed here with the stats
stage's own functions (order-statistic intervals, stats.regress.per_cell, E-divisive change
points) and written as tables (--tables, default next to the HTML); report/history.qmd only
draws them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from report import render
from stats import intervals, regress
from workflow.campaign import records

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "history.qmd"
REPO = HERE.parent
LEVEL = 0.95


class HistoryError(ValueError):
    """A results directory cannot be used; the message names it."""


def _label(runs: pl.DataFrame, path: Path) -> str:
    versions = (
        runs["library_version"].unique().to_list() if "library_version" in runs.columns else []
    )
    if len(versions) == 1 and versions[0] not in (None, "pinned"):
        return str(versions[0])
    return path.name


def load(paths: Sequence[Path]) -> list[tuple[str, pl.DataFrame]]:
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
                    "ci_low": None if math.isnan(iv.low) else iv.low,
                    "ci_high": None if math.isnan(iv.high) else iv.high,
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
    (base_label, base), (cand_label, cand) = nights[-2], nights[-1]
    found = regress.per_cell(base, cand, metric, min_effect=min_effect, level=LEVEL)
    rows = [
        dataclasses.asdict(v) | {"baseline": base_label, "candidate": cand_label} for v in found
    ]
    return pl.DataFrame(rows, infer_schema_length=None)


def findings(
    trend: pl.DataFrame, verdict: pl.DataFrame, metric: str, min_effect: float
) -> list[str]:
    out = []
    if verdict.height:
        base, cand = verdict["baseline"][0], verdict["candidate"][0]
        for r in verdict.sort("cell_id").iter_rows(named=True):
            if r["verdict"] in (regress.REGRESSION, regress.IMPROVEMENT):
                out.append(
                    f"{r['cell_id']}: {r['verdict']} from {base} to {cand}: {metric} ratio "
                    f"{r['ratio']:.3g} [{r['ci_low']:.3g}, {r['ci_high']:.3g}] "
                    f"(BH-adjusted p {r['p_adjusted']:.3g}, {r['n_baseline']} and "
                    f"{r['n_candidate']} runs)"
                )
        counts = verdict.group_by("verdict").len().sort("verdict")
        summary = ", ".join(f"{n} {v}" for v, n in counts.iter_rows())
        out.append(
            f"{base} to {cand}: {summary} over {verdict.height} cells (a change counts when it "
            f"exceeds {100 * min_effect:.0f} %, its interval excludes 1 and the BH-adjusted "
            f"Mann-Whitney p is at most {1 - LEVEL:.2f})"
        )
    cps = trend.filter(pl.col("change_point"))
    for r in cps.iter_rows(named=True):
        prev = trend.filter(
            (pl.col("cell_id") == r["cell_id"]) & (pl.col("night_order") == r["night_order"] - 1)
        )
        before = prev["median"][0] if prev.height else None
        change = "" if not before else f" ({r['median'] / before:.3g}x the night before)"
        out.append(f"{r['cell_id']}: change point at {r['night']}{change}")
    n_nights = trend["night"].n_unique()
    if n_nights < regress.CP_MIN_POINTS:
        out.append(f"change points need at least {regress.CP_MIN_POINTS} nights; {n_nights} given")
    return out


def build(
    paths: Sequence[Path], tables: Path, metric: str = "rtt_net_p50_us", min_effect: float = 0.05
) -> dict[str, Any]:
    if len(paths) < 2:
        raise HistoryError("need at least two nights (results directories), oldest first")
    nights = load(paths)
    trend = trends(nights, metric)
    verdict = verdicts(nights, metric, min_effect)
    records.replace_atomically(tables / "trends.csv", trend.write_csv)
    records.replace_atomically(tables / "verdicts.csv", verdict.write_csv)
    doc = {
        "metric": metric,
        "min_effect": min_effect,
        "level": LEVEL,
        "nights": [label for label, _ in nights],
        "sources": [p.name for p in paths],
        "findings": findings(trend, verdict, metric, min_effect),
    }
    records.write_text(tables / "history.json", json.dumps(doc, indent=2) + "\n")
    return doc


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m report.history", description=__doc__)
    ap.add_argument("nights", nargs="+", help="results directories or campaign names, oldest first")
    ap.add_argument(
        "--out", type=Path, default=REPO / "report" / "_output" / "history" / "index.html"
    )
    ap.add_argument("--tables", type=Path, help="where the tables go (default: beside --out)")
    ap.add_argument("--metric", default="rtt_net_p50_us", help="runs.parquet column")
    ap.add_argument("--min-effect", type=float, default=0.05, help="smallest change that counts")
    ap.add_argument("--data-dir", type=Path, default=REPO / "data")
    args = ap.parse_args(argv)
    paths = [Path(n) if Path(n).is_dir() else args.data_dir / "results" / n for n in args.nights]
    tables = args.tables or args.out.parent / "tables"
    try:
        doc = build(paths, tables, args.metric, args.min_effect)
        render.render({"results": str(tables.resolve())}, args.out, source=SOURCE)
    except (HistoryError, render.RenderError) as exc:
        print(f"history: {exc}")
        return 2
    for line in doc["findings"]:
        print(f"- {line}")
    print(f"history report: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
