"""Ingest: a campaign's raw run directories become tidy Parquet tables.

    data/raw/<campaign>/  ->  data/results/<campaign>/samples.parquet   one row per RTT sample
                                                     runs.parquet      one row per planned run
                                                     runs.csv          the same, for R
                                                     timeseries.parquet per-second series per run
                                                     ingest.json       rows read, bad rows per file

Each ok run's logs are read once (stats.runs_table.row_of, with prototypes.contract.logs' reader
and its bad-row policy: a row that does not parse is left out and counted, per file in
ingest.json and per run in the runs table's bad_rows, never a crash); the per-run metrics, the
samples, the per-second series and the warm-up cut all come from that one reading
(ingest_run). Runs are independent, so worker threads ingest them side by side, one per CPU
this process may use, a few runs ahead (_parts says why threads); this process takes them in
plan order and streams the samples into one Parquet file (row group per run, written while the
workers read on), so memory holds a few runs at a time and the tables are those of one worker.
Every planned run gets a row in runs.parquet, ok or not, with the provenance of its meta.json
(commit, host, isolation, seed, run order). The tables' columns are stats.tables'.
"""

from __future__ import annotations

import base64
import os
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from prototypes.contract.columns import RTT_KINDS
from stats import runs_table, tables, timeseries, warmup
from stats.runs_table import RunData
from stats.window import Window
from workflow import layout
from workflow.files import replace_atomically, write_json

# The samples table as readers see it (the Arrow schema stored in the file): polars' String is
# Arrow's large_string.
SAMPLES_ARROW = tables.empty(tables.SAMPLES_SCHEMA).to_arrow().schema
# The columns with a few distinct strings (one per run, or kind's three) are handed to the
# writer as dictionary arrays: it then writes the dictionary as it is, where 100,000 strings per
# run were hashed into one, and their statistics come from the dictionary. The file still
# declares large_string (_samples_writer), so readers get the same table.
DICTIONARY_COLUMNS = ["campaign", "cell_id", "run_id", "kind", "source"]
# Encodings where they pay, measured on 20 runs of 100,000 samples: deltas for the integers
# (t_unix_ns and seq grow by small steps) and byte-stream-split for the floats cut the write by
# a quarter and the file by a fifth (38.4 -> 31.0 MB); on the numeric columns pyarrow's default
# dictionary encoding was tried and dropped for each page.
COLUMN_ENCODING = {
    "t_unix_ns": "DELTA_BINARY_PACKED",
    "player": "DELTA_BINARY_PACKED",
    "seq": "DELTA_BINARY_PACKED",
    "t_s": "BYTE_STREAM_SPLIT",
    "rtt_us": "BYTE_STREAM_SPLIT",
    "send_late_us": "BYTE_STREAM_SPLIT",
}
_KIND_VALUES = pa.array(RTT_KINDS, pa.large_string())
_INT32 = np.iinfo(np.int32)
IN_FLIGHT_PER_WORKER = 2  # runs submitted ahead per worker: enough to keep it busy, bounded


@dataclass
class IngestReport:
    runs: int = 0
    runs_ok: int = 0
    samples: int = 0
    bad_rows: dict[str, int] = field(default_factory=dict)  # file -> rows left out
    bad_files: dict[str, str] = field(default_factory=dict)  # file -> why it was not read


@dataclass(frozen=True, slots=True)
class RunPart:
    """What one planned run adds to the tables: its runs-table row and, for an ok run, its
    samples (samples table's columns, strings as dictionaries), per-second series, bad rows per
    file and unreadable files with why (its logs' first, then the series')."""

    row: dict[str, Any]
    samples: pa.Table | None = None
    series: pl.DataFrame | None = None
    bad_rows: dict[str, int] = field(default_factory=dict)
    unread: dict[str, str] = field(default_factory=dict)


def _constant(value: str, n: int) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(
        pa.array(np.zeros(n, dtype=np.int8)), pa.array([value], pa.large_string())
    )


def _int32_or_null(values: npt.NDArray[np.int64]) -> pa.Array:
    """values as int32, null where out of its range (as polars' non-strict cast)."""
    outside = (values < _INT32.min) | (values > _INT32.max)
    return pa.array(values.astype(np.int32), mask=outside if outside.any() else None)


def run_samples(data: RunData, ids: dict[str, str]) -> pa.Table:
    """One run's RTT samples in the samples table's shape (stats.tables.SAMPLES), with the
    string columns as dictionary arrays (DICTIONARY_COLUMNS)."""
    rtt, n = data.rtt, len(data.rtt)
    columns = {
        "campaign": _constant(ids["campaign"], n),
        "cell_id": _constant(ids["cell_id"], n),
        "run_id": _constant(ids["run_id"], n),
        "t_unix_ns": pa.array(rtt.t_unix_ns),
        # NaN from the reader (no window start; an empty send_late_us) is null in the table.
        "t_s": pa.array(data.window.t_s(rtt.t_unix_ns), from_pandas=True),
        "player": _int32_or_null(rtt.player),
        "seq": pa.array(rtt.seq),
        "kind": pa.DictionaryArray.from_arrays(pa.array(rtt.kind_code), _KIND_VALUES),
        "rtt_us": pa.array(rtt.rtt_us),
        "send_late_us": pa.array(rtt.send_late_us, from_pandas=True),
        "source": _constant("netstick", n),
    }
    return pa.table(columns)


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


