"""`netstick history list|show|import|decide|confirm-plan|confirm`: the nightly history store
(data/history/<campaign>/<night>.csv, stats/history/) and its regression decisions. The
parser is in main.py; compute and render (trends over results directories) are in report.py."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import polars as pl
import yaml

from stats.history import HistoryError, store
from stats.history.decide import confirm as confirm_night
from stats.history.decide import decide as decide_night
from stats.history.decide import file_verdicts, suspected_cells, write_decision
from workflow.campaign import expand as campaigns
from workflow.campaign.confirm import confirm_campaign
from workflow.files import write_text
from workflow.harness.environment import this_machine
from workflow.nightly import upstream
from workflow.nightly.upstream_builds import night_versions


def _fail(exc: Exception) -> int:
    print(f"netstick history: {exc}", file=sys.stderr)
    return 2


def list_(args: argparse.Namespace) -> int:
    table = store.list_nights(args.history_dir)
    if table.height == 0:
        print(f"{args.history_dir}: no nights yet")
        return 0
    with pl.Config(tbl_rows=-1, tbl_cols=-1, fmt_str_lengths=40, tbl_hide_dataframe_shape=True):
        print(table.drop("file"))
    return 0


def show(args: argparse.Namespace) -> int:
    try:
        table = store.read_history(args.history_dir, args.campaign)
        if args.cell:
            series = store.otava_series(table, args.cell)
            if args.otava_csv:
                series.write_csv(args.otava_csv)
                config = args.otava_csv.with_suffix(".otava.yaml")
                doc = store.otava_config(args.cell, args.otava_csv.resolve(), series.columns)
                write_text(config, yaml.safe_dump(doc, sort_keys=False))
                print(f"otava series: {args.otava_csv}")
                print(f"otava: OTAVA_CONFIG={config} otava analyze {args.cell}")
                return 0
            shown = series
        else:
            metric = args.metric
            if metric not in table.columns:
                raise HistoryError(f"no metric {metric!r} in the history")
            shown = table.pivot(on="cell_id", index=["time", "night_id"], values=metric)
    except HistoryError as exc:
        return _fail(exc)
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_hide_dataframe_shape=True):
        print(shown)
    return 0


def import_(args: argparse.Namespace) -> int:
    try:
        # Where the runs recorded no machine: this one's (the import follows the campaign).
        path, new = store.import_night(args.results, args.history_dir, machine=this_machine())
    except HistoryError as exc:
        return _fail(exc)
    print(f"{'imported' if new else 'already in the history'}: {path}")
    return 0


def _decide(args: argparse.Namespace) -> tuple[dict[str, Any], pl.DataFrame]:
    table = store.read_history(args.history_dir, args.campaign)
    # The night's upstream check, when it had one: publication dates and what did not build.
    published, not_built = night_versions(args.upstream or upstream.default_out(args.campaign))
    doc = decide_night(table, args.metric, args.k, args.min_effect, published, not_built)
    return doc, table


def decide(args: argparse.Namespace) -> int:
    """Tonight's suspected regressions (confirmed: null) and, where there are any, the
    campaign file of the confirming re-run."""
    try:
        doc, table = _decide(args)
        write_decision(doc, table, args.out)
    except HistoryError as exc:
        return _fail(exc)
    cells = suspected_cells(doc)
    print(f"{len(cells)} of {len(doc['cells'])} cells suspected: {', '.join(cells) or 'none'}")
    print(f"decision: {args.out}")
    return 0


def confirm_plan(args: argparse.Namespace) -> int:
    doc = json.loads(args.regressions.read_text())
    overrides = {
        "only_prototypes": [p for p in args.prototypes.split(",") if p] or None,
        "repetitions": args.repetitions,
        "duration_s": args.duration_s,
    }
    try:
        path = confirm_campaign(doc, args.campaign_file, args.out, **overrides)
    except campaigns.CampaignError as exc:
        return _fail(exc)
    print(f"confirming campaign: {path}")
    return 0


def confirm(args: argparse.Namespace) -> int:
    """The decision with `confirmed` filled in from the re-run's results (or all false when
    nothing was suspected and so nothing re-ran)."""
    try:
        doc = json.loads(args.regressions.read_text())
        table = store.read_history(args.history_dir, doc["campaign"])
        if suspected_cells(doc) or doc.get("rerun_cells"):
            rerun_file = args.rerun / "runs.parquet"
            if not rerun_file.is_file():
                raise HistoryError(f"{rerun_file}: missing; run the confirming campaign")
            rerun = pl.read_parquet(rerun_file)
        else:
            rerun = pl.DataFrame({"cell_id": [], "status": [], doc["metric"]: []})
        done = confirm_night(doc, table, rerun)
        write_decision(done, table, args.out)
        filed, _ = file_verdicts(done, args.history_dir)
    except HistoryError as exc:
        return _fail(exc)
    confirmed = [c["cell"] for c in done["cells"] if c["confirmed"]]
    print(f"confirmed regressions: {', '.join(confirmed) or 'none'}")
    print(f"regressions: {args.out}")
    print(f"in the history: {filed}")
    return 0
