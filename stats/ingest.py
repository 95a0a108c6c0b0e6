"""Ingest: a campaign's raw run directories become tidy Parquet tables.

    data/raw/<campaign>/  ->  data/results/<campaign>/samples.parquet   one row per RTT sample
                                                     runs.parquet      one row per planned run
                                                     runs.csv          the same, for R
                                                     timeseries.parquet per-second series per run
                                                     ingest.json       rows read, bad rows per file

Each ok run's logs are read once (stats.runs_table.rows, with prototypes.contract.logs' reader
and its bad-row policy: a row that does not parse is left out and counted, per file in
ingest.json and per run in the runs table's bad_rows, never a crash); the per-run metrics, the
samples, the per-second series and the warm-up cut all come from that one reading. Samples are
streamed run by run into one Parquet file (row group per run), so memory holds one run at a
time. Every planned run gets a row in runs.parquet, ok or not, with the provenance of its
meta.json (commit, host, isolation, seed, run order). The tables' columns are stats.tables'.
"""

from __future__ import annotations

import os
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow.parquet as pq

from prototypes.contract.columns import RTT_KINDS
from stats import runs_table, tables, timeseries, warmup
from stats.runs_table import RunData
from stats.window import Window
from workflow import layout
from workflow.files import replace_atomically, write_json

_KINDS = pl.Series("kind", RTT_KINDS, dtype=pl.String)
# Dictionary encoding where it pays: the columns with a few distinct strings. On the numeric
# columns pyarrow's default tries it and falls back, which cost a third of the write and made
# the file larger (2.45 against 1.87 MB for a run of 100,000 samples).
DICTIONARY_COLUMNS = ["campaign", "cell_id", "run_id", "kind", "source"]


@dataclass
class IngestReport:
    runs: int = 0
    runs_ok: int = 0
    samples: int = 0
    bad_rows: dict[str, int] = field(default_factory=dict)  # file -> rows left out
    bad_files: dict[str, str] = field(default_factory=dict)  # file -> why it was not read


def run_samples(data: RunData, ids: dict[str, str]) -> pl.DataFrame:
    """One run's RTT samples in the samples table's shape (stats.tables.SAMPLES)."""
    rtt, n = data.rtt, len(data.rtt)
    frame = pl.DataFrame(
        {
            "t_unix_ns": rtt.t_unix_ns,
            # NaN from the reader (no window start; an empty send_late_us) is null in the table.
            "t_s": pl.Series(data.window.t_s(rtt.t_unix_ns), nan_to_null=True),
            "player": pl.Series(rtt.player).cast(pl.Int32, strict=False),
            "seq": rtt.seq,
            "kind": _KINDS.gather(rtt.kind_code) if n else pl.Series([], dtype=pl.String),
            "rtt_us": rtt.rtt_us,
            "send_late_us": pl.Series(rtt.send_late_us, nan_to_null=True),
        }
    )
    return frame.with_columns(
        pl.lit(ids["campaign"]).alias("campaign"),
        pl.lit(ids["cell_id"]).alias("cell_id"),
        pl.lit(ids["run_id"]).alias("run_id"),
        pl.lit("netstick").alias("source"),
    ).select(pl.col(name).cast(dtype) for name, dtype in tables.SAMPLES_SCHEMA.items())


def warmup_of(series: pl.DataFrame, window: Window) -> warmup.WarmupCut | None:
    """MSER-5 on the run's per-second median net RTT (the rtt_net_p50_us series the report
    draws), over the one-second bins inside the window; seconds without samples are gaps."""
    p50 = series.filter(pl.col("metric") == "rtt_net_p50_us")
    seconds = p50["t_s"].to_numpy()
    inside = window.bin_inside(seconds)
    if not inside.any():
        return None
    index = seconds[inside].astype(np.int64)
    if int(index.max()) >= warmup.MAX_BINS:  # an open window and a wild clock: no grid
        return None
    grid = np.full(int(index.max()) + 1, np.nan)  # from the window's start: cut_s counts from it
    grid[index] = p50["value"].to_numpy()[inside]
    return warmup.mser5(grid, step_s=1.0)


