"""`netstick report`, `netstick reanalysis` and `netstick history compute|render`. The parser is
in main.py; every step here is one the workflow's rules run on their own."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# The facts the check-list words are the campaign's (`netstick campaign facts`), not a report step.
STEPS = ("figures", "checklist", "render", "crate")


def _dirs(args: argparse.Namespace) -> tuple[Path, Path]:
    data: Path = args.data_dir
    return data / "results" / args.campaign, args.report_dir / args.campaign


def report(args: argparse.Namespace) -> int:
    """The report's steps on data/results/<campaign> alone (it reads nothing of data/raw)."""
    results, out = _dirs(args)
    steps = STEPS if args.step == "all" else (args.step,)
    needed = []
    if {"figures", "render"} & set(steps):
        needed.append(results / "runs.parquet")
    if "render" in steps:
        needed.append(results / "plan.json")
    for path in needed:
        if not path.is_file():
            print(
                f"netstick report: {path} not found; run the campaign, "
                f"`netstick stats {args.campaign}` and `netstick campaign facts {args.campaign}` "
                "first",
                file=sys.stderr,
            )
            return 2
    for step in steps:
        code = _STEP[step](results, out, args)
        if code:
            return code
    return 0


def _figures(results: Path, out: Path, args: argparse.Namespace) -> int:
    from report import figdata

    for f in figdata.shape(results):
        print(f"{f.id}: " + ("drawn" if f.expected else f"not drawn: {f.reason}"))
    return 0


def _checklist(results: Path, out: Path, args: argparse.Namespace) -> int:
    from report import checklist

    try:
        doc = checklist.collect(results)
    except checklist.FactsMissing as exc:
        print(f"netstick report: {exc}", file=sys.stderr)
        return 2
    print(f"check-list: {checklist.write(doc, results / 'artifact.json')}")
    return 0


def _render(results: Path, out: Path, args: argparse.Namespace) -> int:
    from report import render

    html = out / "index.html"
    pdf = None if args.no_pdf else out / "index.pdf"
    params = {"results": str(results.resolve())}
    try:
        which = render.render(params, html, pdf=pdf)
    except render.RenderError as exc:
        print(f"netstick report: {exc}", file=sys.stderr)
        return 1
    print(f"report ({which}): {html}" + (f" and {pdf}" if pdf else ""))
    return 0


def _crate(results: Path, out: Path, args: argparse.Namespace) -> int:
    from report import crate
    from workflow.files import read_json

    artifact = read_json(results / "artifact.json")
    if artifact is None:
        print(
            f"netstick report: {results / 'artifact.json'} missing or not JSON; run "
            f"`netstick report {args.campaign} --step checklist` first",
            file=sys.stderr,
        )
        return 2
    print(f"crate: {crate.write_crate(out, results, artifact)}")
    return 0


_STEP = {
    "figures": _figures,
    "checklist": _checklist,
    "render": _render,
    "crate": _crate,
}


def reanalysis_compute(args: argparse.Namespace) -> int:
    from stats import reanalysis

    reanalysis.compute(args.out, args.data)
    print(f"re-analysis tables and findings: {args.out}")
    return 0


def reanalysis_render(args: argparse.Namespace) -> int:
    from report import reanalysis, render

    try:
        reanalysis.render(args.tables, args.out, args.pdf)
    except render.RenderError as exc:
        print(f"netstick reanalysis: {exc}", file=sys.stderr)
        return 1
    print(f"re-analysis report: {args.out}" + (f" and {args.pdf}" if args.pdf else ""))
    return 0


def history_compute(args: argparse.Namespace) -> int:
    from stats.history import trends

    missing = [str(n / "runs.parquet") for n in args.nights if not (n / "runs.parquet").is_file()]
    if len(args.nights) < 2 or missing:
        print(
            "netstick history compute: need at least two results directories with runs.parquet"
            + (f"; missing {', '.join(missing)}" if missing else ""),
            file=sys.stderr,
        )
        return 2
    trends.compute(args.nights, args.out)
    print(f"history tables: {args.out}")
    return 0


def history_render(args: argparse.Namespace) -> int:
    from report import history, render

    try:
        history.render(args.tables, args.out)
    except render.RenderError as exc:
        print(f"netstick history: {exc}", file=sys.stderr)
        return 1
    print(f"history report: {args.out}")
    return 0
