"""`netstick history push|pull`: the history store (data/history/) mirrored onto a data branch
of a git repository, so no runner holds the only copy (workflow/nightly/archive.py does the
work; the parser is in main.py)."""

from __future__ import annotations

import argparse
import sys

from workflow.nightly import archive


def push(args: argparse.Namespace) -> int:
    """Append the nights the branch lacks, one commit per night (idempotent)."""
    try:
        result = archive.push(
            args.history_dir, args.remote, args.branch, args.work_dir, args.message
        )
    except archive.ArchiveError as exc:
        print(f"netstick history push: {exc}", file=sys.stderr)
        return 2
    print("\n".join(archive.describe_push(result, args.branch)))
    return 0


def pull(args: argparse.Namespace) -> int:
    """Restore the branch's files this machine lacks; never overwrite one."""
    try:
        result = archive.pull(
            args.remote, args.branch, args.history_dir, args.work_dir, args.allow_missing
        )
    except archive.ArchiveError as exc:
        print(f"netstick history pull: {exc}", file=sys.stderr)
        return 2
    print("\n".join(archive.describe_pull(result, args.history_dir, args.branch)))
    return 0
