"""bench-nightly: one real night of the shipped nightly campaign with discovery
(data/bench/nightly.json).

As the nightly job runs it: `netstick upstream check` against the real Go module proxy (with the
bench's own, empty history every release newer than the pinned one is new, up to max_new), then
`netstick upstream prepare` (module files generated, each version built, versions/upstream.json),
then workflow/campaigns/nightly.yaml through Snakemake, report included, then the night imported
into the bench's history and decided: each library version against the release before it. The
record keeps the wall time against the 30-minute budget, what discovery found and built, every
cell's minimum detectable effect (stats/power.py) for RTT p50 and server CPU, the comparisons
between versions of one transport and the per-version verdicts. The checkout is left as found
(the night's module files and versions/upstream.json are removed); the raw data stay in
data/bench-runs/nightly-<stamp>/ (scratch.py) for inspection.

    netstick bench nightly   -> data/bench/nightly.json
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

import polars as pl

from prototypes.contract import manifest as manifests
from prototypes.contract.upstream_lock import UPSTREAM_LOCK
from stats.history.decide import decide
from stats.history.store import import_night, read_history
from workflow.bench import options, record, scratch, versions
from workflow.bench.targets import target_rows, targets_text
from workflow.campaign import expand as campaigns
from workflow.files import REPO
from workflow.harness.environment import this_machine
from workflow.nightly import upstream, upstream_builds

CAMPAIGN = "nightly"
REFERENCE = REPO / "prototypes" / "reference" / "prototype.yaml"
METRICS = ("rtt_net_p50_us", "server_cpu_cores", "server_instr_per_msg")
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
    "wall_s": (
        "<=",
        1800.0,
        "discovery, builds and the nightly campaign, report included, here",
    ),
    # The detectable change (80 % power, 5 % level) median over the night's cells: of the
    # server's work per message (instructions under callgrind) and of RTT p50.
    "mde_server_instr_per_msg_median": ("<=", 1.03, "ratio, median over cells"),
    "mde_rtt_net_p50_us_median": ("<=", 1.05, "ratio, median over cells"),
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


def discover(root: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The night's discovery as the nightly job runs it (netstick upstream check, then
    prepare), against the bench's own history (empty: every release newer than the pinned one
    is new, up to max_new): (the check's document, the reference's prepared lock)."""
    t0 = time.monotonic()
    doc = upstream.check(upstream.prototype_manifests(["reference"]), root / "data" / "history",
                         CAMPAIGN)  # fmt: skip
    upstream.write(doc, root / "data" / "upstream" / f"{CAMPAIGN}.json")
    t1 = time.monotonic()
    lock = upstream_builds.prepare(doc, "reference")
    t2 = time.monotonic()
    return doc, lock | {"check_s": round(t1 - t0, 1), "prepare_s": round(t2 - t1, 1)}


def forget(lock: dict[str, Any]) -> None:
    """Leave the checkout as the bench found it: no versions/upstream.json, no module files of
    versions the manifest does not declare (the night's are not committed)."""
    man = manifests.load(REFERENCE)
    declared = man.library_builds.libraries if man.library_builds else {}
    for library, entry in lock["libraries"].items():
        for version in entry["measure"]:
            if version not in declared.get(library, ()):
                for suffix in (".mod", ".sum"):
                    (man.directory / "versions" / f"{library}@{version}{suffix}").unlink(
                        missing_ok=True
                    )
    (man.directory / UPSTREAM_LOCK).unlink(missing_ok=True)


def night_versions(root: Path, results: Path) -> list[dict[str, Any]]:
    """The night's verdict of each version against the release before it, as the nightly's
    decision words it (the night imported into the bench's own history first)."""
    hist = root / "data" / "history"
    import_night(results, hist, machine=this_machine())
    published, not_built = upstream_builds.night_versions(
        root / "data" / "upstream" / f"{CAMPAIGN}.json"
    )
    doc = decide(read_history(hist, CAMPAIGN), published=published, not_built=not_built)
    keep = ("library", "transport", "version", "predecessor", "published", "metric", "ratio",
            "interval", "verdict", "bound", "detectable_ratio", "min_effect",
            "build_error")  # fmt: skip
    return [{k: v.get(k) for k in keep} for v in doc["versions"]]


def run(out: Path, repo: Path) -> dict[str, Any]:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    root = repo / "data" / "bench-runs" / f"nightly-{stamp}"
    t0 = time.monotonic()
    check, lock = discover(root)
    try:
        plan = campaigns.plan(CAMPAIGN)
        campaign_s = scratch.complete(root, CAMPAIGN)
    finally:
        forget(lock)
    wall_s = time.monotonic() - t0
    results = root / "data" / "results" / plan.name
    effects = cell_effects(results)
    comps = versions.version_comparisons(results, METRICS, versions_only=True)
    found = night_versions(root, results)
    # Cells that do not measure a metric (instructions without callgrind) have no figure.
    mde = {
        m: [r["mde_ratio"] for r in effects if r["metric"] == m and r["mde_ratio"] is not None]
        for m in METRICS
    }
    measured = {
        "wall_s": round(wall_s, 1),
        "discovery_check_s": lock["check_s"],
        "discovery_prepare_s": lock["prepare_s"],
        "campaign_s": round(campaign_s, 1),
        "runs": len(plan.runs),
        "cells": len(plan.cell_ids),
        "estimated_s": round(plan.estimate_s(), 1),
        "upstream_new_versions": sum(len(lib["new"]) for lib in check["libraries"]),
        "upstream_versions_measured": sum(
            len(e["measure"]) - 1 for e in lock["libraries"].values()
        ),
        "upstream_not_built": sum(len(e["not_built"]) for e in lock["libraries"].values()),
        **{
            f"mde_{m}_median": round(statistics.median(v), 3) if v else None for m, v in mde.items()
        },
        "version_comparisons": len(comps),
        "version_differences": sum(1 for r in comps if r["verdict"] == "difference"),
        "version_verdicts_slower": sum(1 for v in found if v["verdict"] == "slower"),
    }
    body = {
        "measured": measured,
        "upstream": [
            {k: lib.get(k) for k in ("library", "pinned", "newest", "new", "skipped", "errors")}
            for lib in check["libraries"]
        ],
        "prepared": lock["libraries"],
        "version_verdicts": found,
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
