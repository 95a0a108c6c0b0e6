"""`netstick campaign VERB`: plan a campaign, run one run of its written plan (what each
Snakemake job does), summarise it, show where its runs stand, and let failed runs be retried.
The parser is in main.py."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from workflow import layout
from workflow.campaign import expand as campaigns
from workflow.campaign import facts as campaign_facts
from workflow.campaign import progress, records
from workflow.files import REPO


def plan_from(args: argparse.Namespace) -> campaigns.Plan:
    only = [p for p in args.prototypes.split(",") if p] or None
    return campaigns.plan(
        args.campaign,
        only_prototypes=only,
        repetitions=args.repetitions,
        duration_s=args.duration_s,
    )


def _fail(exc: Exception) -> int:
    print(f"netstick campaign: {exc}", file=sys.stderr)
    return 2


def _planned(
    command: Callable[[argparse.Namespace, campaigns.Plan], int],
) -> Callable[[argparse.Namespace], int]:
    """The command, given the campaign's plan; an invalid campaign is exit code 2 and its errors."""

    def run(args: argparse.Namespace) -> int:
        try:
            plan = plan_from(args)
        except campaigns.CampaignError as exc:
            return _fail(exc)
        return command(args, plan)

    return run


def _plan(args: argparse.Namespace, plan: campaigns.Plan) -> int:
    print(progress.describe_plan(plan))
    if args.write:
        path = progress.write_plan(plan, args.data_dir / "raw")
        print(f"plan written to {path}")
    problem = plan.budget_problem()
    if problem:
        print(f"warning: {problem}", file=sys.stderr)
    return 0


def run_one(args: argparse.Namespace) -> int:
    """One run of a written plan: its cell as plan.json holds it, never planned again from the
    campaign file (the plan the Snakefile wrote is what every job measures)."""
    path: Path = args.plan
    if path.name != "plan.json":
        return _fail(ValueError(f"{path}: expected a campaign's plan.json (data/raw/<campaign>/)"))
    try:
        doc = layout.read_plan(path.parent)
    except FileNotFoundError as exc:
        return _fail(exc)
    entry = next((e for e in doc["runs"] if e.get("key") == args.key), None)
    if entry is None:
        return _fail(
            ValueError(
                f"{path}: key {args.key!r} is not a run of this plan; plan the campaign again"
            )
        )
    run = campaigns.Run(entry["cell"], entry.get("block") or "")
    name = str(doc.get("campaign") or path.parent.name)
    code, record = records.execute(
        run, name, attempt=args.attempt, attempts=args.attempts, raw=path.parent.parent
    )
    if record is None:
        retry = "will retry" if args.attempt < args.attempts else "no record written"
        verdict = (
            "interrupted"
            if code > 128
            else f"failed (attempt {args.attempt} of {args.attempts}), {retry}"
        )
        print(f"{args.key}: {verdict}", file=sys.stderr)
    else:
        print(f"{args.key}: {record['status']} {record.get('reason') or ''}".rstrip())
    return code


def _summary(args: argparse.Namespace, plan: campaigns.Plan) -> int:
    doc = progress.summarize(plan, args.data_dir / "raw", report=args.report)
    print(progress.format_summary(doc))
    return 0 if doc["runs"]["failed"] == 0 and doc["runs"]["not_run"] == 0 else 1


def _status(args: argparse.Namespace, plan: campaigns.Plan) -> int:
    """Exit code 1 when a run failed for good, else 0 (runs not run yet or in flight are not
    failures: the campaign may still be going)."""
    doc = progress.status(plan, args.data_dir / "raw")
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print(progress.format_status(doc))
    return 1 if doc["runs"]["failed"] else 0


def _reset_failed(args: argparse.Namespace, plan: campaigns.Plan) -> int:
    moved = records.reset_failed(plan, args.data_dir / "raw")
    print(f"{len(moved)} failed run(s) will be retried at the next start")
    return 0


def facts(args: argparse.Namespace) -> int:
    """The campaign's facts.json, plan.json and raw-manifest.tsv in its results directory
    (workflow/campaign/facts/, their one producer), from its written plan and runs."""
    raw = layout.campaign_dir(args.campaign, args.data_dir / "raw")
    try:
        layout.read_plan(raw)
    except FileNotFoundError as exc:
        return _fail(exc)
    print(f"facts: {campaign_facts.write(args.data_dir / 'results' / args.campaign, raw, REPO)}")
    return 0


plan = _planned(_plan)
summary = _planned(_summary)
status = _planned(_status)
reset_failed = _planned(_reset_failed)