def after_cuts(data: RunData, mser_cut_s: float) -> dict[str, float | None]:
    """Net RTT p50 inside the window after the MSER-5 cut and after Net-Celerity's fixed cut,
    side by side (numpy's linear percentile, as in stats.summary)."""
    rtt = data.rtt
    net = (rtt.kind_code == RTT_KINDS.index("net")) & data.window.contains(rtt.t_unix_ns)
    t_s = data.window.t_s(rtt.t_unix_ns)
    out: dict[str, float | None] = {"warmup_fixed_cut_s": warmup.NET_CELERITY_CUT_S}
    for name, cut in (("mser", mser_cut_s), ("fixed_cut", warmup.NET_CELERITY_CUT_S)):
        kept = rtt.rtt_us[net & (t_s >= cut)]
        kept = kept[np.isfinite(kept)]
        out[f"rtt_net_p50_after_{name}_us"] = float(np.percentile(kept, 50)) if kept.size else None
    return out


def ingest(raw_campaign: Path, out_dir: Path) -> IngestReport:
    campaign = str(layout.read_plan(raw_campaign).get("campaign") or raw_campaign.name)
    report = IngestReport()
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / f".samples.parquet.tmp-{os.getpid()}"
    writer: pq.ParquetWriter | None = None
    rows: list[dict[str, Any]] = []
    series: list[pl.DataFrame] = []
    # One run's samples are written while the next run is read (pyarrow writes without the GIL):
    # the write took half the stage's time when it ran in turn.
    background = ThreadPoolExecutor(max_workers=1)
    pending: Future[None] | None = None
    try:
        for row, data in runs_table.rows(raw_campaign):
            report.runs += 1
            row["source"] = "netstick"
            row["flaws"] = ""
            rows.append(row)
            if data is None:
                continue
            report.runs_ok += 1
            report.bad_rows.update(data.rtt.bad_rows)
            report.bad_files.update(data.unread)
            ids = {"campaign": campaign, "cell_id": row["cell_id"], "run_id": row["run_id"]}
            df = run_samples(data, ids)
            per_s, unread = timeseries.run_series(data.run_dir, df, data.window, ids, data.monitor)
            series.append(per_s)
            report.bad_files.update(unread)
            cut = warmup_of(per_s, data.window)
            if cut is not None:
                row["warmup_cut_s"] = cut.cut_s
                row["warmup_second_half"] = cut.second_half
                row["warmup_note"] = cut.reason
                row.update(after_cuts(data, cut.cut_s or 0.0))
            if df.height:
                table = df.to_arrow()
                if writer is None:
                    writer = pq.ParquetWriter(
                        tmp, table.schema, compression="zstd", use_dictionary=DICTIONARY_COLUMNS
                    )
                if pending is not None:
                    pending.result()  # row groups in run order; an error stops the stage
                pending = background.submit(writer.write_table, table)
                report.samples += df.height
        if pending is not None:
            pending.result()
    finally:
        background.shutdown(wait=True)
        if writer is not None:
            writer.close()
    if writer is not None:
        os.replace(tmp, out_dir / "samples.parquet")
    else:  # no ok run: an empty table with the columns, so later stages still find one
        _write_parquet(tables.empty(tables.SAMPLES_SCHEMA), out_dir / "samples.parquet")
    runs = tables.rows_frame(rows, tables.RUNS_SCHEMA)
    _write_parquet(runs, out_dir / "runs.parquet")
    replace_atomically(out_dir / "runs.csv", runs.write_csv)
    per_s = pl.concat(series) if series else pl.DataFrame(schema=timeseries.SCHEMA)
    _write_parquet(per_s, out_dir / "timeseries.parquet")
    doc = {
        "campaign": campaign,
        "runs": report.runs,
        "runs_ok": report.runs_ok,
        "samples": report.samples,
        "bad_rows": report.bad_rows,
        "bad_files": report.bad_files,
    }
    write_json(out_dir / "ingest.json", doc, sort_keys=False)
    return report


def _write_parquet(df: pl.DataFrame, path: Path) -> None:
    replace_atomically(path, lambda tmp: df.write_parquet(tmp, compression="zstd"))
