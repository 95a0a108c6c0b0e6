"""`netstick stats CAMPAIGN` and `netstick compare BASELINE CANDIDATE [...]`."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from workflow.campaign import records
from workflow.files import REPO


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "stats", help="ingest a campaign's raw runs and compute intervals, comparisons, findings"
    )
    p.add_argument("campaign", help="campaign name: data/raw/<campaign> -> data/results/<campaign>")
    p.add_argument("--data-dir", type=Path, default=REPO / "data", help="data root")
    p.add_argument("--seed", type=int, default=0, help="seed of every bootstrap")
    p.set_defaults(func=_cmd_stats)

    p = sub.add_parser(
        "compare",
        help="regressions between results (oldest first): per cell against the baseline, "
        "change points over the whole history",
    )
    p.add_argument(
        "results", nargs="+", help="data/results/<name> directories or names, oldest first"
    )
    p.add_argument("--data-dir", type=Path, default=REPO / "data", help="data root")
    p.add_argument("--metric", default="rtt_net_p50_us", help="runs.parquet column to compare")
    p.add_argument(
        "--min-effect", type=float, default=0.05, help="smallest ratio change that counts"
    )
    p.add_argument("--out", type=Path, default=None, help="write the verdicts as JSON here")
    p.set_defaults(func=_cmd_compare)


def _results_dir(name: str, data_dir: Path) -> Path:
    path = Path(name)
    return path if path.is_dir() else data_dir / "results" / name


def _cmd_stats(args: argparse.Namespace) -> int:
    from stats import analyse, ingest

    raw = args.data_dir / "raw" / args.campaign
    out = args.data_dir / "results" / args.campaign
    if not (raw / "plan.json").is_file():
        print(
            f"netstick stats: {raw / 'plan.json'} not found; run the campaign first",
            file=sys.stderr,
        )
        return 2
    report = ingest.ingest(raw, out)
    doc = analyse.analyse(out, seed=args.seed)
    bad = sum(report.bad_rows.values())
    print(
        f"{args.campaign}: {report.runs} runs ({report.runs_ok} ok), {report.samples} samples, "
        f"{bad} bad rows, {len(report.bad_files)} unreadable files -> {out}"
    )
    for f in doc["findings"]:
        print(f"- {f['statement']}")
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
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
        records.write_text(args.out, json.dumps(doc, indent=2, default=str) + "\n")
    return 1 if any(c.get("verdict") == "regression" for c in doc["cells"]) else 0
