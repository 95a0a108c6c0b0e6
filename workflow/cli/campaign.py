"""`netstick campaign VERB`: plan a campaign, run one of its runs (what each Snakemake job does),
summarise it, show where its runs stand, and let failed runs be retried. The parser is in
main.py."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

from workflow.campaign import expand as campaigns
from workflow.campaign import progress, records


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


def _run_one(args: argparse.Namespace, plan: campaigns.Plan) -> int:
    run = plan.by_key.get(args.key)
    if run is None:
        return _fail(ValueError(f"key {args.key!r} is not a run of campaign {plan.name}"))
    code, record = records.execute(
        run, plan.name, attempt=args.attempt, attempts=args.attempts, raw=args.data_dir / "raw"
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


plan = _planned(_plan)
run_one = _planned(_run_one)
summary = _planned(_summary)
status = _planned(_status)
reset_failed = _planned(_reset_failed)
