"""Importers: earlier studies' own raw formats -> Netstick's tables (samples, runs, resources).

Each importer module (netcelerity, envirostick) has ``import_dir(path) -> ImportResult``
(``netstick import <name> DIR --out OUTDIR`` writes its tables). The samples and runs
tables have the columns of stats.tables, as ingest writes them, so the same statistics run on a
study's data and on Netstick's. Two rules hold for every importer:

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

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt
import polars as pl

from stats.summary import percentiles
from stats.tables import empty
from workflow.files import replace_atomically
from workflow.layout import derive_cell_id

# -- table shapes: samples and runs are the statistics stage's (stats.tables) -----------------

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
    """The cell id Netstick would give this configuration (workflow.layout.derive_cell_id).

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
        written.append(replace_atomically(out_dir / f"{name}.parquet", table.write_parquet))
    return written
