"""Importers: earlier studies' own raw formats -> Netstick's tables (samples, runs, resources).

Each importer module (netcelerity, envirostick) has ``import_dir(path) -> ImportResult`` and a
CLI ``main(argv)`` (``python -m stats.importers.<name> DIR --out OUTDIR``). The tables follow the
statistics stage's shapes (samples.parquet and runs.parquet columns), so the same statistics run
on a study's data and on Netstick's. Two rules hold for every importer:

- A bad row never stops an import: it is counted per file in ``bad_rows`` (with the first few
  reasons in ``problems``) and the import goes on.
- Each study's known measurement flaws travel with its data: in ``flaws`` (dataset-wide) and in
  the runs table's ``flaws`` column (";"-separated, per run), so a re-analysis cannot quietly
  compare quantities that are not the same.

Imported rows carry ``source`` (the study's name). Their (campaign, cell_id, run_id) may equal a
Netstick run's of the same configuration (e.g. an idle cell of the net-celerity campaign), so
tables from several sources are keyed by source as well.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from stats.summary import percentiles
from workflow.campaign import records
from workflow.harness.cell import derive_cell_id

# -- table shapes (the statistics stage's spec) -------------------------------------------------

SAMPLES_SCHEMA: dict[str, pl.DataType] = {
    "campaign": pl.String(),
    "cell_id": pl.String(),
    "run_id": pl.String(),
    "t_unix_ns": pl.Int64(),
    "t_s": pl.Float64(),
    "player": pl.Int32(),
    "seq": pl.Int64(),
    "kind": pl.String(),
    "rtt_us": pl.Float64(),
    "send_late_us": pl.Float64(),
    "source": pl.String(),
}

RUNS_SCHEMA: dict[str, pl.DataType] = {
    "campaign": pl.String(),
    "cell_id": pl.String(),
    "run_id": pl.String(),
    "block": pl.String(),
    "run_order": pl.Int64(),
    "seed": pl.Int64(),
    "prototype": pl.String(),
    "library_version": pl.String(),
    "transport": pl.String(),
    "transport_options": pl.String(),
    "players": pl.Int64(),
    "workload": pl.String(),
    "params": pl.String(),
    "network_profile": pl.String(),
    "duration_s": pl.Float64(),
    "status": pl.String(),
    "reason": pl.String(),
    "isolation": pl.String(),
    "host": pl.String(),
    "commit": pl.String(),
    "source": pl.String(),
    "flaws": pl.String(),
    **{
        f"rtt_{k}_{p}_us": pl.Float64()
        for k in ("net", "app", "lib")
        for p in ("p50", "p95", "p99")
    },
    "rtt_net_samples": pl.Int64(),
    "send_late_p99_us": pl.Float64(),
    "server_cpu_cores": pl.Float64(),
    "client_cpu_cores": pl.Float64(),
    "server_rss_bytes": pl.Int64(),
    "server_rx_bytes_per_s": pl.Float64(),
    "server_tx_bytes_per_s": pl.Float64(),
    "players_connected_max": pl.Int64(),
    "warmup_cut_s": pl.Float64(),
    "warmup_second_half": pl.Boolean(),
}

# Per-sample resource readings in long form, one row per (time, process, metric[, NIC]), so that
# studies with different monitors (psutil here, Unity profiler counters there) share one shape.
# proc: "server", "client-<player>", or "host" for host-wide counters (NICs, host CPU).
RESOURCES_SCHEMA: dict[str, pl.DataType] = {
    "campaign": pl.String(),
    "cell_id": pl.String(),
    "run_id": pl.String(),
    "source": pl.String(),
    "proc": pl.String(),
    "metric": pl.String(),
    "nic": pl.String(),
    "t_unix_ns": pl.Int64(),
    "t_s": pl.Float64(),
    "value": pl.Float64(),
}


def resource_frame(
    ids: dict[str, str],
    source: str,
    proc: str,
    metric: str,
    nic: str | None,
    t_unix_ns: np.ndarray,
    t_s: np.ndarray,
    values: np.ndarray,
) -> pl.DataFrame:
    """One resource series in the long shape of RESOURCES_SCHEMA (NaN values left out);
    ids holds campaign, cell_id and run_id."""
    n = len(t_s)
    return pl.DataFrame(
        {
            "campaign": pl.repeat(ids["campaign"], n, eager=True),
            "cell_id": pl.repeat(ids["cell_id"], n, eager=True),
            "run_id": pl.repeat(ids["run_id"], n, eager=True),
            "source": pl.repeat(source, n, eager=True),
            "proc": pl.repeat(proc, n, eager=True),
            "metric": pl.repeat(metric, n, eager=True),
            "nic": pl.repeat(nic, n, dtype=pl.String, eager=True),
            "t_unix_ns": t_unix_ns,
            "t_s": t_s,
            "value": np.asarray(values, dtype=np.float64),
        },
        schema=RESOURCES_SCHEMA,
    ).filter(pl.col("value").is_not_nan())


MAX_PROBLEMS_PER_FILE = 5  # reasons kept per file; the count in bad_rows is always complete


@dataclass
class ImportResult:
    """What an importer read: the tables, and everything it could not or should not trust."""

    samples: pl.DataFrame
    runs: pl.DataFrame
    resources: pl.DataFrame
    bad_rows: dict[str, int] = field(default_factory=dict)  # file (relative) -> rows skipped
    flaws: list[str] = field(default_factory=list)  # known measurement flaws of the dataset
    problems: list[str] = field(default_factory=list)  # first reasons for the bad rows


class BadRows:
    """Counts skipped rows per file and keeps the first few reasons of each file."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.counts: dict[str, int] = {}
        self.problems: list[str] = []

    def name(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.root))
        except ValueError:
            return str(path)

    def touch(self, path: Path) -> None:
        """Every file read gets an entry, so 0 says "read, nothing bad" rather than "not read"."""
        self.counts.setdefault(self.name(path), 0)

    def add(self, path: Path, line_no: int | None, reason: str) -> None:
        name = self.name(path)
        n = self.counts.get(name, 0)
        self.counts[name] = n + 1
        if n < MAX_PROBLEMS_PER_FILE:
            where = f"{name}:{line_no}" if line_no is not None else name
            self.problems.append(f"{where}: {reason}")


