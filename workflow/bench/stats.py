"""bench-stats: the statistics stage on 100 million synthetic RTT samples (data/bench/stats.json).

1. Synthetic raw runs are written in the raw layout (not timed): plan.json, a record and a
   meta.json with the measurement window per run, and one client-0.rtt.csv of SAMPLES_PER_RUN
   rows per run (net and app probes 4:1, lognormal RTTs to 0.1 µs as the prototypes log them,
   send lateness; a few seconds of samples after the window), --samples rows in all.
2. The path the pipeline takes, in a child process whose wall time and peak RSS are measured:
   stats.ingest (each run's rtt.csv read once; per-run summaries over the window, samples.parquet,
   per-second series, warm-up) and then stats.analyse (cells, comparisons, findings).
3. The way the Net-Celerity scripts read their results: pandas.read_csv of each run's CSV, then a
   groupby quantile over the window, with their environment's pandas 2.2.1 (and, for
   comparison, this project's pandas), on a subset campaign (--subset rows, 10 million by
   default), against step 2 on the same subset, so the speed-up compares equal rows.
4. Peers written as a competent user would, on the same subset files: polars, and pandas with
   typed columns, each reading one run at a time and computing the per-run summaries the
   pipeline's runs table holds (rows per kind, RTT p50, p95, p99 and max of net probes inside
   the window, send lateness p99); the pipeline's time is reported as a ratio to each.

    netstick bench stats [--samples N] [--subset N]   -> data/bench/stats.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from prototypes.contract.columns import RTT_COLUMNS
from workflow.bench import options, record
from workflow.bench.targets import target_rows, targets_text
from workflow.files import REPO

RESULT_SCHEMA = 2
TARGETS = {
    "pipeline_s": (
        "<=",
        300.0,
        "ingest (from the runs' rtt.csv) and analyse 100 M samples, 2 cores",
    ),
    "pipeline_peak_rss_gib": ("<=", 4.0, "peak memory of that"),
    "speedup_vs_pandas_csv": (
        ">=",
        10.0,
        "ingest and analyse against pandas.read_csv as in Net-Celerity's environment, same rows",
    ),
    "pipeline_over_polars": (
        "<=",
        2.0,
        "ingest and analyse 10 M samples against polars' per-run summaries of the same files",
    ),
    "pipeline_peak_rss_gib_10m": ("<=", 1.0, "peak memory of the pipeline at 10 M samples"),
    "pipeline_s_100m": ("<=", 30.0, "ingest and analyse 100 M samples"),
}
SAMPLES_PER_RUN = 100_000
RUNS_PER_CELL = 10
TRANSPORTS = ("tcp", "udp", "kcp", "enet", "quic")
WINDOW_S = 120
AFTER_WINDOW_S = 5  # players leaving: logged, but outside every summary
T0_NS = 1_700_000_000_000_000_000


def _cell(index: int, run: int) -> dict[str, Any]:
    transport = TRANSPORTS[index % len(TRANSPORTS)]
    players = 50 * (1 + (index // len(TRANSPORTS)) % 4)
    cell_id = f"synthetic-{transport}-p{players}-c{index}"
    return {
        "cell_id": cell_id,
        "run_id": f"r{run}",
        "prototype": "prototypes/reference/prototype.yaml",
        "library_version": "pinned",
        "transport": transport,
        "transport_options": {},
        "players": players,
        "workload": "stream",
        "params": {"cell": str(index)},
        "network_profile": "lan",
        "duration_s": float(WINDOW_S),
        "seed": index * RUNS_PER_CELL + run,
    }


def write_synthetic(raw: Path, samples: int, seed: int = 1) -> int:
    """A raw campaign of samples rows in runs of SAMPLES_PER_RUN; returns the rows written."""
    rng = np.random.default_rng(seed)
    runs = max(1, samples // SAMPLES_PER_RUN)
    plan_runs = []
    for r in range(runs):
        cell = _cell(r // RUNS_PER_CELL, r % RUNS_PER_CELL + 1)
        cell["run_order"] = r
        plan_runs.append({"key": f"{cell['cell_id']}/{cell['run_id']}", "block": "b", "cell": cell})
        run_dir = raw / cell["cell_id"] / cell["run_id"]
        (run_dir / "logs").mkdir(parents=True, exist_ok=True)
        n = SAMPLES_PER_RUN
        span_ns = (WINDOW_S + AFTER_WINDOW_S) * 10**9
        t = T0_NS + np.sort(rng.integers(0, span_ns, n))
        kind = np.where(rng.random(n) < 0.2, "app", "net")
        pl.DataFrame(
            {
                "t_unix_ns": t,
                "player": rng.integers(0, 200, n),
                "seq": np.arange(n),
                "rtt_us": np.round(rng.lognormal(np.log(5000), 0.4, n), 1),
                "kind": kind,
                "send_late_us": np.round(rng.exponential(80.0, n), 1),
            }
        ).select(RTT_COLUMNS).write_csv(run_dir / "logs" / "client-0.rtt.csv", float_precision=1)
        meta = {
            "window_start_unix_ns": T0_NS,
            "window_end_unix_ns": T0_NS + WINDOW_S * 10**9,
            "job": {"host": "synthetic"},
        }
        (run_dir / "meta.json").write_text(json.dumps(meta))
        (raw / cell["cell_id"] / f"{cell['run_id']}.json").write_text('{"status": "ok"}')
    (raw / "plan.json").write_text(json.dumps({"campaign": raw.name, "runs": plan_runs}))
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
    proc = subprocess.Popen([python, "-c", code], cwd=REPO)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"benchmark child failed ({proc.returncode}): {code}")
    return wall, usage.ru_maxrss / 2**20  # KiB -> GiB


# The pipeline's own steps, as the workflow's ingest and stats rules run them.
PIPELINE_CODE = (
    "from pathlib import Path; from stats.ingest import ingest; from stats.analyse import analyse; "
    "r = ingest(Path({raw!r}), Path({out!r})); analyse(Path({out!r})); print(r.samples)"
)
# Net-Celerity's way: each run's CSV with pandas, the window, a groupby quantile.
PANDAS_CODE = (
    "import glob, pandas as pd; "
    "d = pd.concat([pd.read_csv(f).assign(run=f) for f in sorted(glob.glob({pattern!r}))]); "
    "d = d[(d.t_unix_ns >= {start}) & (d.t_unix_ns < {end})]; "
    "print(d.groupby(['run', 'kind'])['rtt_us'].quantile([0.5, 0.95, 0.99]).shape)"
)


# The peers: per run, net probes inside the window: count, RTT p50/p95/p99/max, send-late p99.
POLARS_PEER_CODE = (
    "import glob, polars as pl; out = []\n"
    "schema = {{'t_unix_ns': pl.Int64, 'player': pl.Int64, 'seq': pl.Int64, "
    "'rtt_us': pl.Float64, 'kind': pl.String, 'send_late_us': pl.Float64}}\n"
    "for f in sorted(glob.glob({pattern!r})):\n"
    "    d = pl.read_csv(f, schema=schema).filter(pl.col('t_unix_ns').is_between({start}, {end}, "
    "closed='left') & (pl.col('kind') == 'net'))\n"
    "    out.append(d.select(pl.len(), *[pl.col('rtt_us').quantile(q, 'linear').alias(str(q)) "
    "for q in (0.5, 0.95, 0.99)], pl.col('rtt_us').max(), "
    "pl.col('send_late_us').quantile(0.99, 'linear').alias('late')))\n"
    "print(pl.concat(out).shape)"
)
PANDAS_PEER_CODE = (
    "import glob, pandas as pd; out = []\n"
    "types = {{'t_unix_ns': 'int64', 'player': 'int64', 'seq': 'int64', 'rtt_us': 'float64', "
    "'kind': 'category', 'send_late_us': 'float64'}}\n"
    "for f in sorted(glob.glob({pattern!r})):\n"
    "    d = pd.read_csv(f, dtype=types)\n"
    "    d = d[(d.t_unix_ns >= {start}) & (d.t_unix_ns < {end}) & (d.kind == 'net')]\n"
    "    q = d.rtt_us.quantile([0.5, 0.95, 0.99])\n"
    "    out.append((len(d), *q, d.rtt_us.max(), d.send_late_us.quantile(0.99)))\n"
    "print(len(out))"
)


def _peer(code: str, raw: Path) -> tuple[float, float]:
    return _child(
        code.format(
            pattern=str(raw / "*" / "*" / "logs" / "client-*.rtt.csv"),
            start=T0_NS,
            end=T0_NS + WINDOW_S * 10**9,
        )
    )


def _pipeline(raw: Path, out: Path) -> tuple[float, float]:
    return _child(PIPELINE_CODE.format(raw=str(raw), out=str(out)))


def _pandas(raw: Path, python: str = sys.executable) -> tuple[float, float]:
    code = PANDAS_CODE.format(
        pattern=str(raw / "*" / "*" / "logs" / "client-*.rtt.csv"),
        start=T0_NS,
        end=T0_NS + WINDOW_S * 10**9,
    )
    return _child(code, python)


def _bytes(root: Path, pattern: str) -> int:
    return sum(p.stat().st_size for p in root.glob(pattern))


def run(out: Path, work: Path, samples: int, subset: int = 10_000_000) -> dict[str, Any]:
    scratch = (work / "raw", work / "results")  # the bench's own: cleared before and after
    for d in scratch:
        shutil.rmtree(d, ignore_errors=True)
    big, small = work / "raw" / "synthetic", work / "raw" / "subset"
    n_big = write_synthetic(big, samples)
    n_small = write_synthetic(small, subset, seed=2)

    big_s, big_gib = _pipeline(big, work / "results" / "synthetic")
    small_s, small_gib = _pipeline(small, work / "results" / "subset")
    # The Net-Celerity scripts' own environment (their environment.yml): pandas 2.2.1 on numpy
    # 1.26.4, in a venv of its own; and this project's pandas for comparison.
    theirs = _netcelerity_python(work.parent / "netcelerity-env")
    pandas_s, pandas_gib = _pandas(small, theirs)
    pandas3_s, _ = _pandas(small)
    polars_s, polars_gib = _peer(POLARS_PEER_CODE, small)
    typed_s, typed_gib = _peer(PANDAS_PEER_CODE, small)
    measured = {
        "samples": n_big,
        "runs": n_big // SAMPLES_PER_RUN,
        "pipeline_s": round(big_s, 2),
        "pipeline_s_100m": round(big_s, 2) if n_big >= 100_000_000 else None,
        "pipeline_peak_rss_gib": round(big_gib, 3),
        "subset_samples": n_small,
        "subset_pipeline_s": round(small_s, 2),
        "pipeline_peak_rss_gib_10m": round(small_gib, 3),
        "subset_pandas_csv_s": round(pandas_s, 2),
        "subset_pandas_peak_rss_gib": round(pandas_gib, 3),
        "pandas_version_netcelerity": "2.2.1",
        "subset_pandas3_csv_s": round(pandas3_s, 2),
        # Equal row counts, process start-up included on both sides (the conservative ratio).
        "speedup_vs_pandas_csv": round(pandas_s / small_s, 1),
        "speedup_vs_pandas3_csv": round(pandas3_s / small_s, 1),
        # The peers of issue 25: the same files and per-run summaries, one run at a time.
        "subset_polars_s": round(polars_s, 2),
        "subset_polars_peak_rss_gib": round(polars_gib, 3),
        "subset_pandas_typed_s": round(typed_s, 2),
        "subset_pandas_typed_peak_rss_gib": round(typed_gib, 3),
        "pipeline_over_polars": round(small_s / polars_s, 2),
        "pipeline_over_pandas_typed": round(small_s / typed_s, 2),
        "csv_bytes": _bytes(big, "*/*/logs/*.rtt.csv"),
        "samples_parquet_bytes": (work / "results" / "synthetic" / "samples.parquet")
        .stat()
        .st_size,
    }
    body = {"measured": measured, "targets": target_rows(measured, TARGETS)}
    doc = record.write(out, "bench-stats", body, schema=RESULT_SCHEMA, repo=REPO)
    for d in scratch:
        shutil.rmtree(d)
    return doc


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, default=options.BENCH_DIR / "stats.json")
    p.add_argument("--work", type=Path, default=options.DATA / "bench-runs" / "stats")
    p.add_argument(
        "--samples",
        type=options.positive_int,
        default=100_000_000,
        help="RTT samples of the timed campaign, in runs of 100 000 (default 100 million)",
    )
    p.add_argument(
        "--subset",
        type=options.positive_int,
        default=10_000_000,
        help="RTT samples both the pipeline and pandas read (default 10 million)",
    )


def main(args: argparse.Namespace) -> int:
    doc = run(args.out, args.work, args.samples, args.subset)
    print(targets_text(doc["targets"]))
    print(f"results in {args.out}")
    return 0