def ingest_run(run: layout.RawRun, campaign: str) -> RunPart:
    """One planned run, read and measured once (runs_table.row_of): its row with the warm-up
    cut, its samples and its per-second series. Depends on nothing but its arguments, so runs
    are ingested side by side (_parts)."""
    row, data = runs_table.row_of(run)
    row["source"] = "netstick"
    row["flaws"] = ""
    if data is None:
        return RunPart(row)
    ids = {"campaign": campaign, "cell_id": row["cell_id"], "run_id": row["run_id"]}
    samples = run_samples(data, ids)
    # kind, t_s and rtt_us are what the series read; kind arrives as a categorical.
    frame = pl.DataFrame(samples.select(["kind", "t_s", "rtt_us"]))
    per_s, unread = timeseries.run_series(data.run_dir, frame, data.window, ids, data.monitor)
    cut = warmup_of(per_s, data.window)
    if cut is not None:
        row["warmup_cut_s"] = cut.cut_s
        row["warmup_second_half"] = cut.second_half
        row["warmup_note"] = cut.reason
        row.update(after_cuts(data, cut.cut_s or 0.0))
    return RunPart(row, samples, per_s, dict(data.rtt.bad_rows), {**data.unread, **unread})


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity, which a pinned job narrows)."""
    return len(os.sched_getaffinity(0))


def _parts(raw_campaign: Path, campaign: str, workers: int) -> Iterator[RunPart]:
    """ingest_run of every planned run, in plan order. With more than one worker the runs are
    ingested in that many threads, at most IN_FLIGHT_PER_WORKER runs each ahead of the one the
    caller takes, so memory holds a few runs whatever the campaign's size. A worker's exception
    is raised here, when its run's turn comes, as it would be with one worker.

    Threads, not processes: the reading, the percentiles and the series run in polars, numpy
    and pyarrow without the GIL. A process pool was measured no faster than one worker on 2
    CPUs (10 M samples: ingest 4.5-4.6 s against 4.2-4.7 s; threads 3.5-3.8 s): each worker
    imports polars and each run's samples cross a pipe. Workers cannot fork this process
    either: polars' thread pool is running by then (importing this module starts it), and a
    forked child deadlocks in its first read."""
    runs = layout.walk(raw_campaign)
    if workers <= 1:
        yield from (ingest_run(run, campaign) for run in runs)
        return
    pool = ThreadPoolExecutor(workers, thread_name_prefix="ingest")
    pending: deque[Future[RunPart]] = deque()
    try:
        for run in runs:
            pending.append(pool.submit(ingest_run, run, campaign))
            if len(pending) >= workers * IN_FLIGHT_PER_WORKER:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _samples_writer(path: Path, first: pa.Table) -> pq.ParquetWriter:
    """A writer of row groups shaped like first (run_samples), whose file declares the samples
    table's Arrow schema (SAMPLES_ARROW: large_string, not the dictionaries it is handed), the
    way pyarrow stores a schema (the ARROW:schema key, its IPC form in base64)."""
    writer = pq.ParquetWriter(
        path,
        first.schema,
        compression="zstd",
        use_dictionary=DICTIONARY_COLUMNS,
        column_encoding=COLUMN_ENCODING,
        store_schema=False,
    )
    schema = base64.b64encode(SAMPLES_ARROW.serialize().to_pybytes())
    writer.add_key_value_metadata({"ARROW:schema": schema})
    return writer


def ingest(raw_campaign: Path, out_dir: Path, workers: int | None = None) -> IngestReport:
    """The tables of raw_campaign in out_dir (module docstring); runs are read by workers
    threads (default: available_cpus()), and the tables are those of one."""
    campaign = str(layout.read_plan(raw_campaign).get("campaign") or raw_campaign.name)
    report = IngestReport()
    rows: list[dict[str, Any]] = []
    series: list[pl.DataFrame] = []

    def write_samples(tmp: Path) -> None:
        writer: pq.ParquetWriter | None = None
        # One run's samples are written while the next runs are read (pyarrow writes without
        # the GIL): the write took half the stage's time when it ran in turn.
        background = ThreadPoolExecutor(max_workers=1)
        pending: Future[None] | None = None
        try:
            for part in _parts(raw_campaign, campaign, workers or available_cpus()):
                report.runs += 1
                rows.append(part.row)
                if part.samples is None or part.series is None:
                    continue
                report.runs_ok += 1
                report.bad_rows.update(part.bad_rows)
                report.bad_files.update(part.unread)
                series.append(part.series)
                if part.samples.num_rows:
                    if writer is None:
                        writer = _samples_writer(tmp, part.samples)
                    if pending is not None:
                        pending.result()  # row groups in run order; an error stops the stage
                    pending = background.submit(writer.write_table, part.samples)
                    report.samples += part.samples.num_rows
            if pending is not None:
                pending.result()
        finally:
            background.shutdown(wait=True)
            if writer is not None:
                writer.close()
        if writer is None:  # no ok run: an empty table with the columns, so later stages find one
            tables.empty(tables.SAMPLES_SCHEMA).write_parquet(tmp, compression="zstd")

    replace_atomically(out_dir / "samples.parquet", write_samples)
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
