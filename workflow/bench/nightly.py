"""bench-nightly: one real night of the shipped nightly campaign (data/bench/nightly.json).

workflow/campaigns/nightly.yaml runs through Snakemake as the nightly job runs it, report
included; the record keeps its wall time against the 30-minute budget, every cell's minimum
detectable effect (stats/power.py, as the report's cells table states it) for RTT p50 and server
CPU, and the comparisons between library versions of one transport that the night itself makes.
The raw data stay in data/bench-runs/nightly-<stamp>/ (a scratch directory, scratch.py) for
inspection.

    netstick bench nightly   -> data/bench/nightly.json
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

import polars as pl

from workflow.bench import options, record, scratch, versions
from workflow.bench.targets import target_rows, targets_text
from workflow.campaign import expand as campaigns
from workflow.files import REPO

CAMPAIGN = "nightly"
METRICS = ("rtt_net_p50_us", "server_cpu_cores")
COLUMNS = (
    "transport",
    "library_version",
    "players",
    "metric",
    "estimate",
    "ci_low",
    "ci_high",
    "n_runs",
    "mde_ratio",
)
TARGETS = {
    "wall_s": ("<=", 1800.0, "the nightly campaign, report included, on this machine"),
}


def cell_effects(results: Path) -> list[dict[str, Any]]:
    """Per cell and metric: the median with its interval and the minimum detectable effect."""
    cells = pl.read_csv(results / "cells.csv", infer_schema_length=None)
    rows = (
        cells.filter(pl.col("metric").is_in(list(METRICS)))
        .select(*COLUMNS)
        .sort("metric", "transport", "library_version")
    )
    return rows.to_dicts()


def run(out: Path, repo: Path) -> dict[str, Any]:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    root = repo / "data" / "bench-runs" / f"nightly-{stamp}"
    plan = campaigns.plan(CAMPAIGN)
    wall_s = scratch.complete(root, CAMPAIGN)
    results = root / "data" / "results" / plan.name
    effects = cell_effects(results)
    comps = versions.version_comparisons(results, METRICS, versions_only=True)
    mde = {m: [r["mde_ratio"] for r in effects if r["metric"] == m] for m in METRICS}
    measured = {
        "wall_s": round(wall_s, 1),
        "runs": len(plan.runs),
        "cells": len(plan.cell_ids),
        "estimated_s": round(plan.estimate_s(), 1),
        **{
            f"mde_{m}_median": round(statistics.median(v), 3) if v else None for m, v in mde.items()
        },
        "version_comparisons": len(comps),
        "version_differences": sum(1 for r in comps if r["verdict"] == "difference"),
    }
    body = {
        "measured": measured,
        "cells": effects,
        "version_comparisons": comps,
        "raw": str(root),
        "targets": target_rows(measured, TARGETS),
    }
    return record.write(out, "bench-nightly", body, repo=repo)


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, default=options.BENCH_DIR / "nightly.json")


def main(args: argparse.Namespace) -> int:
    doc = run(args.out, REPO)
    if doc["version_comparisons"]:
        print(versions.comparisons_text(doc["version_comparisons"]))
    print(targets_text(doc["targets"]))
    print(f"results in {args.out}")
    return 0
