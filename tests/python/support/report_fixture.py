"""A synthetic campaign's stats-stage tables with every figure type of the report in it.

A real campaign that has every figure (idle and active, world sizes, environment modification,
two network profiles, several library versions) would take hours; the report only reads the
stats stage's tables, so the tests build those: runs.parquet and timeseries.parquet as ingest
writes them (values drawn from a seeded generator with known effects), then the real stats
stage (stats.analyse) and figure shaping (report.figdata) on top.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from stats import analyse, timeseries

from support.raw_campaign import plan_doc

RUNS = 6  # the fewest runs with an order-statistic interval of the median
VERSIONS = ("1.8", "1.9", "1.10", "1.11", "1.12", "1.13", "1.14", "1.15")
STEP_FROM = "1.12"  # versions from here on are 30 % slower: the change point to find


def _cells() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    def add(**kw: Any) -> None:
        cell = {
            "prototype": "reference", "library_version": "pinned", "transport": "tcp",
            "players": 20, "workload": "active", "params": "{}", "network_profile": "lan",
            "duration_s": 30.0,
        } | kw  # fmt: skip
        size = json.loads(cell["params"]).get("size", "")
        cell["cell_id"] = (
            f"reference-{cell['transport']}-p{cell['players']}-{cell['workload']}{size}-"
            f"{cell['network_profile']}-v{cell['library_version']}"
        )
        out.append(cell)

    for t in ("tcp", "kcp"):
        for p in (20, 60, 100):
            for w in ("idle", "active"):
                add(transport=t, players=p, workload=w)
        add(transport=t, network_profile="turbulent")
        for s in ("S", "M", "L"):
            add(transport=t, players=1, workload="world", params=json.dumps({"size": s}))
        add(transport=t, players=1, workload="envmod", params='{"blocks": 300}')
    for v in VERSIONS:
        add(transport="kcp", library_version=v, duration_s=31.0)
    return out


def _rtt_us(cell: dict[str, Any], rng: np.random.Generator) -> float:
    base = 800.0 + 40.0 * cell["players"] * (1.6 if cell["workload"] == "active" else 1.0)
    base *= 1.3 if cell["transport"] == "kcp" else 1.0
    base += 40_000.0 if cell["network_profile"] == "turbulent" else 0.0
    version = cell["library_version"]
    if version != "pinned" and VERSIONS.index(version) >= VERSIONS.index(STEP_FROM):
        base *= 1.3
    return float(base * rng.lognormal(0.0, 0.03))


def build(results: Path, seed: int = 7) -> dict[str, Any]:
    """Write runs.parquet, runs.csv, timeseries.parquet, the stats, the figure data and
    plan.json (as the facts step copies it) into results; return the plan."""
    rng = np.random.default_rng(seed)
    results.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    series: list[dict[str, Any]] = []
    order = 0
    for cell in _cells():
        for k in range(1, RUNS + 1):
            order += 1
            turbulent = cell["network_profile"] == "turbulent"
            row = {"campaign": "synthetic", "run_id": f"r{k}", "run_order": order, **cell,
                   "tick_rate_hz": 60.0, "rtt_source": "probe:10",
                   "profile_rtt_us": 27_484.0 if turbulent else 0.0}  # fmt: skip
            if cell["transport"] == "kcp" and cell["players"] == 100 and k == RUNS:
                # What the harness left (stats.runs_table.plan_row): Markdown's special
                # characters in the stderr lines must reach the page as written.
                stderr = ["on $PORT & ~/run: *all* `if`", "panic: bad <frame> | chunk_id [3]"]
                row |= {
                    "status": "failed",
                    "reason": "server_exit",
                    "exit_code": 2,
                    "attempts": 3,
                    "failed_attempts": 3,
                    "failed_process": "server",
                    "stderr_tail": json.dumps(stderr),
                    "failure_summary": "server exited with code 2 during the run",
                }
                rows.append(row)
                continue
            p50 = _rtt_us(cell, rng)
            size_factor = {"S": 1, "M": 4, "L": 16}.get(json.loads(cell["params"]).get("size"), 1)
            row |= {
                "status": "ok",
                "rtt_net_p50_us": p50,
                "rtt_net_p95_us": p50 * 1.5,
                "rtt_net_p99_us": p50 * 2.1,
                "rtt_net_samples": 30 * 60 * cell["players"],
                "send_late_p99_us": 150.0,
                "server_cpu_cores": 0.01 * cell["players"] * size_factor * rng.lognormal(0, 0.05),
                "client_cpu_cores": 0.2,
                "server_rss_bytes": int(20e6 * size_factor * rng.lognormal(0, 0.02)),
                "server_rx_bytes_per_s": 2000.0 * cell["players"] * rng.lognormal(0, 0.02),
                "server_tx_bytes_per_s": 3000.0 * cell["players"] * size_factor,
                # Warm-up: the first 4 s are slow; one run of one cell never settles.
                "warmup_cut_s": 4.0,
                "warmup_second_half": cell["cell_id"].startswith("reference-tcp-p100-active")
                and k == 1,
                "warmup_note": None,
            }
            rows.append(row)
            for t in range(-2, int(cell["duration_s"])):
                ramp = 1.8 if t < 4 else 1.0
                grow = 1.0 + (t / 10.0 if cell["workload"] == "envmod" else 0.0)
                for metric, value in (
                    ("rtt_net_p50_us", p50 * ramp * grow),
                    ("rtt_net_sd_us", 0.1 * p50 * ramp * rng.lognormal(0, 0.2)),
                    ("server_tx_bytes_per_s", row["server_tx_bytes_per_s"] * grow),
                ):
                    series.append(
                        {"campaign": "synthetic", "cell_id": cell["cell_id"], "run_id": f"r{k}",
                         "t_s": float(t), "metric": metric, "value": float(value)}
                    )  # fmt: skip
    runs = pl.DataFrame(rows, infer_schema_length=None)
    runs.write_parquet(results / "runs.parquet")
    runs.write_csv(results / "runs.csv")
    pl.DataFrame(series, schema=timeseries.SCHEMA).write_parquet(results / "timeseries.parquet")
    analyse.analyse(results)
    runs_planned = runs.select(["cell_id", "run_id"]).unique(maintain_order=True).rows()
    plan = plan_doc("synthetic", [{"cell_id": c, "run_id": r} for c, r in runs_planned], seed=seed)
    (results / "plan.json").write_text(json.dumps(plan))
    from report import figdata

    figdata.shape(results)
    return plan
