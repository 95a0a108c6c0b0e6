"""Nightly history: per-cell trends with change points, and the verdicts of the newest night
against the one before.

    netstick history compute NIGHT1 NIGHT2 [NIGHT3 ...] --out DIR

Each NIGHT is a results directory of the stats stage (data/results/<campaign>, or a campaign
name under data/results/), oldest first; its label is the library version its runs record when
they all record one, else the directory's name. Writes into DIR: trends.csv (per cell and
night: the median over ok runs with its order-statistic interval, and whether a change point
starts there), verdicts.csv (stats.regress.per_cell, newest night against the one before) and
history.json (the findings as records, stats.findings). report/history.py draws them.

The history store (data/history/<campaign>/<night>.csv, append-only; `netstick history
import|list|show`) keeps every night's per-cell medians and run values with their provenance;
decide() compares the newest night with a rolling baseline of the last k nights on the same
hardware, confirm() fills in whether a re-run of the suspected cells agrees, and
regressions.json with night-trends.csv is what report/history.qmd draws of it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import polars as pl

from stats import intervals, regress
from stats.findings import LEVEL, finding, num
from workflow.files import replace_atomically, write_json

DEFAULT_METRIC: Final = "rtt_net_p50_us"
DEFAULT_MIN_EFFECT: Final = 0.05
# A runs-table column's stored unit from its name's suffix (the tables carry units in names).
UNIT_SUFFIXES: Final = (
    ("_bytes_per_s", "bytes/s"), ("_us", "us"), ("_ms", "ms"), ("_s", "s"),
    ("_cores", "cores"), ("_bytes", "bytes"), ("_ratio", "ratio"), ("_fraction", "fraction"),
)  # fmt: skip


class HistoryError(ValueError):
    """A results directory cannot be used; the message names it."""


def metric_unit(metric: str) -> str:
    """The stored unit of a runs-table column ("count" when its name carries none)."""
    return next((u for suffix, u in UNIT_SUFFIXES if metric.endswith(suffix)), "count")


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


# -- the history store: data/history/<campaign>/<night>.csv ---------------------------------------
# One file per night and campaign, written once and never changed (append-only). One row per
# cell: `time` (the night's UTC timestamp, ISO 8601) and each metric's median over the cell's ok
# runs as its own column, which is the shape apache-otava's CSV source reads (time_column `time`,
# the metric columns as `metrics`, `commit` as an attribute); `<metric>__runs` keeps the runs'
# values (";"-separated) so a decision can resample them. Provenance columns say where the night
# ran; `hardware` is a fingerprint of CPU model and count, and nights with different fingerprints
# are never compared.

HISTORY_METRICS: Final = (
    "rtt_net_p50_us", "rtt_net_p95_us", "rtt_net_p99_us", "server_cpu_cores", "server_rss_bytes",
)  # fmt: skip
RUNS_SUFFIX: Final = "__runs"
PROVENANCE_COLUMNS: Final = (
    "campaign", "night_id", "commit", "library_versions", "host", "cpu_model", "cpu_count",
    "hardware", "profile",
)  # fmt: skip
DEFAULT_K: Final = 5  # baseline: the last k comparable nights
REGRESSIONS_SCHEMA: Final = 1


def _raw_meta(results: Path) -> dict[str, Any]:
    """The provenance of the newest run's meta.json under data/raw/<campaign> (empty if none)."""
    import json

    raw = results.parent.parent / "raw" / results.name
    metas = (
        sorted(raw.glob("**/meta.json"), key=lambda p: p.stat().st_mtime) if raw.is_dir() else []
    )
    for path in reversed(metas):
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        prov = doc.get("versions") or doc.get("provenance") or doc  # the harness's meta.json
        if isinstance(prov, dict) and prov.get("cpu_model"):
            return prov
    return {}


def _fingerprint(cpu_model: str | None, cpu_count: int | None) -> str:
    import hashlib

    return hashlib.sha256(f"{cpu_model}|{cpu_count}".encode()).hexdigest()[:12]


