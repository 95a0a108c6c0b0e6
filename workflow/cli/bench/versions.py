"""bench-versions: two published versions of a library side by side (data/bench/versions.json).

The nightly's third validation: real versions, not an injected fault. A short campaign runs the
reference prototype at 100 active players with kcp-go v5.6.72 (pinned) against v5.7.5 and quic-go
v0.65.0 (pinned) against v0.60.0, 6 runs of 12 s per cell, through Snakemake as `make run` does;
the statistics stage compares the versions of each transport (ratio of medians with its 95 %
interval, Cliff's delta, BH-adjusted Mann-Whitney p). The record keeps every comparison: a real
difference where the interval excludes 1 and the adjusted p is below 0.05, else the bound on it
(the interval).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import polars as pl
import yaml

from workflow.cli.bench import campaign, record

VERSIONS = {"kcp": ["pinned", "v5.7.5"], "quic": ["pinned", "v0.60.0"]}
METRICS = ("rtt_net_p50_us", "rtt_net_p99_us", "server_cpu_cores")


def campaign_doc() -> dict[str, Any]:
    return {
        "name": "bench-versions",
        "description": "kcp-go and quic-go: the pinned version against one other, side by side",
        "seed": 20261126,
        "repetitions": 6,
        "defaults": {"duration_s": 12, "tick_rate_hz": 60, "network_profile": "lan"},
        "matrix": [
            {
                "name": "versions",
                "prototypes": [
                    {"name": "reference", "transports": list(VERSIONS), "versions": VERSIONS}
                ],
                "players": [100],
                "workloads": [{"name": "active"}],
            }
        ],
    }


def run(out: Path, repo: Path) -> dict[str, Any]:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    root = repo / "data" / "bench-runs" / f"versions-{stamp}"
    (root / "work").mkdir(parents=True)
    camp = root / "bench-versions.yaml"
    camp.write_text(yaml.safe_dump(campaign_doc(), sort_keys=False))
    wall_s = campaign.run_through_snakemake(repo, root, camp)
    rows = version_comparisons(root / "data" / "results" / "bench-versions")
    body = {
        "measured": {
            "wall_s": round(wall_s, 1),
            "comparisons": len(rows),
            "differences": sum(1 for r in rows if r["verdict"] == "difference"),
        },
        "versions": VERSIONS,
        "comparisons": rows,
        "raw": str(root),
        "targets": [],
    }
    return record.write(out, "bench-versions", body, repo=repo)


def version_comparisons(
    results: Path, metrics: tuple[str, ...] = METRICS, *, versions_only: bool = False
) -> list[dict[str, Any]]:
    """The campaign's comparisons of the metrics (versions_only: only those between two versions
    of one transport), each with its verdict: a difference where the interval excludes 1 and the
    BH-adjusted p is below 0.05, else the interval bounds it."""
    comps = pl.read_parquet(results / "comparisons.parquet")
    rows = []
    for r in comps.filter(pl.col("metric").is_in(list(metrics))).iter_rows(named=True):
        if versions_only and r["a"].split("@")[0] != r["b"].split("@")[0]:
            continue
        low, high, q = r["ci_low"], r["ci_high"], r.get("p_bh")
        real = low is not None and high is not None and (low > 1 or high < 1) and (q or 1) < 0.05
        rows.append(
            {
                "a": r["a"],
                "b": r["b"],
                "metric": r["metric"],
                "ratio_b_over_a": r["ratio_b_over_a"],
                "ci_low": low,
                "ci_high": high,
                "cliffs_delta": r["cliffs_delta"],
                "p_bh": q,
                "n_a": r["n_a"],
                "n_b": r["n_b"],
                "verdict": "difference" if real else "no difference shown; bound = interval",
            }
        )
    return rows
