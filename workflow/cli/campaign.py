"""`netstick campaign ...`: plan a campaign, run one of its runs (what each Snakemake job does),
summarise it, and let failed runs be retried."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from workflow.campaign import expand as campaigns
from workflow.campaign import progress, records


def _overrides(p: argparse.ArgumentParser) -> None:
    p.add_argument("campaign", help="campaign name (workflow/campaigns/<name>.yaml) or file")
    p.add_argument(
        "--prototypes",
        default="",
        help="comma-separated prototypes to keep (default: all the campaign names)",
    )
    p.add_argument("--repetitions", type=int, default=None, help="override repetitions")
    p.add_argument("--duration-s", type=float, default=None, help="override every window")
    p.add_argument(
        "--data-dir", type=Path, default=campaigns.REPO / "data", help="data root (default: data)"
    )


def plan_from(args: argparse.Namespace) -> campaigns.Plan:
    only = [p for p in args.prototypes.split(",") if p] or None
    return campaigns.plan(
        args.campaign,
        only_prototypes=only,
        repetitions=args.repetitions,
        duration_s=args.duration_s,
    )


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("campaign", help="campaigns: plan, run one run, summary, reset failed runs")
    csub = p.add_subparsers(dest="campaign_cmd", required=True)

    q = csub.add_parser("plan", help="validate and expand a campaign; print runs and estimate")
    _overrides(q)
    q.add_argument("--write", action="store_true", help="write data/raw/<campaign>/plan.json")
    q.set_defaults(func=_planned(_cmd_plan))

    q = csub.add_parser("run-one", help="run one planned run and write its record (a job)")
    _overrides(q)
    q.add_argument("key", help="<cell-id>/<run-id> of the plan")
    q.add_argument("--attempt", type=int, default=1, help="this attempt (1-based)")
    q.add_argument("--attempts", type=int, default=1, help="attempts allowed in all")
    q.set_defaults(func=_planned(_cmd_run_one))

    q = csub.add_parser("summary", help="one screen: runs ok, failed, not run; where the report is")
    _overrides(q)
    q.add_argument("--report", type=Path, default=None, help="the campaign's report, if built")
    q.set_defaults(func=_planned(_cmd_summary))

    q = csub.add_parser("reset-failed", help="let the next start retry runs that failed")
    _overrides(q)
    q.set_defaults(func=_planned(_cmd_reset_failed))


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


def _cmd_plan(args: argparse.Namespace, plan: campaigns.Plan) -> int:
    print(progress.describe_plan(plan))
    if args.write:
        path = progress.write_plan(plan, args.data_dir / "raw")
        print(f"plan written to {path}")
    problem = plan.budget_problem()
    if problem:
        print(f"warning: {problem}", file=sys.stderr)
    return 0


def _cmd_run_one(args: argparse.Namespace, plan: campaigns.Plan) -> int:
    run = plan.by_key.get(args.key)
    if run is None:
        return _fail(ValueError(f"key {args.key!r} is not a run of campaign {plan.name}"))
    code, record = records.execute(
        run, plan.name, attempt=args.attempt, attempts=args.attempts, raw=args.data_dir / "raw"
    )
    if record is None:
        verdict = "interrupted" if code > 128 else f"failed (attempt {args.attempt}), will retry"
        print(f"{args.key}: {verdict}", file=sys.stderr)
    else:
        print(f"{args.key}: {record['status']} {record.get('reason') or ''}".rstrip())
    return code


def _cmd_summary(args: argparse.Namespace, plan: campaigns.Plan) -> int:
    doc = progress.summarize(plan, args.data_dir / "raw", report=args.report)
    print(progress.format_summary(doc))
    return 0 if doc["runs"]["failed"] == 0 and doc["runs"]["not_run"] == 0 else 1


def _cmd_reset_failed(args: argparse.Namespace, plan: campaigns.Plan) -> int:
    moved = records.reset_failed(plan, args.data_dir / "raw")
    print(f"{len(moved)} failed run(s) will be retried at the next start")
    return 0