def night_table(
    results: Path,
    time_utc: str | None = None,
    machine: dict[str, Any] | None = None,
    cell_ids: Mapping[str, str] | None = None,
) -> pl.DataFrame:
    """One results directory (stats stage) as a history night: one row per cell.

    The night's identity (night_id) is a hash of its runs' values, so importing the same
    results twice gives the same id. Machine provenance comes from the runs' meta.json under
    data/raw/<campaign>; without one from machine (cpu_model, cpu_count, hostname: the
    importing machine's, given by the CLI; the same machine when the import follows the
    campaign, as in the nightly workflow), else "unknown". cell_ids renames cells (measured
    id -> the id to file it under: a night whose cells differ on purpose, an injected network
    delay say, compared with the campaign's own cells); measured_cell_id keeps the measured one.
    """
    import datetime as dt
    import hashlib

    f = results / "runs.parquet"
    if not f.is_file():
        raise HistoryError(f"{f}: missing; run `netstick stats` for that night first")
    runs = pl.read_parquet(f)
    for col in ("cell_id", "run_id", "status"):
        if col not in runs.columns:
            raise HistoryError(f"{f}: no column {col!r}")
    runs = runs.with_columns(
        pl.col("cell_id").alias("measured_cell_id"),
        pl.col("cell_id").replace(dict(cell_ids or {})),
    )
    metrics = [m for m in HISTORY_METRICS if m in runs.columns]
    if not metrics:
        raise HistoryError(f"{f}: none of the history metrics {HISTORY_METRICS}")
    runs = runs.sort("cell_id", "run_id")
    digest = hashlib.sha256(
        runs.select("cell_id", "run_id", "status", *metrics).write_csv().encode()
    ).hexdigest()[:12]
    meta = _raw_meta(results) or dict(machine or {})
    cpu_model = meta.get("cpu_model") or "unknown"
    cpu_count = meta.get("cpu_count")
    if time_utc is None:
        mtime = f.stat().st_mtime
        time_utc = dt.datetime.fromtimestamp(mtime, dt.UTC).isoformat(timespec="seconds")

    def first(col: str) -> str | None:
        if col not in runs.columns:
            return None
        vals = sorted({str(v) for v in runs[col].drop_nulls().to_list()})
        return ";".join(vals) if vals else None

    rows = []
    ok = runs.filter(pl.col("status") == "ok")
    for cell in sorted(set(runs["cell_id"].to_list())):
        group = ok.filter(pl.col("cell_id") == cell)
        cell_all = runs.filter(pl.col("cell_id") == cell)
        row: dict[str, Any] = {"time": time_utc, "cell_id": cell}
        for m in metrics:
            vals = group[m].cast(pl.Float64).drop_nulls().to_numpy()
            vals = vals[np.isfinite(vals)]
            row[m] = float(np.median(vals)) if vals.size else None
            row[m + RUNS_SUFFIX] = ";".join(repr(float(v)) for v in vals)
        row["n_runs"] = group.height
        row["measured_cell_id"] = str(cell_all["measured_cell_id"][0])
        profile = (
            cell_all["network_profile"].drop_nulls().to_list()
            if "network_profile" in cell_all.columns
            else []
        )
        row |= {
            "campaign": first("campaign") or results.name,
            "night_id": digest,
            "commit": first("commit"),
            "library_versions": ";".join(
                sorted({str(v) for v in cell_all["library_version"].drop_nulls().to_list()})
            )
            if "library_version" in cell_all.columns
            else None,
            "host": meta.get("hostname") or first("host"),
            "cpu_model": cpu_model,
            "cpu_count": cpu_count,
            "hardware": _fingerprint(cpu_model, cpu_count),
            "profile": str(profile[0]) if profile else None,
        }
        rows.append(row)
    return pl.DataFrame(rows, infer_schema_length=None)


def import_night(
    results: Path,
    history_dir: Path,
    time_utc: str | None = None,
    machine: dict[str, Any] | None = None,
    cell_ids: Mapping[str, str] | None = None,
) -> tuple[Path, bool]:
    """Append results (a stats-stage directory) to history_dir/<campaign>/ as one night file.

    Idempotent: when a night with the same night_id is there already, nothing is written and
    (its path, False) is returned; else (the new file, True).
    """
    table = night_table(results, time_utc, machine, cell_ids)
    campaign = str(table["campaign"][0])
    night_id = str(table["night_id"][0])
    folder = history_dir / campaign
    existing = sorted(folder.glob(f"*-{night_id}.csv")) if folder.is_dir() else []
    if existing:
        return existing[0], False
    import re

    stamp = re.sub(r"[^0-9T]", "", str(table["time"][0]))[:15] + "Z"  # 20261126T014000Z
    path = folder / f"{stamp}-{night_id}.csv"
    folder.mkdir(parents=True, exist_ok=True)
    replace_atomically(path, table.write_csv)
    return path, True


def read_history(history_dir: Path, campaign: str) -> pl.DataFrame:
    """Every night of a campaign, oldest first (by time, then file name)."""
    folder = history_dir / campaign
    files = sorted(folder.glob("*.csv")) if folder.is_dir() else []
    if not files:
        raise HistoryError(f"{folder}: no nights; `netstick history import RESULTS_DIR` first")
    parts = [
        pl.read_csv(p, infer_schema_length=None).with_columns(
            pl.lit(p.name).alias("file"), pl.col("cpu_count").cast(pl.Int64)
        )
        for p in files
    ]
    return pl.concat(parts, how="diagonal_relaxed").sort("time", "file", "cell_id")


def list_nights(history_dir: Path) -> pl.DataFrame:
    """One row per night file: campaign, time, night_id, cells, commit, hardware."""
    rows = []
    for folder in (
        sorted(p for p in history_dir.iterdir() if p.is_dir()) if history_dir.is_dir() else []
    ):
        for p in sorted(folder.glob("*.csv")):
            t = pl.read_csv(p, infer_schema_length=None)
            rows.append(
                {
                    "campaign": folder.name,
                    "time": str(t["time"][0]),
                    "night_id": str(t["night_id"][0]),
                    "cells": t.height,
                    "commit": t["commit"][0],
                    "library_versions": t["library_versions"][0],
                    "hardware": str(t["hardware"][0]),
                    "cpu_model": t["cpu_model"][0],
                    "file": p.name,
                }
            )
    return pl.DataFrame(rows, infer_schema_length=None)


