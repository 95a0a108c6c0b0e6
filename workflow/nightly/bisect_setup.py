"""How `netstick bisect` builds and measures its candidates: a prototype's cell (its main package
built against each candidate, one cell of a campaign run through the harness, a runs-table metric
per run) or a plain Go main package (built against each candidate, the process's CPU time or the
last number it prints per run). Candidates: the commits of a git repository of the library from
good to bad, or the library's released versions between them that the Go module proxy lists.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prototypes.contract import manifest as manifests
from workflow import layout
from workflow.campaign import expand as campaigns
from workflow.campaign.expand import Plan
from workflow.files import REPO
from workflow.nightly.bisect import Builder, Measurer, Outcome, Settings, bisect, write_document
from workflow.nightly.candidates import GoBuilder, commits_between, versions_between
from workflow.nightly.measurers import CommandMeasurer, PrototypeMeasurer

# The candidates, how to build and measure them, and the document's fields that name them.
Setup = tuple[list[str], Builder, Measurer, dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Request:
    """What to bisect (the flags of `netstick bisect`)."""

    good: str
    bad: str
    library: str | None = None
    repo: Path | None = None
    prototype: str | None = None
    transport: str | None = None
    campaign: str = "nightly"
    cell: str | None = None
    metric: str = "rtt_net_p50_us"
    duration_s: float | None = None
    module_dir: Path | None = None
    main: str | None = None
    args: str = ""
    sample: str = "cpu"
    seed: int = 0


def go_main(args: Request, work_dir: Path, progress: Any = None) -> Setup:
    """A plain Go main package: --module-dir, --main, --library."""
    if args.module_dir is None or not args.main or not args.library:
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


def _repo(args: Request) -> Path | None:
    if args.repo is None:
        return None
    repo = args.repo.resolve()
    if not (repo / ".git").exists() and not (repo / "HEAD").is_file():
        raise ValueError(f"--repo {args.repo}: not a git repository")
    return repo


def _candidates(args: Request, module_dir: Path, library: str) -> list[str]:
    """The commits of --repo from --good to --bad, or the library's released versions."""
    repo = _repo(args)
    if repo is not None:
        return commits_between(repo, args.good, args.bad)
    return versions_between(module_dir, library, args.good, args.bad)


def prototype(args: Request, work_dir: Path, progress: Any = None) -> Setup:
    """A prototype's cell: --prototype, --transport, the campaign's cell."""
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
    measurer = PrototypeMeasurer(path, cell, args.metric, work_dir, args.seed, progress)
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


def _cell(plan: Plan, args: Request) -> dict[str, Any]:
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


def run(
    request: Request,
    work_dir: Path,
    out: Path,
    settings: Settings,
    night_id: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> Outcome:
    """Build, measure and bisect as request says; the document written once to out.
    Raises ValueError (bad request), CandidatesError, ManifestError or FileExistsError."""
    if (request.prototype is None) == (request.module_dir is None):
        raise ValueError("give either --prototype (a prototype's cell) or --module-dir (a Go main)")
    if out.exists():
        raise FileExistsError(f"--out {out}: exists; bisection documents are written once")
    how = prototype if request.prototype else go_main
    candidates, builder, measurer, meta = how(request, work_dir, progress)
    if progress is not None:
        progress(
            f"bisect: {len(candidates)} candidates of {meta['library']} from {request.good} to "
            f"{request.bad}; work in {work_dir}"
        )
    outcome = bisect(candidates, builder, measurer, settings, progress or (lambda _msg: None))
    write_document(out, outcome.document(night_id=night_id, **meta))
    return outcome
