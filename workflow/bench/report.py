"""Benchmark: how long a campaign's report takes to make, and how much it weighs.

    netstick bench report [--campaign quick] [--repeat 3]   -> data/bench/report.json

Times the report stage as the workflow runs it, one process per step (figure data, facts,
check-list, HTML + PDF render, RO-Crate), into a scratch directory so the campaign's own report is
untouched; repeated, medians reported. Target (the report issue): the quick campaign's report
renders in at most 60 s and weighs at most 10 MB.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from report import render
from workflow.bench import options, record
from workflow.bench.targets import target_rows

TARGET_S = 60.0
TARGET_BYTES = 10 * 10**6


def _step(argv: list[str]) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False)
    took = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[1:6])} failed:\n{(done.stdout + done.stderr)[-3000:]}")
    return took


def once(campaign: str, data_dir: Path, report_dir: Path) -> dict[str, Any]:
    """Every report step as the workflow's rules run it (`netstick report ... --step S`, one
    process each; the facts by `netstick campaign facts`), into report_dir; the HTML alone once
    more beside it."""
    netstick = str(Path(sys.executable).with_name("netstick"))
    base = [netstick, "report", campaign, "--data-dir", str(data_dir)]
    facts = [netstick, "campaign", "facts", campaign, "--data-dir", str(data_dir)]
    steps = {
        "figure_data_s": "figures",
        "facts_s": "facts",
        "artifact_s": "checklist",
        "render_html_pdf_s": "render",
        "crate_s": "crate",
    }
    times = {
        name: round(
            _step(
                facts
                if step == "facts"
                else [*base, "--report-dir", str(report_dir), "--step", step]
            ),
            2,
        )
        for name, step in steps.items()
    }
    html_only = report_dir / "html-only"
    times["render_html_only_s"] = round(
        _step([*base, "--report-dir", str(html_only), "--step", "render", "--no-pdf"]), 2
    )
    out = report_dir / campaign
    total = sum(v for k, v in times.items() if k != "render_html_only_s")
    crate_bytes = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    return {
        **times,
        "total_s": round(total, 2),
        "html_bytes": (out / "index.html").stat().st_size,
        "pdf_bytes": (out / "index.pdf").stat().st_size,
        "report_dir_bytes": crate_bytes,
    }


def run(campaign: str, data_dir: Path, out: Path, repeat: int = 3) -> dict[str, Any]:
    """Time the campaign's report `repeat` times into scratch directories (the campaign's own
    report is untouched) and write the medians to out."""
    for path in (
        data_dir / "results" / campaign / "cells.parquet",
        data_dir / "raw" / campaign / "plan.json",
    ):
        if not path.is_file():
            raise FileNotFoundError(f"{path}: missing; run the campaign first (make run)")
    reps = []
    with tempfile.TemporaryDirectory(prefix="netstick-bench-report-") as tmp:
        for i in range(repeat):
            reps.append(once(campaign, data_dir, Path(tmp) / f"r{i}"))
    med = {k: statistics.median(r[k] for r in reps) for k in reps[0]}
    targets = {
        "total_s": ("<=", TARGET_S, "the report's steps, one process each, HTML and PDF"),
        "html_bytes": ("<=", TARGET_BYTES, "size of the HTML report"),
    }
    body = {
        "campaign": campaign,
        "engine": render.engine(),
        "repeat": repeat,
        "host": {"cpus": os.cpu_count(), "machine": platform.machine()},
        "median": med,
        "runs": reps,
        "targets": target_rows(med, targets),
    }
    return record.write(out, "bench-report", body)


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--campaign", default="quick")
    p.add_argument("--data-dir", type=Path, default=options.DATA)
    p.add_argument("--out", type=Path, default=options.BENCH_DIR / "report.json")
    p.add_argument("--repeat", type=options.positive_int, default=3)


def main(args: argparse.Namespace) -> int:
    try:
        doc = run(args.campaign, args.data_dir, args.out, args.repeat)
    except (FileNotFoundError, RuntimeError) as exc:
        print(f"netstick bench report: {exc}", file=sys.stderr)
        return 2
    med = doc["median"]
    print(
        f"report of {args.campaign} ({doc['engine']}): {med['total_s']:.1f} s (HTML alone "
        f"{med['render_html_only_s']:.1f} s), HTML {med['html_bytes'] / 1e6:.2f} MB, PDF "
        f"{med['pdf_bytes'] / 1e6:.2f} MB -> {args.out}"
    )
    return 0
