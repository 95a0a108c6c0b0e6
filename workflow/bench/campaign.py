"""bench-campaign: the workflow's own costs (data/bench/campaign.json).

- the quick campaign, run for real through Snakemake as `make run` does: its wall time from
  the start of `snakemake` to the report, the sum of its measurement windows, and the share of
  wall time outside them (everything the workflow adds: Snakemake's start, job start, the
  harness's set-up and tear-down, table and report);
- `snakemake -n` of every shipped campaign (median of 3), the largest one against its target.

Both run Snakemake in a scratch directory (scratch.py): the quick campaign's raw data stay in
data/bench-runs/<stamp>/ for inspection, the dry runs' state in data/bench-runs/<stamp>/dry/.

    netstick bench campaign   -> data/bench/campaign.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from workflow.bench import options, record, scratch
from workflow.bench.targets import target_rows, targets_text
from workflow.campaign import expand as campaigns
from workflow.files import REPO

TARGETS = {
    "quick_outside_windows_share": ("<=", 0.10, "quick campaign: wall time outside windows"),
    "quick_wall_s": ("<=", 600.0, "quick campaign, report included, on this machine"),
    "largest_dry_run_s": ("<=", 10.0, "snakemake -n of the largest shipped campaign"),
}


def dry_run_s(root: Path, name: str, repetitions: int = 3) -> float:
    """The median wall time of `snakemake -n` of the named campaign, under root."""
    times = []
    for _ in range(repetitions):
        t0 = time.monotonic()
        res = scratch.run(root, name, "-n", timeout_s=300)
        times.append(time.monotonic() - t0)
        if res.returncode != 0:
            raise RuntimeError(f"snakemake -n campaign={name} failed:\n{res.stdout[-2000:]}")
    return statistics.median(times)


def run(
    out: Path,
    repo: Path,
    *,
    campaign: str = "quick",
    progress: Callable[[str], None] = print,
) -> dict[str, Any]:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    root = repo / "data" / "bench-runs" / stamp
    root.mkdir(parents=True)

    dry: dict[str, dict[str, Any]] = {}
    for name in campaigns.available_campaigns():
        plan = campaigns.plan(name)
        dry[name] = {"runs": len(plan.runs), "dry_run_s": round(dry_run_s(root / "dry", name), 2)}
        progress(f"dry run {name}: {dry[name]['runs']} runs, {dry[name]['dry_run_s']} s")
    largest = max(dry, key=lambda n: dry[n]["runs"])

    progress(f"running the {campaign} campaign (raw data in {root})")
    t0_unix = time.time()
    wall_s = scratch.complete(root, campaign)
    raw = root / "data" / "raw" / campaign
    summary_doc = json.loads((raw / "summary.json").read_text())
    recs = [json.loads(p.read_text()) for p in sorted(raw.glob("*/r*.json"))]
    recs.sort(key=lambda r: r["start_unix_ns"])
    windows_s = sum(r["window_s"] for r in recs if r["status"] == "ok")
    overhead = [r["overhead_s"] for r in recs if r.get("overhead_s") is not None]
    # Between two runs: the previous run's end to the next one's start (Snakemake, the job's
    # process start, planning).
    gaps = [
        (b["start_unix_ns"] - a["end_unix_ns"]) / 1e9
        for a, b in itertools.pairwise(recs)
        if a.get("end_unix_ns") and b.get("start_unix_ns")
    ]
    first_start = (recs[0]["start_unix_ns"] / 1e9) if recs else None
    measured = {
        "quick_wall_s": round(wall_s, 1),
        "quick_windows_s": round(windows_s, 1),
        "quick_outside_windows_share": round((wall_s - windows_s) / wall_s, 4),
        "quick_runs_ok": summary_doc["runs"]["ok"],
        "quick_runs_total": summary_doc["runs"]["total"],
        "harness_overhead_s_median": round(statistics.median(overhead), 3) if overhead else None,
        "harness_overhead_s_max": round(max(overhead), 3) if overhead else None,
        "between_runs_s_median": round(statistics.median(gaps), 3) if gaps else None,
        "between_runs_s_max": round(max(gaps), 3) if gaps else None,
        "before_first_run_s": round(first_start - t0_unix, 2) if first_start else None,
        "largest_campaign": largest,
        "largest_dry_run_s": dry[largest]["dry_run_s"],
    }
    body = {
        "measured": measured,
        "dry_runs": dry,
        "raw": str(root),
        "targets": target_rows(measured, TARGETS),
    }
    return record.write(out, "bench-campaign", body, repo=repo)


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, default=options.BENCH_DIR / "campaign.json")


def main(args: argparse.Namespace) -> int:
    doc = run(args.out, REPO)
    print(targets_text(doc["targets"]))
    print(f"results in {args.out}")
    return 0
