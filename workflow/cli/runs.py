"""`netstick run-cell` (one cell through the harness) and `netstick demo` (every transport
once, workflow/bench/demo.py)."""

from __future__ import annotations

import argparse
import datetime as dt
import sys

from workflow.files import REPO, repo_relative


def run_cell(args: argparse.Namespace) -> int:
    from prototypes.contract import manifest
    from prototypes.contract.argv import check_cell
    from workflow import layout
    from workflow.harness import cell as cells
    from workflow.harness import run as harness

    try:
        doc = cells.load(args.cell)
    except cells.CellError as exc:
        print(f"netstick run-cell: {exc}", file=sys.stderr)
        return 2
    # A cell written by hand has no id; a campaign's cells carry theirs.
    doc.setdefault("cell_id", layout.derive_cell_id(doc))
    # Bad input is refused before anything runs: no sandbox, no failed attempt, no traceback.
    try:
        man = manifest.load(REPO / doc["prototype"])
        check_cell(man, doc)
    except (manifest.ManifestError, ValueError) as exc:
        print(f"netstick run-cell: {args.cell}: {repo_relative(str(exc))}", file=sys.stderr)
        return 2
    outcome = harness.run_cell(doc, args.out)
    if outcome.status == "ok":
        print(f"ok: {outcome.path}")
        return 0
    kept = f"\nrecord kept in {outcome.path}" if outcome.path.exists() else ""
    print(f"failed ({outcome.reason}): {outcome.detail}{kept}", file=sys.stderr)
    if outcome.interrupted_by is not None:
        return 128 + outcome.interrupted_by
    return 1


def demo(args: argparse.Namespace) -> int:
    from workflow.bench import cells
    from workflow.bench import demo as demos

    problem = cells.check_transports(args.transports)
    if problem:
        print(f"netstick demo: {problem}", file=sys.stderr)
        return 2
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    out_dir = args.out_dir or REPO / "data" / "demo" / stamp
    text, all_ok = demos.run(
        out_dir,
        transports=args.transports,
        players=args.players,
        duration_s=args.duration_s,
        binary=args.binary,
    )
    print(text)
    return 0 if all_ok else 1
