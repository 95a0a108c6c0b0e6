"""Benchmark: how long a campaign's report takes to make, and how much it weighs.

    python -m workflow.cli.bench.report --results data/results/quick --raw data/raw/quick \\
        --out data/bench/report.json [--repeat 3]

Times the report stage as the workflow runs it, one process per step (figure data, artifact
metadata, HTML + PDF render, RO-Crate), into a scratch directory so the campaign's own report is
untouched; repeated, medians reported. Target (the report issue): the quick campaign's report
renders in at most 60 s and weighs at most 10 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from report import render
from workflow.campaign import records

TARGET_S = 60.0
TARGET_BYTES = 10 * 10**6


def _step(argv: list[str]) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False)
    took = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:4])} failed:\n{(done.stdout + done.stderr)[-3000:]}")
    return took


def once(results: Path, raw: Path, out: Path) -> dict[str, Any]:
    py = sys.executable
    html, pdf = out / "index.html", out / "index.pdf"
    steps = {
        "figure_data_s": [py, "-m", "report.figdata", str(results)],
        "artifact_s": [py, "-m", "report.artifact", str(results), "--raw", str(raw)],
        "render_html_pdf_s": [py, "-m", "report.render", str(results), "--raw", str(raw),
                              "--out", str(html), "--pdf", str(pdf)],
        "crate_s": [py, "-m", "report.crate", str(out), "--results", str(results),
                    "--raw", str(raw)],
    }  # fmt: skip
    times = {name: round(_step(argv), 2) for name, argv in steps.items()}
    html_only = out / "html-only.html"
    times["render_html_only_s"] = round(
        _step(
            [py, "-m", "report.render", str(results), "--raw", str(raw), "--out", str(html_only)]
        ),
        2,
    )
    html_only.unlink()
    total = sum(v for k, v in times.items() if k != "render_html_only_s")
    crate_bytes = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    return {
        **times,
        "total_s": round(total, 2),
        "html_bytes": html.stat().st_size,
        "pdf_bytes": pdf.stat().st_size,
        "report_dir_bytes": crate_bytes,
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m workflow.cli.bench.report", description=__doc__)
    ap.add_argument("--results", type=Path, default=Path("data/results/quick"))
    ap.add_argument("--raw", type=Path, default=Path("data/raw/quick"))
    ap.add_argument("--out", type=Path, default=Path("data/bench/report.json"))
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    for path, what in (
        (args.results / "cells.parquet", "--results"),
        (args.raw / "plan.json", "--raw"),
    ):
        if not path.is_file():
            ap.error(f"{what}: {path} missing; run the campaign first (make run)")
    reps = []
    with tempfile.TemporaryDirectory(prefix="netstick-bench-report-") as tmp:
        for i in range(args.repeat):
            reps.append(once(args.results, args.raw, Path(tmp) / f"r{i}"))
    med = {k: statistics.median(r[k] for r in reps) for k in reps[0]}
    doc = {
        "benchmark": "report",
        "campaign": args.results.name,
        "engine": render.engine(),
        "repeat": args.repeat,
        "host": {"cpus": os.cpu_count(), "machine": platform.machine()},
        "median": med,
        "runs": reps,
        "targets": {
            "render_s": {
                "limit": TARGET_S,
                "measured": med["total_s"],
                "pass": med["total_s"] <= TARGET_S,
            },
            "html_bytes": {
                "limit": TARGET_BYTES,
                "measured": med["html_bytes"],
                "pass": med["html_bytes"] <= TARGET_BYTES,
            },
        },
    }
    records.write_text(args.out, json.dumps(doc, indent=2) + "\n")
    print(
        f"report of {args.results.name} ({doc['engine']}): {med['total_s']:.1f} s "
        f"(HTML alone {med['render_html_only_s']:.1f} s), HTML {med['html_bytes'] / 1e6:.2f} MB, "
        f"PDF {med['pdf_bytes'] / 1e6:.2f} MB -> {args.out}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
