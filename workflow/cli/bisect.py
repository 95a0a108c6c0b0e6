"""`netstick bisect`: the first bad version or commit of a library between a last good and a first
bad (workflow.nightly.bisect), built and measured one of two ways:

- a prototype's cell (--prototype reference --transport kcp): the prototype's main package built
  against each candidate, one cell of a campaign (the nightly's own cell of that transport by
  default) run through the harness, a runs-table metric per run (--metric);
- a plain Go main package (--module-dir DIR --main ./cmd/x): built against each candidate and run
  with --args, the process's CPU time per run (or the last number it prints: --sample stdout).

Candidates are the commits of --repo (a git repository of the library) from --good to --bad, or
without --repo the library's released versions between them that the Go module proxy lists. The
parser's flags are here (arguments); main.py adds them to its `bisect` command.
"""

from __future__ import annotations

import argparse
import datetime as dt
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workflow import layout
from workflow.bench.options import DATA, positive_int, seconds
from workflow.files import REPO, repo_relative

if TYPE_CHECKING:
    from prototypes.contract import manifest as manifests
    from workflow.campaign.expand import Plan
    from workflow.nightly.bisect import Builder, Measurer

# The candidates, how to build and measure them, and the document's fields that name them.
Setup = tuple[list[str], "Builder", "Measurer", dict[str, Any]]

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
    from workflow.nightly.candidates import CandidatesError

    if (args.prototype is None) == (args.module_dir is None):
        return _fail("give either --prototype (a prototype's cell) or --module-dir (a Go main)")
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    work_dir = (args.work_dir or DATA / "bisect" / stamp).resolve()
    out = args.out or work_dir / "bisection.json"
    if out.exists():
        return _fail(f"--out {out}: exists; bisection documents are written once")
    try:
        settings = bisection.Settings(
            runs=args.runs, max_runs=args.max_runs, alpha=args.alpha, seed=args.seed
        )
        setup = _prototype(args, work_dir) if args.prototype else _go_main(args, work_dir)
    except (ValueError, CandidatesError, manifests.ManifestError) as exc:
        return _fail(str(exc))
    candidates, builder, measurer, meta = setup
    _progress(
        f"bisect: {len(candidates)} candidates of {meta['library']} from {args.good} to "
        f"{args.bad}; work in {work_dir}"
    )
    outcome = bisection.bisect(candidates, builder, measurer, settings, _progress)
    doc = outcome.document(night_id=args.night_id, **meta)
    try:
        bisection.write_document(out, doc)
    except FileExistsError as exc:
        return _fail(str(exc))
    if outcome.status == bisection.FOUND:
        print(f"first bad: {outcome.first_bad} (last good {outcome.last_good})")
    else:
        print(f"inconclusive: {outcome.bound}")
    print(f"bisection: {out}")
    return 0


def _go_main(args: argparse.Namespace, work_dir: Path) -> Setup:
    from workflow.nightly.candidates import GoBuilder
    from workflow.nightly.measurers import CommandMeasurer

    if not args.main or not args.library:
        raise ValueError("--module-dir needs --main (the main package) and --library")
    module_dir = args.module_dir.resolve()
    if not (module_dir / "go.mod").is_file():
        raise ValueError(f"--module-dir {args.module_dir}: no go.mod; expected a Go module")
    candidates = _candidates(args, module_dir, args.library)
    builder = GoBuilder(module_dir, args.main, args.library, work_dir, _repo(args))
    measurer = CommandMeasurer(shlex.split(args.args), args.sample, seed=args.seed)
    metric = "cpu_s" if args.sample == "cpu" else "stdout"
    meta = {"campaign": None, "library": args.library, "cell": args.main, "metric": metric}
    return candidates, builder, measurer, meta


def _repo(args: argparse.Namespace) -> Path | None:
    if args.repo is None:
        return None
    repo = args.repo.resolve()
    if not (repo / ".git").exists() and not (repo / "HEAD").is_file():
        raise ValueError(f"--repo {args.repo}: not a git repository")
    return repo


def _candidates(args: argparse.Namespace, module_dir: Path, library: str) -> list[str]:
    """The commits of --repo from --good to --bad, or the library's released versions."""
    from workflow.nightly.candidates import commits_between, versions_between

    repo = _repo(args)
    if repo is not None:
        return commits_between(repo, args.good, args.bad)
    return versions_between(module_dir, library, args.good, args.bad)


def _prototype(args: argparse.Namespace, work_dir: Path) -> Setup:
    from prototypes.contract import manifest as manifests
    from workflow.campaign import expand as campaigns
    from workflow.nightly.candidates import GoBuilder
    from workflow.nightly.measurers import PrototypeMeasurer

    path = REPO / "prototypes" / args.prototype / "prototype.yaml"
    if not path.is_file():
        raise ValueError(f"--prototype {args.prototype}: no {path}")
    man = manifests.load(path)
    if args.transport is None:
        raise ValueError(f"--prototype needs --transport (one of {', '.join(man.transport_names)})")
    library = args.library or (man.transport(args.transport).library or "").split(" ", 1)[0]
    if man.language != "go" or not (man.directory / "go.mod").is_file():
        raise ValueError(f"{path}: not a Go module's prototype; bisect builds Go main packages")
    main = _main_package(man)
    cell = _cell(campaigns.plan(args.campaign, only_prototypes=[args.prototype]), args)
    candidates = _candidates(args, man.directory, library)
    builder = GoBuilder(man.directory, main, library, work_dir, _repo(args))
    measurer = PrototypeMeasurer(path, cell, args.metric, work_dir, args.seed, _progress)
    meta = {
        "campaign": args.campaign,
        "library": library,
        "cell": cell["cell_id"],
        "metric": args.metric,
    }
    return candidates, builder, measurer, meta


def _main_package(man: manifests.Manifest) -> str:
    """The main package the manifest's library_builds command builds (its last ./ argument)."""
    command = man.library_builds.command if man.library_builds is not None else ()
    packages = [a for a in command if a.startswith("./")]
    if not packages:
        raise ValueError(
            f"{man.path}: library_builds.command names no main package (./...); expected the "
            "command that builds another library version"
        )
    return str(packages[-1])


def _cell(plan: Plan, args: argparse.Namespace) -> dict[str, Any]:
    """The campaign's cell (its first run's document): --cell, else the pinned cell of
    --transport; --duration-s overrides its window."""
    for run in plan.runs:
        cell = run.cell
        if args.cell is not None:
            chosen = run.cell_id == args.cell
        else:
            pinned = cell.get("library_version", "pinned") == "pinned"
            chosen = cell["transport"] == args.transport and pinned
        if chosen:
            if cell["transport"] != args.transport:
                raise ValueError(
                    f"--cell {args.cell}: a cell of transport {cell['transport']}, not "
                    f"--transport {args.transport}"
                )
            doc = dict(cell)
            if args.duration_s is not None and args.duration_s != doc["duration_s"]:
                # Another window is another cell: named as run-cell names a cell file.
                doc["duration_s"] = args.duration_s
                doc["cell_id"] = layout.derive_cell_id(doc)
            return doc
    which = f"cell {args.cell}" if args.cell else f"pinned cell of transport {args.transport}"
    raise ValueError(
        f"--campaign {args.campaign}: no {which}; its cells: {', '.join(plan.cell_ids[:12])}"
    )
