"""bench-stats: ingesting and summarising 100 million RTT samples (data/bench/stats.json).

1. Synthetic samples, 1000 runs x 100 000 (the shape of samples.parquet), are written as Parquet
   in chunks (not timed).
2. `stats.ingest.summarise` (per run and kind: n, p50, p95, p99 of RTT, p99 of lateness) reads them,
   in a child process whose wall time and peak RSS are measured.
3. The way the Net-Celerity scripts read their results: pandas.read_csv of the CSV, then a groupby
   quantile, with their environment's pandas 2.2.1 (and, for comparison, this project's pandas),
   on a subset (10 million rows by default; the full 100 million as CSV would need ~5 GB
   and far more memory than the target allows), and the same subset from Parquet with step 2, so
   the speed-up compares equal sizes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from workflow.files import REPO

RESULT_SCHEMA = 1
TARGETS = {
    "summarise_s": ("<=", 300.0, "ingest and summarise 100 M samples from Parquet, 2 cores"),
    "summarise_peak_rss_gib": ("<=", 4.0, "peak memory of that"),
    "speedup_vs_pandas_csv": (
        ">=",
        10.0,
        "Parquet summary against pandas.read_csv as in Net-Celerity's environment, same rows",
    ),
}
SAMPLES_PER_RUN = 100_000


def write_synthetic(path: Path, samples: int, seed: int = 1) -> int:
    """samples rows in runs of SAMPLES_PER_RUN, kinds net/app in 4:1, lognormal RTTs."""
    rng = np.random.default_rng(seed)
    runs = max(1, samples // SAMPLES_PER_RUN)
    writer: pq.ParquetWriter | None = None
    kinds = pa.array(["net", "app"])
    try:
        for r in range(runs):
            n = SAMPLES_PER_RUN
            t = 1_700_000_000_000_000_000 + np.sort(rng.integers(0, 120 * 10**9, n))
            table = pa.table(
                {
                    "campaign": pa.array(["synthetic"] * n).dictionary_encode(),
                    "cell_id": pa.array([f"cell{r // 10}"] * n).dictionary_encode(),
                    "run_id": pa.array([f"r{r % 10 + 1}"] * n).dictionary_encode(),
                    "t_unix_ns": t,
                    "t_s": ((t - t[0]) / 1e9).astype(np.float32),
                    "player": rng.integers(0, 200, n, dtype=np.int32),
                    "seq": np.arange(n, dtype=np.int64),
                    "kind": pa.DictionaryArray.from_arrays(
                        (rng.random(n) < 0.2).astype(np.int8), kinds
                    ),
                    # µs to 0.1: what the prototypes log
                    "rtt_us": np.round(rng.lognormal(np.log(5000), 0.4, n), 1).astype(np.float32),
                    "send_late_us": np.round(rng.exponential(80.0, n), 1).astype(np.float32),
                    "source": pa.array(["synthetic"] * n).dictionary_encode(),
                }
            )
            if writer is None:
                writer = pq.ParquetWriter(path, table.schema, compression="zstd")
            writer.write_table(table)
    finally:
        if writer is not None:
            writer.close()
    return runs * SAMPLES_PER_RUN


def _netcelerity_python(env: Path) -> str:
    python = env / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "pandas==2.2.1", "numpy==1.26.4"],
            check=True,
        )
    return str(python)


def _child(code: str, python: str = sys.executable) -> tuple[float, float]:
    """Run code in a fresh interpreter: (wall s, its own peak RSS in GiB, from wait4)."""
    t0 = time.monotonic()
    proc = subprocess.Popen([python, "-c", code])
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"benchmark child failed ({proc.returncode}): {code}")
    return wall, usage.ru_maxrss / 2**20  # KiB -> GiB


def run(out: Path, work: Path, samples: int, subset: int) -> dict[str, Any]:
    from workflow.cli.bench.harness import target_rows
    from workflow.cli.bench.prototypes import write_json_atomically
    from workflow.harness import provenance

    work.mkdir(parents=True, exist_ok=True)
    big = work / "samples.parquet"
    small = work / "subset.parquet"
    small_csv = work / "subset.csv"
    n_big = write_synthetic(big, samples)
    n_small = write_synthetic(small, subset, seed=2)
    pq.read_table(small).to_pandas().to_csv(small_csv, index=False)

    summarise = "from stats.ingest import summarise; print(summarise({!r}).height)"
    big_s, big_gib = _child(summarise.format(str(big)))
    small_s, _ = _child(summarise.format(str(small)))
    pandas_code = (
        "import pandas as pd; d = pd.read_csv({!r}); d = d[d.t_s >= 0]; "
        "print(d.groupby(['cell_id', 'run_id', 'kind'])['rtt_us']"
        ".quantile([0.5, 0.95, 0.99]).shape)"
    )
    # The Net-Celerity scripts' own environment (their environment.yml): pandas 2.2.1 on numpy
    # 1.26.4, in a venv of its own; and this project's pandas for comparison.
    theirs = _netcelerity_python(work.parent / "netcelerity-env")
    pandas_s, pandas_gib = _child(pandas_code.format(str(small_csv)), theirs)
    pandas3_s, _ = _child(pandas_code.format(str(small_csv)))
    measured = {
        "samples": n_big,
        "summarise_s": round(big_s, 2),
        "summarise_peak_rss_gib": round(big_gib, 3),
        "subset_samples": n_small,
        "subset_parquet_s": round(small_s, 2),
        "subset_pandas_csv_s": round(pandas_s, 2),
        "subset_pandas_peak_rss_gib": round(pandas_gib, 3),
        "pandas_version_netcelerity": "2.2.1",
        "subset_pandas3_csv_s": round(pandas3_s, 2),
        # Equal row counts, process start-up included on both sides (the conservative ratio).
        "speedup_vs_pandas_csv": round(pandas_s / small_s, 1),
        "speedup_vs_pandas3_csv": round(pandas3_s / small_s, 1),
        # Per row at scale: the 100 M summary against the 10 M pandas reading, scaled.
        "speedup_per_row_vs_pandas_csv": round((pandas_s / n_small) / (big_s / n_big), 1),
        "parquet_bytes": big.stat().st_size,
        "csv_bytes_subset": small_csv.stat().st_size,
    }
    doc = {
        "schema": RESULT_SCHEMA,
        "benchmark": "bench-stats",
        "provenance": provenance.collect(REPO),
        "measured": measured,
        "targets": target_rows(measured, TARGETS),
    }
    write_json_atomically(out, doc)
    for p in (big, small, small_csv):
        os.unlink(p)
    return doc


def main(argv: Sequence[str] | None = None) -> int:
    from workflow.cli.bench.harness import summary

    ap = argparse.ArgumentParser(prog="python -m workflow.cli.bench.stats", description=__doc__)
    ap.add_argument("--out", type=Path, default=Path("data/bench/stats.json"))
    ap.add_argument("--work", type=Path, default=Path("data/bench-runs/stats"))
    ap.add_argument("--samples", type=int, default=100_000_000)
    ap.add_argument("--subset", type=int, default=10_000_000)
    args = ap.parse_args(argv)
    doc = run(args.out, args.work, args.samples, args.subset)
    print(summary(doc))
    print(json.dumps(doc["measured"], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
