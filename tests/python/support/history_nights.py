"""Nights of a nightly campaign with known effects, as the history reads them: the runs tables
of consecutive nights for the trends (stats/history/trends.py), and nights imported into a
history store for the nightly decision (stats/history/store.py, decide.py). Values are drawn
from seeded generators, so every test sees the same nights."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from stats.history.store import import_night
from workflow.harness.environment import this_machine

# -- trends: nights labelled by the library version their runs record ---------------------------

TREND_NIGHTS = ("2.0.1", "2.0.2", "2.0.3", "2.0.4", "2.0.5", "2.0.6")
TREND_CELLS = ("kcp-p20-active", "tcp-p20-active", "enet-p20-active")
SLOW_FROM = 4  # kcp is 30 % slower from the fifth night on


def trend_nights(root: Path, runs_per_cell: int = 6) -> list[Path]:
    """root/night-<i>/runs.parquet for each of TREND_NIGHTS, oldest first; each night also has
    one failed run of the first cell."""
    rng = np.random.default_rng(3)
    paths = []
    for i, version in enumerate(TREND_NIGHTS):
        rows = []
        for cell in TREND_CELLS:
            base = 2000.0 * (1.3 if cell.startswith("kcp") and i >= SLOW_FROM else 1.0)
            for k in range(runs_per_cell):
                rows.append(
                    {"cell_id": cell, "run_id": f"r{k + 1}", "status": "ok",
                     "library_version": version,
                     "rtt_net_p50_us": base * float(rng.lognormal(0, 0.02))}
                )  # fmt: skip
        rows.append({"cell_id": TREND_CELLS[0], "run_id": "r99", "status": "failed",
                     "library_version": version, "rtt_net_p50_us": None})  # fmt: skip
        path = root / f"night-{i + 1}"
        path.mkdir(parents=True)
        pl.DataFrame(rows).write_parquet(path / "runs.parquet")
        paths.append(path)
    return paths


# -- the store: nights of campaign `nightly` imported into a history directory -------------------

STORE_CELLS = ("ref-tcp-p20", "ref-udp-p20", "ref-kcp-p20")


def night_runs(
    slow: dict[str, float] | None = None, seed: int = 0, cells: tuple[str, ...] = STORE_CELLS
) -> pl.DataFrame:
    """A night's runs table: 6 ok runs per cell, the cells in slow that much slower."""
    rng = np.random.default_rng(seed)
    rows = []
    for cell in cells:
        factor = (slow or {}).get(cell, 1.0)
        for k in range(6):
            rows.append(
                {"campaign": "nightly", "cell_id": cell, "run_id": f"r{k + 1}",
                 "status": "ok", "library_version": "v1.0.0", "network_profile": "lan",
                 "prototype": "reference", "transport": cell.split("-")[1],
                 "library": "example.com/netcode", "library_release": "v1.0.0",
                 "players": 20, "workload": "active",
                 "commit": "abc123", "host": "node1",
                 "rtt_net_p50_us": 2000.0 * factor * float(rng.lognormal(0, 0.02)),
                 "server_cpu_cores": 0.5 * float(rng.lognormal(0, 0.02))}
            )  # fmt: skip
    return pl.DataFrame(rows)


def night_results(root: Path, name: str, runs: pl.DataFrame) -> Path:
    """root/results/<name>/runs.parquet holding runs: a night's results directory."""
    path = root / "results" / name
    path.mkdir(parents=True)
    runs.write_parquet(path / "runs.parquet")
    return path


def import_nights(root: Path, slow_last: float | None = None, n: int = 5) -> Path:
    """root/history with n nights imported (the last one slow_last slower in the first cell)."""
    hist = root / "history"
    for i in range(n):
        slow = {STORE_CELLS[0]: slow_last} if slow_last and i == n - 1 else None
        res = night_results(root / f"n{i}", "nightly", night_runs(slow, seed=i))
        import_night(res, hist, time_utc=f"2026-11-2{i}T02:00:00+00:00", machine=this_machine())
    return hist
