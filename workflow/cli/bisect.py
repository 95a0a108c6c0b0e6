"""`netstick bisect`: the first bad version or commit of a library between a last good and a first
bad (workflow.nightly.bisect), built and measured one of two ways:

- a prototype's cell (--prototype reference --transport kcp): the prototype's main package built
  against each candidate, one cell of a campaign (the nightly's own cell of that transport by
  default) run through the harness, a runs-table metric per run (--metric);
- a plain Go main package (--module-dir DIR --main ./cmd/x): built against each candidate and run
  with --args, the process's CPU time per run (or the last number it prints: --sample stdout).

Candidates are the commits of --repo (a git repository of the library) from --good to --bad, or
without --repo the library's released versions between them that the Go module proxy lists
(workflow/nightly/bisect_setup.py). The parser's flags are here (arguments); main.py adds them to
its `bisect` command.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path

from workflow.bench.options import DATA, positive_int, seconds
from workflow.files import repo_relative

DESCRIPTION = (
    "find the first bad version or commit of a library between a last good and a first bad: "
    "repeated interleaved A/B runs at each step, stopping when the step's interval decides or "
    "saying inconclusive with the bound; writes the bisection JSON (schema 1)"
)


def arguments(p: argparse.ArgumentParser) -> None:
    """The flags of `netstick bisect`."""
    p.add_argument("--good", required=True, help="the last known good version or commit")
    p.add_argument("--bad", required=True, help="the first known bad version or commit")
    p.add_argument(
        "--library", help="the Go module bisected (default with --prototype: the transport's)"
    )
    p.add_argument(
        "--repo",
        type=Path,
        help="a git repository of the library: bisect its commits (default: released versions)",
    )
    g = p.add_argument_group("a prototype's cell")
    g.add_argument("--prototype", help="prototype name: prototypes/<name>/prototype.yaml")
    g.add_argument("--transport", help="the transport whose library is bisected")
    g.add_argument("--campaign", default="nightly", help="campaign of the cell (default nightly)")
    g.add_argument(
        "--cell", help="cell id in the campaign (default: its pinned cell of --transport)"
    )
    g.add_argument("--metric", default="rtt_net_p50_us", help="runs-table metric, higher is worse")
    g.add_argument(
        "--duration-s", type=seconds(0, True), help="override the cell's measurement window"
    )
    g = p.add_argument_group("a Go main package")
    g.add_argument("--module-dir", type=Path, help="the Go module holding the main package")
    g.add_argument("--main", help="the main package, e.g. ./cmd/x")
    g.add_argument("--args", default="", help="arguments of every run (one shell-quoted string)")
    g.add_argument(
        "--sample",
        choices=("cpu", "stdout"),
        default="cpu",
        help="per run: CPU seconds of the process (default) or the last number it prints",
    )
    p.add_argument("--runs", type=positive_int, default=6, help="runs per side at first (6)")
    p.add_argument(
        "--max-runs", type=positive_int, default=24, help="runs per side at most per step (24)"
    )
    p.add_argument("--alpha", type=float, default=0.05, help="chance of any wrong call (0.05)")
    p.add_argument("--seed", type=int, default=0, help="seed of the run order and bootstraps")
    p.add_argument("--night-id", help="the night whose confirmed regression this bisects")
    p.add_argument("--work-dir", type=Path, help="builds and runs (default data/bisect/<UTC time>)")
    p.add_argument(
        "--out", type=Path, help="the bisection JSON (default <work-dir>/bisection.json)"
    )


def _fail(message: str) -> int:
    print(f"netstick bisect: {repo_relative(message)}", file=sys.stderr)
    return 2


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def bisect(args: argparse.Namespace) -> int:
    from prototypes.contract import manifest as manifests
    from workflow.nightly import bisect as bisection
    from workflow.nightly import bisect_setup
    from workflow.nightly.candidates import CandidatesError

    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    work_dir = (args.work_dir or DATA / "bisect" / stamp).resolve()
    out = args.out or work_dir / "bisection.json"
    fields = {f: getattr(args, f) for f in bisect_setup.Request.__dataclass_fields__}
    try:
        settings = bisection.Settings(
            runs=args.runs, max_runs=args.max_runs, alpha=args.alpha, seed=args.seed
        )
        outcome = bisect_setup.run(
            bisect_setup.Request(**fields), work_dir, out, settings, args.night_id, _progress
        )
    except (ValueError, CandidatesError, manifests.ManifestError, FileExistsError) as exc:
        return _fail(str(exc))
    if outcome.status == bisection.FOUND:
        print(f"first bad: {outcome.first_bad} (last good {outcome.last_good})")
    else:
        print(f"inconclusive: {outcome.bound}")
    print(f"bisection: {out}")
    return 0


def confirmed(args: argparse.Namespace) -> int:
    """`netstick history bisect REGRESSIONS`: bisect every version the night confirmed slower
    than its predecessor, into the history (workflow/nightly/bisect_confirmed.py)."""
    import json

    from workflow.nightly import bisect as bisection
    from workflow.nightly import bisect_confirmed as after

    try:
        decision = json.loads(args.regressions.read_text())
    except (OSError, ValueError) as exc:
        return _fail(f"{args.regressions}: {exc}; expected the night's regressions.json")
    settings = bisection.Settings(runs=args.runs, max_runs=args.max_runs, alpha=args.alpha)
    work = (args.work_dir or DATA / "bisect" / str(decision.get("night_id"))).resolve()
    paths = after.bisect_confirmed(
        decision, args.history_dir, work, settings, args.clone, _progress
    )
    docs = [json.loads(p.read_text()) for p in paths]
    print(after.summary(paths, docs))
    return 0
