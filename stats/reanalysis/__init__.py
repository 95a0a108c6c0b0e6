"""Re-analysis of Net-Celerity's committed raw data (Stroiou 2024), with the statistics it lacked.

    netstick reanalysis compute --out data/results/net-celerity-reanalysis \
        [--data data/external/net-celerity]

Imports the raw data with stats.importers.netcelerity, writes the importer's samples, runs and
resources tables, every re-analysis table as Parquet and as CSV (for R; units in the column
names) and the findings as records (findings.json) into --out, each file atomically. The
report (report/reanalysis.py) draws these tables and words the findings.

What can be estimated from these data, and what cannot:

- Every configuration (prototype, workload, player count) ran once. There is no run-to-run
  variation to estimate, so no between-run interval exists for any single configuration; the
  tables say so in a ``note`` column rather than showing a zero-width interval.
- Within one run, the uncertainty of a statistic over time can be estimated: a moving-block
  bootstrap (Kunsch 1989, stats.blockboot) resamples blocks of consecutive seconds (with all
  samples in them), so the autocorrelation of Mirror's smoothed RTT within a block is kept.
  Such an interval is labelled "within-run": it says how well 120 s pin down that one run, not
  how a repeated run would differ (which is usually the larger source of variation, Kalibera &
  Jones 2013).
- Across player counts: an OLS line per prototype (stats.scaling.fit, HC3 slope intervals; the
  six single runs per line stand in for replication, so lack of fit counts as noise) and the
  player count where the run median crosses 50/75/100 ms (stats.scaling.crossing, plus an
  interval that propagates the within-run bootstrap draws through the same interpolation).
- Warm-up: their RTT figures pooled all rows (ramp-up included); their system-log plots kept
  the last 120 s (``sleep 5`` after the last client, then the 120 s benchmark: the window starts
  NET_CELERITY_CUT_S after the last client was started). The importer's t_s = 0 is that window's
  start. MSER-5 (stats.warmup.mser5) on per-second medians is the data-driven alternative.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import polars as pl

from stats.blockboot import LEVEL, N_RESAMPLES, SEED
from stats.importers import ImportResult, write_tables
from stats.importers.netcelerity import SOURCE, import_dir
from stats.reanalysis import findings as fnd
from stats.reanalysis import tables as tab
from stats.reanalysis.distributions import FRAME_MS, FRAME_TOLERANCE_MS
from stats.warmup import NET_CELERITY_CUT_S
from workflow.files import REPO, replace_atomically, write_json

DEFAULT_DATA: Final = REPO / "data" / "external" / "net-celerity"
DEFAULT_RESULTS: Final = REPO / "data" / "results" / "net-celerity-reanalysis"


@dataclass
class Computed:
    """Every re-analysis table and the findings document (findings.json)."""

    tables: dict[str, pl.DataFrame]
    findings: dict[str, Any]


def analyse(
    result: ImportResult, data_dir: Path, n_resamples: int = N_RESAMPLES, seed: int = SEED
) -> Computed:
    """Every table and the findings from an import."""
    info = tab.run_info(result.runs)
    rtt, within = tab.rtt_tables(result.samples, info, n_resamples, seed)
    res = tab.resource_tables(result.resources, result.runs, info, n_resamples, seed)
    scaling, crossings = tab.scaling_tables(
        info, rtt["rtt_by_run"], res["server_cpu"], res["server_memory"], within
    )
    flaws, flaws_summary = tab.flaw_tables(result, info)
    tables = {
        **rtt,
        **res,
        "scaling": scaling,
        "crossings": crossings,
        "flaws": flaws,
        "flaws_summary": flaws_summary,
        "runs_overview": info.join(
            result.runs.select("cell_id", "players_connected_max"), on="cell_id"
        ).sort("block", "label", "players"),
    }
    data = fnd.dataset(result, data_dir)
    doc = {
        "source": SOURCE,
        "ci_level": LEVEL,
        "n_resamples": n_resamples,
        "seed": seed,
        "frame_ms": FRAME_MS,
        "frame_tolerance_ms": FRAME_TOLERANCE_MS,
        "net_celerity_cut_s": NET_CELERITY_CUT_S,
        "thresholds_ms": list(tab.THRESHOLDS_MS),
        "dataset": data,
        "findings": fnd.findings(tables, data, LEVEL),
    }
    return Computed(tables, doc)


def write(computed: Computed, out_dir: Path) -> list[Path]:
    """Each table as <name>.parquet and <name>.csv, and findings.json, in out_dir."""
    written = []
    for name, table in computed.tables.items():
        for path, writer in (
            (out_dir / f"{name}.parquet", table.write_parquet),
            # 6 decimals: the figures need no more, and the CSVs stay readable and diffable
            (out_dir / f"{name}.csv", lambda p, t=table: t.write_csv(p, float_precision=6)),
        ):
            written.append(replace_atomically(path, writer))
    written.append(
        write_json(out_dir / "findings.json", computed.findings, sort_keys=False, strict=True)
    )
    return written


def compute(
    out: Path, data: Path | None = None, n_resamples: int = N_RESAMPLES, seed: int = SEED
) -> Computed:
    """Import Net-Celerity's raw data (default: the vendored copy), compute and write every
    table and findings.json into out."""
    data_dir = DEFAULT_DATA if data is None else data
    if not data_dir.is_dir():
        raise FileNotFoundError(
            f"--data {data_dir}: not a directory (expected Net-Celerity's data)"
        )
    result = import_dir(data_dir)
    if result.runs.height == 0:
        raise ValueError(f"--data {data_dir}: no Net-Celerity runs found (workload*_results/ "
                         "or system_logs_workload*/ expected)")  # fmt: skip
    write_tables(result, out)
    computed = analyse(result, data_dir, n_resamples, seed)
    write(computed, out)
    return computed
