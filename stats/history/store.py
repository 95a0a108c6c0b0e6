"""The history store: data/history/<campaign>/<night>.csv, one file per night and campaign.

    netstick history import RESULTS_DIR     append a night (idempotent)
    netstick history list | show CAMPAIGN   what is stored; one cell's series for apache-otava

A night file is written once and never changed (append-only). One row per cell: `time` (the
night's UTC timestamp, ISO 8601) and each metric's median over the cell's ok runs as its own
column, which is the shape apache-otava's CSV source reads (time_column `time`, the metric
columns as `metrics`, `commit` as an attribute); `<metric>__runs` keeps the runs' values
(";"-separated) so a decision (decide.py) can resample them. A run measured beside a busy
neighbour (the runs table's interference, stats.interference) is left out of both and counted
in `n_interfered`, so no decision ever sees it. Provenance columns say where the night ran;
`hardware` is a fingerprint of CPU model and count, and nights with different fingerprints are
never compared.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np
import polars as pl

from stats.history import HistoryError
from stats.interference import interfered, usable
from workflow import layout
from workflow.files import replace_atomically

HISTORY_METRICS: Final = (
    "rtt_net_p50_us", "rtt_net_p95_us", "rtt_net_p99_us", "server_cpu_cores", "server_rss_bytes",
    "server_cpu_us_per_msg", "server_instr_per_msg",
)  # fmt: skip
RUNS_SUFFIX: Final = "__runs"
# What a cell is, for the trend site and the per-version verdicts: night column <- runs column;
# library_version is the version measured (the runs' library_release: pinned resolved).
CELL_COLUMNS: Final = {
    "prototype": "prototype", "transport": "transport", "library": "library",
    "library_version": "library_release", "players": "players", "workload": "workload",
    "server_profiler": "server_profiler",
}  # fmt: skip
PROVENANCE_COLUMNS: Final = (
    "campaign", "night_id", "commit", "library_versions", "host", "cpu_model", "cpu_count",
    "hardware", "profile",
)  # fmt: skip


def _raw_meta(results: Path) -> dict[str, Any]:
    """The machine provenance (versions in the harness's meta.json) of the campaign's newest
    run under data/raw/<campaign> that recorded one, read through the raw layout's walker; empty
    without a raw campaign. Newest: the latest measurement window's start, over the ok runs
    and the failed attempts kept beside them."""
    raw = layout.campaign_dir(results.name, results.parent.parent / "raw")
    try:
        runs = list(layout.walk(raw))
    except FileNotFoundError:  # no plan.json: results imported without their raw data
        return {}
    metas = [m for run in runs for m in (run.meta, *(f.meta for f in run.failed)) if m]
    metas.sort(key=lambda m: int(m.get("window_start_unix_ns") or 0))
    for meta in reversed(metas):
        prov = meta.get("versions") or meta.get("provenance") or meta
        if isinstance(prov, dict) and prov.get("cpu_model"):
            return prov
    return {}


def _one(runs: pl.DataFrame, col: str) -> str | None:
    """The one value a cell's runs share in col (None when absent: an older runs table)."""
    if col not in runs.columns:
        return None
    vals = runs[col].drop_nulls().cast(pl.String).unique().to_list()
    return str(vals[0]) if len(vals) == 1 else None


def _fingerprint(cpu_model: str | None, cpu_count: int | None) -> str:
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
    ok = usable(runs)
    flagged = runs.filter(interfered(runs))
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
        row["n_interfered"] = flagged.filter(pl.col("cell_id") == cell).height
        row["measured_cell_id"] = str(cell_all["measured_cell_id"][0])
        profile = (
            cell_all["network_profile"].drop_nulls().to_list()
            if "network_profile" in cell_all.columns
            else []
        )
        row |= {key: _one(cell_all, col) for key, col in CELL_COLUMNS.items()}
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
