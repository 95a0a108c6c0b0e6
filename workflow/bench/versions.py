"""bench-versions: two published versions of a library side by side (data/bench/versions.json).

The nightly's third validation: real versions, not an injected fault. A short campaign runs the
reference prototype at 100 active players with kcp-go v5.6.72 (pinned) against v5.7.5 and quic-go
v0.65.0 (pinned) against v0.60.0, 6 runs of 12 s per cell, through Snakemake as `make run` does;
the statistics stage compares the versions of each transport (ratio of medians with its 95 %
interval, Cliff's delta, BH-adjusted Mann-Whitney p). The record keeps every comparison: a real
difference where the interval excludes 1 and the adjusted p is below 0.05, else the bound on it
(the interval).

    netstick bench versions   -> data/bench/versions.json
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from workflow.bench import options, record, scratch
from workflow.files import REPO

VERSIONS = {"kcp": ["pinned", "v5.7.5"], "quic": ["pinned", "v0.60.0"]}
METRICS = ("rtt_net_p50_us", "rtt_net_p99_us", "server_cpu_cores")


def campaign_doc() -> dict[str, Any]:
    return scratch.campaign_doc(
        "bench-versions",
        "kcp-go and quic-go: the pinned version against one other, side by side",
        {"name": "reference", "transports": list(VERSIONS), "versions": VERSIONS},
        block="versions",
        seed=20261126,
        repetitions=6,
        defaults={"duration_s": 12, "tick_rate_hz": 60, "network_profile": "lan"},
        players=[100],
        workloads=["active"],
    )


def run(out: Path, repo: Path) -> dict[str, Any]:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    root = repo / "data" / "bench-runs" / f"versions-{stamp}"
    (root / "work").mkdir(parents=True)
    wall_s = scratch.complete(root, scratch.campaign_file(root, campaign_doc()))
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
    of one transport), each with the stats stage's verdict (stats/comparisons.py): a difference
    where the interval excludes 1 and the BH-adjusted p is below 0.05, else the interval bounds
    it."""
    comps = pl.read_parquet(results / "comparisons.parquet")
    rows = []
    for r in comps.filter(pl.col("metric").is_in(list(metrics))).iter_rows(named=True):
        if versions_only and r["a"].split("@")[0] != r["b"].split("@")[0]:
            continue
        low, high, q = r["ci_low"], r["ci_high"], r.get("p_bh")
        verdict = {"lower": "difference", "higher": "difference", "not_compared": "not compared"}
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
                "verdict": verdict.get(r["verdict"], "no difference shown; bound = interval"),
            }
        )
    return rows


def comparisons_text(rows: Sequence[dict[str, Any]]) -> str:
    """One line per comparison for the terminal: ratio b/a with its interval and verdict."""

    def f(x: float | None) -> str:
        return "—" if x is None else f"{x:.3f}"  # a comparison without enough runs

    return "\n".join(
        f"{r['a']} -> {r['b']} {r['metric']}: {f(r['ratio_b_over_a'])} "
        f"[{f(r['ci_low'])}, {f(r['ci_high'])}] {r['verdict']}"
        for r in rows
    )


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, default=options.BENCH_DIR / "versions.json")


def main(args: argparse.Namespace) -> int:
    doc = run(args.out, REPO)
    if doc["comparisons"]:
        print(comparisons_text(doc["comparisons"]))
    print(f"results in {args.out}")
    return 0
