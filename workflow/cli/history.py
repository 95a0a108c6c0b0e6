"""`netstick history list|show|import|decide|confirm-plan|confirm`: the nightly history store
(data/history/<campaign>/<night>.csv, stats/history.py) and its regression decisions. The
parser is in main.py; compute and render (trends over results directories) are in report.py."""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

import polars as pl
import yaml

from stats import history
from workflow.campaign import expand as campaigns
from workflow.files import write_text
from workflow.harness import provenance


def _fail(exc: Exception) -> int:
    print(f"netstick history: {exc}", file=sys.stderr)
    return 2


def this_machine() -> dict[str, Any]:
    return {
        "cpu_model": provenance.cpu_model(),
        "cpu_count": os.cpu_count(),
        "hostname": platform.node(),
    }


def list_(args: argparse.Namespace) -> int:
    table = history.list_nights(args.history_dir)
    if table.height == 0:
        print(f"{args.history_dir}: no nights yet")
        return 0
    with pl.Config(tbl_rows=-1, tbl_cols=-1, fmt_str_lengths=40, tbl_hide_dataframe_shape=True):
        print(table.drop("file"))
    return 0


def show(args: argparse.Namespace) -> int:
    try:
        table = history.read_history(args.history_dir, args.campaign)
        if args.cell:
            series = history.otava_series(table, args.cell)
            if args.otava_csv:
                series.write_csv(args.otava_csv)
                config = args.otava_csv.with_suffix(".otava.yaml")
                doc = history.otava_config(args.cell, args.otava_csv.resolve(), series.columns)
                write_text(config, yaml.safe_dump(doc, sort_keys=False))
                print(f"otava series: {args.otava_csv}")
                print(f"otava: OTAVA_CONFIG={config} otava analyze {args.cell}")
                return 0
            shown = series
        else:
            metric = args.metric
            if metric not in table.columns:
                raise history.HistoryError(f"no metric {metric!r} in the history")
            shown = table.pivot(on="cell_id", index=["time", "night_id"], values=metric)
    except history.HistoryError as exc:
        return _fail(exc)
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_hide_dataframe_shape=True):
        print(shown)
    return 0


def import_(args: argparse.Namespace) -> int:
    try:
        # Where the runs recorded no machine: this one's (the import follows the campaign).
        path, new = history.import_night(args.results, args.history_dir, machine=this_machine())
    except history.HistoryError as exc:
        return _fail(exc)
    print(f"{'imported' if new else 'already in the history'}: {path}")
    return 0


def _decide(args: argparse.Namespace) -> tuple[dict[str, Any], pl.DataFrame]:
    table = history.read_history(args.history_dir, args.campaign)
    return history.decide(table, args.metric, args.k, args.min_effect), table


def decide(args: argparse.Namespace) -> int:
    """Tonight's suspected regressions (confirmed: null) and, where there are any, the
    campaign file of the confirming re-run."""
    try:
        doc, table = _decide(args)
        history.write_decision(doc, table, args.out)
    except history.HistoryError as exc:
        return _fail(exc)
    cells = history.suspected_cells(doc)
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
    except (campaigns.CampaignError, history.HistoryError) as exc:
        return _fail(exc)
    print(f"confirming campaign: {path}")
    return 0


def confirm(args: argparse.Namespace) -> int:
    """The decision with `confirmed` filled in from the re-run's results (or all false when
    nothing was suspected and so nothing re-ran)."""
    try:
        doc = json.loads(args.regressions.read_text())
        table = history.read_history(args.history_dir, doc["campaign"])
        if history.suspected_cells(doc):
            rerun_file = args.rerun / "runs.parquet"
            if not rerun_file.is_file():
                raise history.HistoryError(f"{rerun_file}: missing; run the confirming campaign")
            rerun = pl.read_parquet(rerun_file)
        else:
            rerun = pl.DataFrame({"cell_id": [], "status": [], doc["metric"]: []})
        done = history.confirm(doc, table, rerun)
        history.write_decision(done, table, args.out)
    except history.HistoryError as exc:
        return _fail(exc)
    confirmed = [c["cell"] for c in done["cells"] if c["confirmed"]]
    print(f"confirmed regressions: {', '.join(confirmed) or 'none'}")
    print(f"regressions: {args.out}")
    return 0


# -- the confirming re-run: the night's campaign file minus the cells not suspected ----------


def _selector(cell: dict[str, Any], tight: bool) -> dict[str, Any]:
    sel: dict[str, Any] = {
        "block": cell["block"],
        "players": cell["players"],
        "workload": cell["workload"],
        "duration_s": cell["duration_s"],
        "network_profile": cell["network_profile"],
    }
    sel |= {f"params.{k}": v for k, v in (cell.get("params") or {}).items()}
    if tight and not cell.get("transport_options"):
        # The campaign names a prototype by its directory and a transport without options by
        # its own name; with options it gets a label the cell does not keep.
        sel |= {"prototype": Path(cell["prototype"]).parent.name, "transport": cell["transport"]}
        if cell.get("library_version"):
            sel["version"] = cell["library_version"]
    return sel


def confirm_campaign(
    doc: dict[str, Any],
    campaign: str | Path | None,
    out_dir: Path,
    **overrides: Any,
) -> Path:
    """Write out_dir/<campaign>-confirm-<night_id>.yaml (a campaign's name is its file's), the
    campaign that re-runs just the suspected cells of a decision (doc), from the night's
    campaign (name or file; default the decision's campaign). overrides: the night's
    only_prototypes / repetitions / duration_s (expand.plan's), which the re-run must get too
    (they change cell ids). Cells that no
    selector can tell apart from a suspected one re-run too (a few runs more, never fewer)."""
    suspected = set(history.suspected_cells(doc))
    if not suspected:
        raise history.HistoryError("no suspected cell in the decision: nothing to confirm")
    path = campaigns.campaign_path(campaign or doc["campaign"])
    cdoc = yaml.safe_load(path.read_text())
    for block in cdoc["matrix"]:
        for proto in block["prototypes"]:
            if "manifest" in proto:  # relative to the campaign file, which moves
                proto["manifest"] = str((path.parent / proto["manifest"]).resolve())
    night = campaigns.plan(path, **overrides)
    cells = {r.cell["cell_id"]: r.cell for r in night.runs}
    missing = sorted(suspected - cells.keys())
    if missing:
        raise history.HistoryError(f"{path}: no cell {', '.join(missing)} in this campaign")
    cdoc["name"] = history.confirm_name(night.name, doc.get("night_id"))
    out = out_dir / f"{cdoc['name']}.yaml"
    problem = ""
    cdoc["description"] = f"Confirming re-run of suspected regressions of {night.name}."
    for tight in (True, False):
        excludes = []
        keep = [_selector(cells[c], tight) for c in sorted(suspected)]
        for cid, cell in sorted(cells.items()):
            sel = _selector(cell, tight)
            if cid not in suspected and sel not in keep and sel not in excludes:
                excludes.append(sel)
        trial = dict(cdoc, exclude=[*cdoc.get("exclude", []), *excludes])
        write_text(out, yaml.safe_dump(trial, sort_keys=False))
        try:
            planned = {r.cell["cell_id"] for r in campaigns.plan(out).runs}
        except campaigns.CampaignError:
            continue
        if suspected <= planned:
            return out
    raise history.HistoryError(
        f"{path}: could not write a campaign re-running {', '.join(sorted(suspected))}" + problem
    )
