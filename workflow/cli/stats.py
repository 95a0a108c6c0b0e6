"""`netstick stats CAMPAIGN`, `netstick compare BASELINE CANDIDATE [...]` and `netstick bench
stats`. The parser is in main.py."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from workflow.files import write_json


def _results_dir(name: str, data_dir: Path) -> Path:
    path = Path(name)
    return path if path.is_dir() else data_dir / "results" / name


def stats(args: argparse.Namespace) -> int:
    from stats import analyse, ingest

    raw = args.data_dir / "raw" / args.campaign
    out = args.data_dir / "results" / args.campaign
    if args.step != "analyse" and not (raw / "plan.json").is_file():
        print(
            f"netstick stats: {raw / 'plan.json'} not found; run the campaign first",
            file=sys.stderr,
        )
        return 2
    if args.step in ("all", "ingest"):
        report = ingest.ingest(raw, out)
        bad = sum(report.bad_rows.values())
        print(
            f"{args.campaign}: {report.runs} runs ({report.runs_ok} ok), {report.samples} "
            f"samples, {bad} bad rows, {len(report.bad_files)} unreadable files -> {out}"
        )
    if args.step == "ingest":
        return 0
    doc = analyse.analyse(out, seed=args.seed)
    from report import sentences

    for f in doc["findings"]:
        print(f"- {sentences.sentence(f)}")
    return 0


def compare(args: argparse.Namespace) -> int:
    import polars as pl

    from stats import regress

    dirs = [_results_dir(r, args.data_dir) for r in args.results]
    missing = [str(d / "runs.parquet") for d in dirs if not (d / "runs.parquet").is_file()]
    if len(dirs) < 2 or missing:
        print(
            "netstick compare: need at least two results with runs.parquet"
            + (f"; missing {', '.join(missing)} (run `netstick stats` first)" if missing else ""),
            file=sys.stderr,
        )
        return 2
    tables = [pl.read_parquet(d / "runs.parquet") for d in dirs]
    verdicts = regress.per_cell(tables[-2], tables[-1], args.metric, min_effect=args.min_effect)
    doc: dict[str, Any] = {
        "baseline": str(dirs[-2]),
        "candidate": str(dirs[-1]),
        "metric": args.metric,
        "min_effect": args.min_effect,
        "cells": [v if isinstance(v, dict) else dataclasses.asdict(v) for v in verdicts],
    }
    if len(tables) >= 3:
        history: dict[str, list[float]] = {}
        for t in tables:
            ok = t.filter(pl.col("status") == "ok")
            med = ok.group_by("cell_id").agg(pl.col(args.metric).median())
            for cid, value in med.iter_rows():
                history.setdefault(cid, []).append(value)
        doc["change_points"] = {
            cid: regress.change_points(vals) for cid, vals in history.items() if len(vals) >= 3
        }
    for c in doc["cells"]:
        print(
            f"{c.get('cell_id')}: {c.get('verdict')} ratio {c.get('ratio')} "
            f"[{c.get('ci_low')}, {c.get('ci_high')}]"
        )
    if args.out is not None:
        write_json(args.out, doc, sort_keys=False)
    return 1 if any(c.get("verdict") == "regression" for c in doc["cells"]) else 0


def bench_stats(args: argparse.Namespace) -> int:
    from workflow.cli.bench import record
    from workflow.cli.bench import stats as bench

    doc = bench.run(args.out, args.work, args.samples, args.subset)
    print(record.targets_text(doc["targets"]))
    print(f"results in {args.out}")
    return 0


def import_study(args: argparse.Namespace) -> int:
    from stats import importers
    from stats.importers import envirostick, netcelerity

    if not args.dir.is_dir():
        print(f"netstick import: {args.dir}: not a directory", file=sys.stderr)
        return 2
    if args.study == "netcelerity":
        result = netcelerity.import_dir(args.dir)
    else:
        result = envirostick.import_dir(args.dir, tz=args.tz)
    importers.write_tables(result, args.out)
    bad = {k: v for k, v in result.bad_rows.items() if v}
    print(
        f"{result.samples.height} samples, {result.runs.height} runs, "
        f"{result.resources.height} resource rows -> {args.out}"
    )
    print(f"bad rows: {json.dumps(bad, sort_keys=True) if bad else 'none'}")
    for problem in result.problems:
        print(f"  {problem}")
    print("known flaws:")
    for flaw in result.flaws:
        print(f"  - {flaw}")
    return 0
