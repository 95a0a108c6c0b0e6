"""Ingest: a campaign's raw run directories become tidy Parquet tables.

    data/raw/<campaign>/  ->  data/results/<campaign>/samples.parquet   one row per RTT sample
                                                     runs.parquet      one row per planned run
                                                     runs.csv          the same, for R
                                                     timeseries.parquet per-second series per run
                                                     ingest.json       rows read, bad rows per file

Samples are read with polars against the log schema (workflow/schema.py: the header must match,
every value must parse); a row that does not parse is counted per file and left out, never a
crash. They are streamed run by run into one Parquet file (row group per run), so memory holds
one run at a time. Every planned run gets a row in runs.parquet, ok or not, with the provenance
of its meta.json (commit, host, isolation, seed, run order).
"""

from __future__ import annotations

import argparse
import json
import os
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from prototypes.contract.columns import RTT_COLUMNS
from stats import runs_table, timeseries, warmup
from workflow.campaign import records
from workflow.campaign.records import read_json

SAMPLE_SCHEMA = {
    "t_unix_ns": pl.Int64,
    "player": pl.Int32,
    "seq": pl.Int64,
    "rtt_us": pl.Float64,
    "kind": pl.String,
    "send_late_us": pl.Float64,
}
REQUIRED = ("t_unix_ns", "player", "seq", "rtt_us", "kind")  # send_late_us may be empty


@dataclass
class IngestReport:
    runs: int = 0
    runs_ok: int = 0
    samples: int = 0
    bad_rows: dict[str, int] = field(default_factory=dict)  # file -> rows left out
    bad_files: dict[str, str] = field(default_factory=dict)  # file -> why it was not read


def read_rtt_file(path: Path, report: IngestReport) -> pl.DataFrame:
    """One client-<k>.rtt.csv, validated; unparseable rows counted in report and dropped."""
    with path.open("rb") as f:
        header = f.readline().decode(errors="replace").strip()
    if header != ",".join(RTT_COLUMNS):
        report.bad_files[str(path)] = f"header {header!r}, expected {','.join(RTT_COLUMNS)!r}"
        return pl.DataFrame(schema=SAMPLE_SCHEMA)
    df = pl.read_csv(
        path,
        schema=SAMPLE_SCHEMA,
        ignore_errors=True,  # a bad value becomes null and the row is counted below
        truncate_ragged_lines=True,
    )
    valid = pl.all_horizontal(pl.col(c).is_not_null() for c in REQUIRED) & pl.col("kind").is_in(
        ["net", "app", "lib"]
    )
    bad = df.height - df.filter(valid).height
    if bad:
        report.bad_rows[str(path)] = bad
    return df.filter(valid)


def run_samples(
    run: Path, campaign: str, cell_id: str, run_id: str, report: IngestReport
) -> pl.DataFrame:
    meta = read_json(run / "meta.json") or {}
    start = meta.get("window_start_unix_ns")
    frames = [read_rtt_file(p, report) for p in sorted((run / "logs").glob("client-*.rtt.csv"))]
    df = pl.concat(frames) if frames else pl.DataFrame(schema=SAMPLE_SCHEMA)
    t_s = (
        ((pl.col("t_unix_ns") - start) / 1e9) if start is not None else pl.lit(float("nan"))
    ).alias("t_s")
    # float32: the logs carry µs to 0.1 and seconds to the µs; half the bytes to read back.
    return df.select(
        pl.lit(campaign).cast(pl.Categorical).alias("campaign"),
        pl.lit(cell_id).cast(pl.Categorical).alias("cell_id"),
        pl.lit(run_id).cast(pl.Categorical).alias("run_id"),
        "t_unix_ns",
        t_s.cast(pl.Float32),
        "player",
        "seq",
        pl.col("kind").cast(pl.Categorical),
        pl.col("rtt_us").cast(pl.Float32),
        pl.col("send_late_us").cast(pl.Float32),
        pl.lit("netstick").cast(pl.Categorical).alias("source"),
    )


def warmup_of(samples: pl.DataFrame) -> warmup.WarmupCut | None:
    """MSER-5 on the run's per-second median net RTT."""
    net = samples.filter((pl.col("kind") == "net") & (pl.col("t_s") >= 0))
    if net.height == 0:
        return None
    per_s = (
        net.group_by(pl.col("t_s").floor().alias("second"))
        .agg(pl.col("rtt_us").median())
        .sort("second")
    )
    return warmup.mser5(per_s["rtt_us"].to_numpy(), step_s=1.0)


