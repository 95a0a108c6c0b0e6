"""bench-site: the trend site of a synthetic year of nights, timed and weighed
(data/bench/site.json).

    netstick bench site [--nights 365] [--cells 30] [--repeat 3]

A synthetic history store (synthetic_history.py: 365 nights x 30 cells x 5 metrics with six
runs each, a verdicts file per night, a planted confirmed regression with its bisection on the
newest night) is built into a site by `netstick history site`, one process as the nightly runs
it, `repeat` times; the median wall time and the size of everything the site directory holds
are judged against the targets (issue 19: built in <= 60 s, page <= 5 MB). The site's first
screen must name the planted regression.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from workflow.bench import options, record
from workflow.bench.synthetic_history import write_history
from workflow.bench.targets import target_rows, targets_text

TARGETS = {
    "build_s": ("<=", 60.0, "netstick history site, one process, median wall time"),
    "site_bytes": ("<=", 5e6, "index.html with everything beside it"),
    "planted_regression_listed": (">=", 1, "the newest night's confirmed regression is shown"),
}


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def build_once(history: Path, campaign: str, out: Path) -> float:
    """`netstick history site` as the nightly runs it; its wall time."""
    netstick = str(Path(sys.executable).with_name("netstick"))
    argv = [netstick, "history", "site", campaign, "--history-dir", str(history), "--out", str(out)]
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    took = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[1:4])} failed:\n{(done.stdout + done.stderr)[-3000:]}")
    return took


def run(
    out: Path, work: Path, *, nights: int = 365, cells: int = 30, repeat: int = 3
) -> dict[str, Any]:
    """Write the synthetic history under a fresh directory of work, build its site repeat
    times, and write the record to out."""
    root = work / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    history = root / "history"
    t0 = time.perf_counter()
    planted = write_history(history, nights=nights, cells=cells, legacy_nights=nights // 10)
    generate_s = time.perf_counter() - t0
    builds = [build_once(history, planted.campaign, root / "site") for _ in range(repeat)]
    site = root / "site"
    index = (site / "index.html").read_text(encoding="utf-8")
    first_screen = index[: index.find('id="trends"')]
    measured = {
        "build_s": round(statistics.median(builds), 2),
        "build_max_s": round(max(builds), 2),
        "site_bytes": _dir_bytes(site),
        "index_html_bytes": (site / "index.html").stat().st_size,
        "site_js_bytes": (site / "site.js").stat().st_size,
        "history_bytes": _dir_bytes(history),
        "generate_s": round(generate_s, 2),
        "planted_regression_listed": int(
            "Confirmed regression" in first_screen and planted.library in first_screen
        ),
    }
    body = {
        "parameters": {
            "nights": nights,
            "cells": planted.cells,
            "metrics": 5,
            "runs_per_cell": 6,
            "legacy_nights": nights // 10,
            "repeat": repeat,
        },
        "planted": {
            "library": planted.library,
            "transport": planted.transport,
            "cell": planted.cell,
            "version": planted.version,
            "first_bad": planted.first_bad,
        },
        "measured": measured,
        "builds_s": [round(b, 2) for b in builds],
        "site": str(site),
        "targets": target_rows(measured, TARGETS),
    }
    return record.write(out, "bench-site", body)


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, default=options.BENCH_DIR / "site.json")
    p.add_argument("--work", type=Path, default=options.DATA / "bench-runs" / "site")
    p.add_argument("--nights", type=options.positive_int, default=365, help="default 365")
    p.add_argument("--cells", type=options.positive_int, default=30, help="3..30 (default 30)")
    p.add_argument("--repeat", type=options.positive_int, default=3, help="builds (default 3)")


def main(args: argparse.Namespace) -> int:
    try:
        doc = run(args.out, args.work, nights=args.nights, cells=args.cells, repeat=args.repeat)
    except (RuntimeError, ValueError, FileExistsError) as exc:
        print(f"netstick bench site: {exc}", file=sys.stderr)
        return 2
    m = doc["measured"]
    print(targets_text(doc["targets"]))
    print(
        f"site of {doc['parameters']['nights']} nights x {doc['parameters']['cells']} cells: "
        f"{m['build_s']:.1f} s (median of {args.repeat}), {m['site_bytes'] / 1e6:.2f} MB "
        f"-> {doc['site']}/index.html"
    )
    print(f"results in {args.out}")
    return 0 if all(t["pass"] for t in doc["targets"]) else 1