def otava_series(history: pl.DataFrame, cell: str) -> pl.DataFrame:
    """One cell's nights in apache-otava's CSV shape: time, the metric columns, commit."""
    metrics = [m for m in HISTORY_METRICS if m in history.columns]
    rows = history.filter(pl.col("cell_id") == cell)
    if rows.height == 0:
        raise HistoryError(f"no cell {cell!r} in the history")
    return rows.select("time", *metrics, "commit")


def otava_config(cell: str, series_csv: Path, columns: Sequence[str]) -> dict[str, Any]:
    """apache-otava's configuration for one series file (`otava analyze <cell>` with
    OTAVA_CONFIG pointing at it): a csv test whose metrics are the series' metric columns, lower
    is better for all of them (direction -1)."""
    return {
        "tests": {
            cell: {
                "type": "csv",
                "file": str(series_csv),
                "time_column": "time",
                "attributes": ["commit"],
                "metrics": {
                    c: {"column": c, "direction": -1} for c in columns if c in HISTORY_METRICS
                },
            }
        }
    }


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


def decide(
    history: pl.DataFrame,
    metric: str = DEFAULT_METRIC,
    k: int = DEFAULT_K,
    min_effect: float = DEFAULT_MIN_EFFECT,
) -> dict[str, Any]:
    """The newest night against a rolling baseline: the runs of the last k earlier nights on
    the same hardware, pooled per cell (stats.regress.per_cell: ratio of medians with its
    percentile-bootstrap interval, minimum practical effect, Mann-Whitney with
    Benjamini-Hochberg across cells), plus E-divisive change points over each cell's series of
    nightly medians. suspected = a regression verdict whose ratio also exceeds 1 + the
    baseline nights' own spread (night_spread); confirmed stays None until a re-run (confirm)
    is compared."""
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
    }
    if not base_files:
        doc["note"] = "no earlier night on the same hardware: nothing to compare"
        return doc
    baseline = history.filter(pl.col("file").is_in(base_files))
    found = regress.per_cell(
        _runs_of(baseline, metric), _runs_of(tonight, metric), metric, min_effect, level=LEVEL
    )
    series = history.filter(pl.col("file").is_in([*base_files, tonight_file]))
    for v in found:
        medians = series.filter(pl.col("cell_id") == v.cell_id)[metric].cast(pl.Float64)
        cps = regress.detect_change_points(medians.fill_null(float("nan")))
        spread = night_spread(medians.head(medians.len() - 1).to_numpy(), v.median_baseline)
        threshold = max(min_effect, spread or 0.0)
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
                "night_spread": num(spread),
                "effect_threshold": threshold,
                "suspected": v.verdict == regress.REGRESSION and beyond,
                "confirmed": None,
            }
        )
    return doc


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
    same baseline; a suspected
    cell is confirmed when the re-run's verdict is a regression too (BH across the re-run's
    cells). Cells not suspected get confirmed = False."""
    metric, min_effect = doc["metric"], doc["min_effect"]
    baseline = history.filter(pl.col("file").is_in(doc["baseline_nights"]))
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


# -- the confirming re-run -----------------------------------------------------------------------
# The suspected cells re-run as their own campaign, `<campaign>-confirm-<night_id>`: the same
# file with an `exclude` entry per cell that is not suspected, so the re-run's cells have the
# night's cell ids (a cell id hashes what is measured, not the campaign's name) and its runs land
# in their own data/raw/ and data/results/ directories, never mixed with the night's.
CONFIRM_SUFFIX: Final = "-confirm"


def confirm_name(campaign: str, night_id: str | None) -> str:
    """<campaign>-confirm-<night_id>: each night's re-run is a campaign of its own, so an earlier
    night's re-run is never taken for tonight's."""
    return f"{campaign}{CONFIRM_SUFFIX}" + (f"-{night_id}" if night_id else "")


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
        text = r.get(metric + RUNS_SUFFIX) or ""
        vals = np.array([float(v) for v in str(text).split(";") if v], dtype=np.float64)
        iv = intervals.quantile_ci(vals, 0.5, level=LEVEL)
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
                "n_runs": int(vals.size),
            }
        )
    schema = {"cell_id": pl.String, "time": pl.String, "night": pl.String, "role": pl.String,
              "median": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64,
              "n_runs": pl.Int64}  # fmt: skip
    return pl.DataFrame(rows, schema=schema).sort("cell_id", "time", "night")


def write_decision(doc: dict[str, Any], history: pl.DataFrame, path: Path) -> None:
    """The decision (regressions.json or decision.json) and night-trends.csv beside it."""
    write_regressions(doc, path)
    replace_atomically(path.with_name("night-trends.csv"), night_trends(history, doc).write_csv)