def _after_cuts(samples: pl.DataFrame, mser_cut_s: float) -> dict[str, float | None]:
    """Net RTT p50 after the MSER-5 cut and after Net-Celerity's fixed cut, side by side."""
    net = samples.filter(pl.col("kind") == "net")
    out: dict[str, float | None] = {"warmup_fixed_cut_s": warmup.NET_CELERITY_CUT_S}
    for name, cut in (("mser", mser_cut_s), ("fixed_cut", warmup.NET_CELERITY_CUT_S)):
        kept = net.filter(pl.col("t_s") >= cut)["rtt_us"]
        out[f"rtt_net_p50_after_{name}_us"] = (
            float(kept.quantile(0.5, "linear")) if kept.len() else None  # type: ignore[arg-type]
        )
    return out


def ingest(raw_campaign: Path, out_dir: Path) -> IngestReport:
    plan = read_json(raw_campaign / "plan.json")
    if plan is None:
        raise FileNotFoundError(f"{raw_campaign / 'plan.json'}: missing; run the campaign first")
    report = IngestReport()
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / f".samples.parquet.tmp-{os.getpid()}"
    writer: pq.ParquetWriter | None = None
    rows: list[dict[str, Any]] = []
    series: list[pl.DataFrame] = []
    try:
        for row in runs_table.rows(raw_campaign):
            report.runs += 1
            meta = read_json(raw_campaign / row["cell_id"] / row["run_id"] / "meta.json") or {}
            row["commit"] = ((meta.get("versions") or {}).get("git") or {}).get("commit")
            row["source"] = "netstick"
            row["flaws"] = ""
            if row["status"] == "ok":
                report.runs_ok += 1
                df = run_samples(
                    raw_campaign / row["cell_id"] / row["run_id"],
                    plan["campaign"],
                    row["cell_id"],
                    row["run_id"],
                    report,
                )
                ids = {"campaign": plan["campaign"], "cell_id": row["cell_id"]}
                ids["run_id"] = row["run_id"]
                per_s, unread = timeseries.run_series(
                    raw_campaign / row["cell_id"] / row["run_id"], df, meta, ids
                )
                series.append(per_s)
                report.bad_files.update(unread)
                cut = warmup_of(df)
                if cut is not None:
                    row["warmup_cut_s"] = cut.cut_s
                    row["warmup_second_half"] = cut.second_half
                    row["warmup_note"] = cut.reason
                    row.update(_after_cuts(df, cut.cut_s or 0.0))
                if df.height:
                    table = df.to_arrow()
                    if writer is None:
                        writer = pq.ParquetWriter(tmp, table.schema, compression="zstd")
                    writer.write_table(table)
                    report.samples += df.height
            rows.append(row)
    finally:
        if writer is not None:
            writer.close()
    if writer is not None:
        os.replace(tmp, out_dir / "samples.parquet")
    else:  # no ok run: an empty table with the columns, so later stages still find one
        empty = run_samples(Path("/nonexistent"), plan["campaign"], "", "", report).clear()
        _write_parquet(empty, out_dir / "samples.parquet")
    runs = pl.DataFrame(rows, infer_schema_length=None)
    _write_parquet(runs, out_dir / "runs.parquet")
    records.replace_atomically(out_dir / "runs.csv", runs.write_csv)
    per_s = pl.concat(series) if series else pl.DataFrame(schema=timeseries.SCHEMA)
    _write_parquet(per_s, out_dir / "timeseries.parquet")
    doc = {
        "campaign": plan["campaign"],
        "runs": report.runs,
        "runs_ok": report.runs_ok,
        "samples": report.samples,
        "bad_rows": report.bad_rows,
        "bad_files": report.bad_files,
    }
    records.write_text(out_dir / "ingest.json", json.dumps(doc, indent=2) + "\n")
    return report


def _write_parquet(df: pl.DataFrame, path: Path) -> None:
    records.replace_atomically(path, lambda tmp: df.write_parquet(tmp, compression="zstd"))


