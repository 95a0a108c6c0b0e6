"""The newest night of the history store against a rolling baseline, and the confirming
re-run of the cells it suspects.

    netstick history decide CAMPAIGN        regressions.json (confirmed: null), night-trends.csv
    netstick history confirm-plan|confirm   the re-run's campaign; confirmed filled in

decide() compares the newest night with the runs of the last k nights on the same hardware,
confirm() fills in whether a re-run of the suspected cells (the campaign
workflow.campaign.confirm writes) agrees, and regressions.json with night-trends.csv is what
report/history.qmd draws of it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import polars as pl

from stats import intervals, power, regress
from stats.findings import LEVEL, num
from stats.history import (
    DEFAULT_METRIC,
    DEFAULT_MIN_EFFECT,
    HistoryError,
    metric_unit,
    min_effect_of,
)
from stats.history import versions as version_checks
from stats.history.store import CELL_COLUMNS, RUNS_SUFFIX
from stats.interference import interfered, usable
from workflow.files import replace_atomically, write_json, write_text

DEFAULT_K: Final = 5  # baseline: the last k comparable nights
# Below this many baseline nights the night-to-night spread is unknown, and runs within one
# night understate how much nights differ: nothing is suspected (the cells are still decided).
MIN_SPREAD_NIGHTS: Final = 2
REGRESSIONS_SCHEMA: Final = 1


def _runs_of(history: pl.DataFrame, metric: str) -> pl.DataFrame:
    """The stored run values as a runs table (cell_id, status, metric) for stats.regress."""
    col = metric + RUNS_SUFFIX
    if col not in history.columns:
        raise HistoryError(f"history has no runs of {metric!r} (column {col})")
    return (
        history.select("cell_id", pl.col(col).cast(pl.String).fill_null("").str.split(";"))
        .explode(col)
        .filter(pl.col(col) != "")
        .select("cell_id", pl.lit("ok").alias("status"), pl.col(col).cast(pl.Float64).alias(metric))
    )


def _night_runs(night: pl.DataFrame) -> pl.DataFrame:
    """A night's stored runs as a runs table with what each cell is (library, version,
    transport...), every metric of version_checks.VERSION_METRICS stacked: what
    version_checks.version_verdicts compares."""
    context = [c for c in ("cell_id", *CELL_COLUMNS) if c in night.columns]
    parts = [
        _runs_of(night, m).join(night.select(context), on="cell_id", how="left")
        for m in version_checks.VERSION_METRICS
        if m + RUNS_SUFFIX in night.columns
    ]
    if not parts or "library_version" not in night.columns:
        return pl.DataFrame({"cell_id": [], "status": []})
    return pl.concat(parts, how="diagonal").rename({"library_version": "library_release"})


def decide(
    history: pl.DataFrame,
    metric: str = DEFAULT_METRIC,
    k: int = DEFAULT_K,
    min_effect: float = DEFAULT_MIN_EFFECT,
    published: Mapping[tuple[str, str], str] | None = None,
    not_built: Sequence[Mapping[str, str]] = (),
) -> dict[str, Any]:
    """The newest night against a rolling baseline: the runs of the last k earlier nights on
    the same hardware, pooled per cell (stats.regress.per_cell: ratio of medians with its
    percentile-bootstrap interval, minimum practical effect, Mann-Whitney with
    Benjamini-Hochberg across cells), plus E-divisive change points over each cell's series of
    nightly medians. suspected = a regression verdict whose ratio also exceeds 1 + the
    baseline nights' own spread (night_spread), which needs MIN_SPREAD_NIGHTS baseline nights;
    confirmed stays None until a re-run (confirm) is compared.

    versions: each library version tonight measured against its predecessor, tonight alone
    (stats.history.versions; published and not_built from the night's upstream check);
    rerun_cells: what the confirming re-run measures (the suspects, and both cells of every
    version found slower)."""
    files = history.select("file", "hardware").unique(maintain_order=True)
    tonight_file, hardware = files.row(files.height - 1)
    earlier = files.head(files.height - 1).filter(pl.col("hardware") == hardware)["file"]
    base_files = earlier.tail(k).to_list()
    tonight = history.filter(pl.col("file") == tonight_file)
    doc: dict[str, Any] = {
        "schema": REGRESSIONS_SCHEMA,
        "campaign": str(tonight["campaign"][0]),
        "metric": metric,
        "unit": metric_unit(metric),
        "min_effect": min_effect,
        "level": LEVEL,
        "k": k,
        "night": tonight_file,
        "night_id": str(tonight["night_id"][0]),
        "hardware": hardware,
        "baseline_nights": base_files,
        "other_hardware_nights": int(files.height - 1 - earlier.len()),
        "cells": [],
        "versions": version_checks.version_verdicts(
            _night_runs(tonight), min_effect=min_effect, published=published, not_built=not_built
        ),
    }
    doc["rerun_cells"] = version_checks.rerun_cells(doc["versions"])
    doc["left_out"] = left_out(tonight)
    if not base_files:
        doc["note"] = "no earlier night on the same hardware: nothing to compare"
        return doc
    if len(base_files) < MIN_SPREAD_NIGHTS:
        doc["note"] = (
            f"{len(base_files)} baseline night(s): the night-to-night spread needs "
            f"{MIN_SPREAD_NIGHTS}, so no cell is suspected yet"
        )
    baseline = history.filter(pl.col("file").is_in(base_files))
    baseline_runs, tonight_runs = _runs_of(baseline, metric), _runs_of(tonight, metric)
    found = regress.per_cell(
        baseline_runs, tonight_runs, metric, min_effect_of(metric, min_effect), level=LEVEL
    )
    series = history.filter(pl.col("file").is_in([*base_files, tonight_file]))
    for v in found:
        medians = series.filter(pl.col("cell_id") == v.cell_id)[metric].cast(pl.Float64)
        cps = regress.detect_change_points(medians.fill_null(float("nan")))
        spread = night_spread(medians.head(medians.len() - 1).to_numpy(), v.median_baseline)
        threshold = max(min_effect_of(metric, min_effect), spread or 0.0)
        beyond = v.ratio is not None and v.ratio > 1.0 + threshold
        doc["cells"].append(
            {
                "cell": v.cell_id,
                "metric": metric,
                "baseline": num(v.median_baseline),
                "tonight": num(v.median_candidate),
                "ratio": num(v.ratio),
                "interval": [num(v.ci_low), num(v.ci_high)],
                "p": num(v.p_value),
                "q": num(v.p_adjusted),
                "verdict": v.verdict,
                "change_point_tonight": bool(
                    len(cps.indices) and max(cps.indices) == medians.len() - 1
                ),
                "change_point_note": cps.note,
                "n_baseline": v.n_baseline,
                "n_tonight": v.n_candidate,
                "n_interfered": doc["left_out"]["cells"].get(v.cell_id, 0),
                "night_spread": num(spread),
                "effect_threshold": threshold,
                # What tonight could see in this cell: the change its runs against the
                # baseline's detect with 80 % power at the 5 % level (stats.power).
                "detectable_ratio": num(
                    _detectable(baseline_runs, tonight_runs, v.cell_id, metric)
                ),
                "suspected": v.verdict == regress.REGRESSION and beyond and spread is not None,
                "confirmed": None,
            }
        )
    doc["rerun_cells"] = sorted({*suspected_cells(doc), *doc["rerun_cells"]})
    return doc


def _detectable(baseline: pl.DataFrame, tonight: pl.DataFrame, cell: str, metric: str) -> float:
    """The minimum detectable ratio of one cell's runs tonight against its baseline runs."""
    sides = [t.filter(pl.col("cell_id") == cell)[metric].to_numpy() for t in (baseline, tonight)]
    return power.two_sample_mde(*sides)


def left_out(night: pl.DataFrame) -> dict[str, Any]:
    """The runs the night file left out of its cells (store.night_table: measured beside a
    busy neighbour, stats.interference) and a note saying so; none for an older night file."""
    counts: dict[str, int] = {}
    if "n_interfered" in night.columns:
        for cell, n in night.select("cell_id", "n_interfered").iter_rows():
            if n:
                counts[str(cell)] = int(n)
    total = sum(counts.values())
    note = (
        f"{total} run(s) measured beside a busy neighbour left out of the decision "
        f"({', '.join(f'{c}: {n}' for c, n in sorted(counts.items()))})"
        if total
        else None
    )
    return {"interfered_runs": total, "cells": counts, "note": note}


def night_spread(night_medians: npt.NDArray[np.float64], pooled: float | None) -> float | None:
    """How far the baseline nights' own medians stray from their pooled median (the largest
    |night / pooled - 1|), None below 2 nights. Runs within a night vary less than nights do
    (on loopback, identical nights of the reference prototype differ by up to 30 % in median
    RTT: data/bench/history.json), so the pooled runs' interval alone would call that noise a
    regression; a suspect must exceed both min_effect and this spread."""
    vals = night_medians[np.isfinite(night_medians)]
    if vals.size < 2 or not pooled:
        return None
    return float(np.max(np.abs(vals / pooled - 1.0)))


def suspected_cells(doc: dict[str, Any]) -> list[str]:
    return [c["cell"] for c in doc["cells"] if c["suspected"]]


def confirm(doc: dict[str, Any], history: pl.DataFrame, rerun: pl.DataFrame) -> dict[str, Any]:
    """Compare a re-run of the suspected cells (a runs table with the night's cell ids) with the
    same baseline; a suspected cell is confirmed when the re-run's verdict is a regression too
    (BH across the re-run's cells). Cells not suspected get confirmed = False."""
    metric, min_effect = doc["metric"], min_effect_of(doc["metric"], doc["min_effect"])
    baseline = history.filter(pl.col("file").is_in(doc["baseline_nights"]))
    if "status" in rerun.columns:
        # A re-run measured beside a busy neighbour confirms nothing: left out, and said so.
        n_rerun = rerun.filter(interfered(rerun)).height
        rerun = usable(rerun)
    else:
        n_rerun = 0
    wanted = suspected_cells(doc)
    found = {
        v.cell_id: v
        for v in regress.per_cell(
            _runs_of(baseline.filter(pl.col("cell_id").is_in(wanted)), metric),
            rerun.filter(pl.col("cell_id").is_in(wanted)),
            metric,
            min_effect,
            level=LEVEL,
        )
    }
    out = dict(doc, cells=[])
    if n_rerun:
        out["left_out"] = dict(
            doc.get("left_out") or {},
            rerun_interfered_runs=n_rerun,
            rerun_note=f"{n_rerun} re-run run(s) measured beside a busy neighbour left out of "
            "the confirmation",
        )
    if "versions" in doc:
        out["versions"] = version_checks.confirm_versions(doc["versions"], rerun, doc["min_effect"])
    for c in doc["cells"]:
        v = found.get(c["cell"]) if c["suspected"] else None
        out["cells"].append(
            c
            | {
                "confirmed": bool(
                    v
                    and v.verdict == regress.REGRESSION
                    and v.ratio is not None
                    and v.ratio > 1.0 + float(c.get("effect_threshold") or min_effect)
                ),
                "confirm_ratio": num(v.ratio) if v else None,
                "confirm_interval": [num(v.ci_low), num(v.ci_high)] if v else None,
                "confirm_q": num(v.p_adjusted) if v else None,
            }
        )
    return out


def write_regressions(doc: dict[str, Any], path: Path) -> None:
    write_json(path, doc, sort_keys=False, strict=True)


def night_median(runs_text: object) -> intervals.Interval:
    """A night's median of one cell and metric with its order-statistic interval, from the
    stored run values (the `<metric>__runs` text, ";"-separated; None or "" for no runs)."""
    vals = np.array([float(v) for v in str(runs_text or "").split(";") if v], dtype=np.float64)
    return intervals.quantile_ci(vals, 0.5, level=LEVEL)


def night_trends(history: pl.DataFrame, doc: dict[str, Any]) -> pl.DataFrame:
    """Per cell of a decision and night of its hardware: the median of the decision's metric
    with its order-statistic interval over the stored runs, and the night's role (baseline,
    tonight, or earlier: before the baseline window). report/history.qmd draws it."""
    metric = doc["metric"]
    same = history.filter(pl.col("hardware") == doc["hardware"])
    base = set(doc["baseline_nights"])
    cells = [c["cell"] for c in doc["cells"]]
    rows = []
    for r in same.filter(pl.col("cell_id").is_in(cells)).iter_rows(named=True):
        iv = night_median(r.get(metric + RUNS_SUFFIX))
        role = (
            "tonight"
            if r["file"] == doc["night"]
            else "baseline"
            if r["file"] in base
            else "earlier"
        )
        rows.append(
            {
                "cell_id": r["cell_id"],
                "time": r["time"],
                "night": r["file"],
                "role": role,
                "median": num(r[metric]),
                "ci_low": num(iv.low),
                "ci_high": num(iv.high),
                "n_runs": iv.n,
            }
        )
    schema = {"cell_id": pl.String, "time": pl.String, "night": pl.String, "role": pl.String,
              "median": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64,
              "n_runs": pl.Int64}  # fmt: skip
    return pl.DataFrame(rows, schema=schema).sort("cell_id", "time", "night")


VERDICTS_DIR: Final = "verdicts"


def file_verdicts(doc: dict[str, Any], history_dir: Path) -> tuple[Path, bool]:
    """The confirmed decision into the history, beside its night:
    <history_dir>/<campaign>/verdicts/<night stem>.json, written once (append-only like the
    night files: the same decision again writes nothing; another one for that night is refused,
    never overwritten). (path, whether written)."""
    night = Path(str(doc["night"])).stem
    path = history_dir / str(doc["campaign"]) / VERDICTS_DIR / f"{night}.json"
    text = json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    if path.is_file():
        if path.read_text(encoding="utf-8") == text:
            return path, False
        raise HistoryError(
            f"{path}: the history holds another decision for night {night}; it is never "
            "overwritten (remove it by hand if this night was decided wrongly)"
        )
    write_text(path, text)
    return path, True


def write_decision(doc: dict[str, Any], history: pl.DataFrame, path: Path) -> None:
    """The decision (regressions.json or decision.json) and night-trends.csv beside it."""
    write_regressions(doc, path)
    replace_atomically(path.with_name("night-trends.csv"), night_trends(history, doc).write_csv)