# -- building the tables ------------------------------------------------------------------------


def rows_frame(
    rows: Iterable[Mapping[str, Any]], schema: Mapping[str, pl.DataType]
) -> pl.DataFrame:
    """A DataFrame of dict rows with exactly the schema's columns (missing keys are null)."""
    rows = list(rows)
    data = {name: [r.get(name) for r in rows] for name in schema}
    return pl.DataFrame(data, schema=dict(schema))


def empty(schema: Mapping[str, pl.DataType]) -> pl.DataFrame:
    return pl.DataFrame(schema=dict(schema))


def concat(frames: Sequence[pl.DataFrame], schema: Mapping[str, pl.DataType]) -> pl.DataFrame:
    frames = [f for f in frames if f.height]
    return pl.concat(frames, how="vertical") if frames else empty(schema)


def cell_id(
    prototype: str,
    transport: str,
    players: int,
    workload: str,
    params: Mapping[str, str],
    transport_options: Mapping[str, str],
    network_profile: str,
    duration_s: float,
) -> str:
    """The cell id Netstick would give this configuration (workflow.harness.cell.derive_cell_id).

    Transport options stay out of the id: the studies' settings are recorded in the runs table's
    transport_options, but they were library defaults or editor settings, not a varied factor.
    """
    del transport_options
    return derive_cell_id(
        {
            # derive_cell_id names a prototype by its manifest's folder (unity/<name>/...).
            "prototype": f"unity/{prototype}/prototype.yaml",
            "transport": transport,
            "players": players,
            "workload": workload,
            "params": dict(params),
            "transport_options": {},
            "network_profile": network_profile,
            "duration_s": duration_s,
        }
    )


def rtt_metrics(rtt_us: npt.ArrayLike, kind: str = "lib") -> dict[str, float | None]:
    """rtt_<kind>_{p50,p95,p99}_us of the given values (Netstick's percentile method)."""
    p = percentiles(rtt_us)
    if p is None:
        return {}
    return {
        f"rtt_{kind}_p50_us": round(p.p50, 1),
        f"rtt_{kind}_p95_us": round(p.p95, 1),
        f"rtt_{kind}_p99_us": round(p.p99, 1),
    }


def join_flaws(flaws: Iterable[str]) -> str:
    """The runs table's flaws text: ";"-separated, in order, without repeats."""
    seen: list[str] = []
    for f in flaws:
        f = f.replace(";", ",").strip()
        if f and f not in seen:
            seen.append(f)
    return ";".join(seen)


def parse_float(text: str) -> float | None:
    """A finite float, or None (empty, not a number, inf, nan)."""
    try:
        v = float(text)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def counter_rates(t_s: npt.NDArray[np.float64], counter: npt.NDArray[np.float64]) -> np.ndarray:
    """Per-interval rate of a cumulative counter (NaN for the first row, gaps and resets)."""
    out = np.full(t_s.shape, np.nan)
    if t_s.size < 2:
        return out
    dt = np.diff(t_s)
    dv = np.diff(counter)
    ok = (dt > 0) & (dv >= 0)  # a counter that goes down was reset: no rate for that interval
    out[1:][ok] = dv[ok] / dt[ok]
    return out


# -- output ----------------------------------------------------------------------------------


def write_tables(result: ImportResult, out_dir: Path) -> list[Path]:
    """samples.parquet, runs.parquet and resources.parquet in out_dir, each written atomically."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, table in (
        ("samples", result.samples),
        ("runs", result.runs),
        ("resources", result.resources),
    ):
        written.append(records.replace_atomically(out_dir / f"{name}.parquet", table.write_parquet))
    return written


def run_cli(
    argv: Sequence[str] | None,
    prog: str,
    description: str,
    import_fn: Callable[[Path, argparse.Namespace], ImportResult],
    add_arguments: Callable[[argparse.ArgumentParser], None] | None = None,
) -> int:
    """The importers' shared command line: DIR --out OUTDIR; prints counts, bad rows, flaws."""
    ap = argparse.ArgumentParser(prog=prog, description=description)
    ap.add_argument("dir", type=Path, help="the study's raw data directory")
    ap.add_argument("--out", type=Path, required=True, help="directory for the Parquet tables")
    if add_arguments is not None:
        add_arguments(ap)
    args = ap.parse_args(argv)
    if not args.dir.is_dir():
        ap.error(f"{args.dir}: not a directory")
    result = import_fn(args.dir, args)
    write_tables(result, args.out)
    bad = {k: v for k, v in result.bad_rows.items() if v}
    print(
        f"{result.samples.height} samples, {result.runs.height} runs, "
        f"{result.resources.height} resource rows -> {args.out}"
    )
    print(f"bad rows: {json.dumps(bad, sort_keys=True) if bad else 'none'}")
    for p in result.problems:
        print(f"  {p}")
    print("known flaws:")
    for f in result.flaws:
        print(f"  - {f}")
    return 0