def summarise(samples: Path | str, threads: int = 2) -> pl.DataFrame:
    """Per run and probe kind over the window (t_s >= 0): n, p50, p95, p99 of rtt_us and p99
    of send lateness.

    samples.parquet holds each run in consecutive row groups (ingest writes run by run), so the
    file is read row group by row group, `threads` at a time, and only one run's values are in
    memory at once. t_s is read only where the row group's statistics say some sample lies
    before the window. Percentiles are numpy's "linear" (as in stats.summary).
    """
    f = pq.ParquetFile(samples)
    names = f.schema_arrow.names
    t_index = names.index("t_s")
    rows: list[dict[str, Any]] = []
    current: tuple[str, str] | None = None
    parts: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}

    local = threading.local()  # a ParquetFile is not safe to read from two threads at once

    def read(i: int) -> pa.Table:
        stats = f.metadata.row_group(i).column(t_index).statistics
        need_t = stats is None or not stats.has_min_max or stats.min < 0
        cols = ["cell_id", "run_id", "kind", "rtt_us", "send_late_us"] + (["t_s"] if need_t else [])
        if not hasattr(local, "file"):
            local.file = pq.ParquetFile(samples, read_dictionary=["cell_id", "run_id", "kind"])
        table: pa.Table = local.file.read_row_group(i, columns=cols, use_threads=False)
        return table

    def flush() -> None:
        if current is None:
            return
        for kind, chunks in sorted(parts.items()):
            rtt = np.concatenate([c[0] for c in chunks])
            late = np.concatenate([c[1] for c in chunks])
            late = late[np.isfinite(late)]
            p50, p95, p99 = np.percentile(rtt, [50, 95, 99]) if rtt.size else (np.nan,) * 3
            rows.append(
                {
                    "cell_id": current[0],
                    "run_id": current[1],
                    "kind": kind,
                    "n": int(rtt.size),
                    "rtt_p50_us": float(p50),
                    "rtt_p95_us": float(p95),
                    "rtt_p99_us": float(p99),
                    "send_late_p99_us": float(np.percentile(late, 99)) if late.size else None,
                }
            )
        parts.clear()

    def tables() -> Iterator[pa.Table]:
        # Read ahead a few row groups only, so memory stays at about one run.
        with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
            step = 2 * max(1, threads)
            for start in range(0, f.num_row_groups, step):
                yield from pool.map(read, range(start, min(start + step, f.num_row_groups)))

    if True:
        for table in tables():
            if table.num_rows == 0:
                continue
            keep = None
            if "t_s" in table.column_names:
                keep = table.column("t_s").to_numpy() >= 0
            kind_codes, kind_names = _codes(table.column("kind"))
            cell_codes, cell_names = _codes(table.column("cell_id"))
            run_codes, run_names = _codes(table.column("run_id"))
            rtt_all = table.column("rtt_us").to_numpy()
            late_all = table.column("send_late_us").to_numpy(zero_copy_only=False)
            # Normally one run per row group; a group holding several is split here.
            if len(cell_names) == 1 and len(run_names) == 1:
                pairs = np.zeros((1, 2), dtype=np.int64)
            else:
                pairs = np.unique(np.stack([cell_codes, run_codes]), axis=1).T
            for c, r in pairs:
                key = (cell_names[c], run_names[r])
                if key != current:
                    flush()
                    current = key
                sel = (cell_codes == c) & (run_codes == r) if len(pairs) > 1 else None
                if keep is not None:
                    sel = keep if sel is None else sel & keep
                for k, kind in enumerate(kind_names):
                    m = kind_codes == k if sel is None else sel & (kind_codes == k)
                    if m.any():
                        parts.setdefault(kind, []).append((rtt_all[m], late_all[m]))
        flush()
    return pl.DataFrame(rows, infer_schema_length=None).sort("cell_id", "run_id", "kind")


def _codes(column: pa.ChunkedArray) -> tuple[np.ndarray, list[str]]:
    """Integer codes and their names of a string or dictionary column."""
    arr = column.combine_chunks()
    if not pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_encode()
    return arr.indices.to_numpy(zero_copy_only=False), arr.dictionary.to_pylist()


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m stats.ingest", description=__doc__)
    ap.add_argument("raw_campaign", type=Path, help="data/raw/<campaign>")
    ap.add_argument("--out", type=Path, required=True, help="data/results/<campaign>")
    args = ap.parse_args(argv)
    r = ingest(args.raw_campaign, args.out)
    bad = sum(r.bad_rows.values())
    print(
        f"{r.runs} runs ({r.runs_ok} ok), {r.samples} samples, {bad} bad rows in "
        f"{len(r.bad_rows)} files, {len(r.bad_files)} unreadable files -> {args.out}"
    )
    for path, n in sorted(r.bad_rows.items()):
        print(f"  {path}: {n} rows left out")
    for path, why in sorted(r.bad_files.items()):
        print(f"  {path}: not read: {why}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
