"""`netstick stats CAMPAIGN`, `netstick compare BASELINE CANDIDATE [...]` and `netstick import`.
The parser is in main.py."""

from __future__ import annotations

import argparse
import json
import sys

from workflow.files import write_json


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
    """The newest results against the ones before, per cell, with change points over all of
    them (stats.history.trends.compare); exit 1 when a cell regressed."""
    from stats.history import HistoryError, trends

    try:
        doc = trends.compare(
            trends.resolve(args.results, args.data_dir), args.metric, args.min_effect
        )
    except HistoryError as exc:
        print(f"netstick compare: {exc}", file=sys.stderr)
        return 2
    for c in doc["cells"]:
        print(f"{c['cell_id']}: {c['verdict']} ratio {c['ratio']} [{c['ci_low']}, {c['ci_high']}]")
    if args.out is not None:
        write_json(args.out, doc, sort_keys=False)
    return 1 if any(c["verdict"] == "regression" for c in doc["cells"]) else 0


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
