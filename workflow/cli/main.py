"""The `netstick` command: every subcommand's parser, built here in one place.

Each subcommand names the function that runs it as "module:function"; the module is imported only
when that subcommand runs, so `netstick campaign plan` never loads the statistics stack and a
stage's import error cannot break the other commands. The functions live beside this file, one
module per stage (campaign.py, contract.py, runs.py, stats.py, report.py, history.py); the
benches (`netstick bench NAME`) are the modules of workflow/bench/, each with its own options.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from workflow.bench import BENCHES
from workflow.bench import module as bench_module
from workflow.bench.options import (
    DATA,
    DEFAULT_BINARY,
    binary_arg,
    names,
    positive_int,
    seconds,
)
from workflow.files import REPO
from workflow.nightly.archive import arguments as archive_arguments

# The transports of the reference prototype (its manifest lists the same; the commands that take
# --transports check against it when they run).
REFERENCE_TRANSPORTS = "tcp,udp,kcp,enet,quic,ws,webrtc"


SubParsers = argparse._SubParsersAction  # type: ignore[type-arg]


def _command(sub: SubParsers, name: str, target: str, help_text: str) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(name, help=help_text, description=help_text)
    p.set_defaults(target=target)
    return p


def _campaign_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("campaign", help="campaign name (workflow/campaigns/<name>.yaml) or file")
    p.add_argument(
        "--prototypes", default="", help="comma-separated prototypes to keep (default: all)"
    )
    p.add_argument("--repetitions", type=int, default=None, help="override repetitions")
    p.add_argument("--duration-s", type=float, default=None, help="override every window")
    p.add_argument("--data-dir", type=Path, default=DATA, help="data root (default: data)")


def _add_contract(sub: SubParsers) -> None:
    p = _command(
        sub,
        "check-logs",
        "workflow.cli.contract:check_logs",
        "check a log directory against prototypes/CONTRACT.md",
    )
    p.add_argument("dir", type=Path, metavar="DIR")
    p.add_argument(
        "--max-per-file", type=int, default=50, help="violations shown per file (default 50)"
    )
    p.add_argument(
        "--manifest",
        type=Path,
        help="the prototype's prototype.yaml: also compare its library_versions with the logs'",
    )

    p = _command(
        sub,
        "check-prototype",
        "workflow.cli.contract:check_prototype",
        "run a prototype from its manifest and report every violation of the contract",
    )
    p.add_argument(
        "manifest", type=Path, metavar="MANIFEST", help="prototypes/<name>/prototype.yaml"
    )
    p.add_argument("--transport", help="comma-separated transports (default: all the manifest has)")
    p.add_argument("--quick", action="store_true", help="one 2 s stream run instead of stream+idle")
    p.add_argument("--work-dir", type=Path, help="keep the logs here (default: a removed temp dir)")
    p.add_argument(
        "--library-version", default="pinned", metavar="VERSION",
        help="check the build of another version of the transport's library (one the manifest's "
        "library_builds lists), with that version's own facts (default: pinned)",
    )  # fmt: skip
    p.add_argument(
        "--skip", default="", metavar="CHECKS",
        help="comma-separated checks not to run, each reported as skipped (e.g. server-lost "
        "where a library takes minutes to notice a dead server)",
    )  # fmt: skip

    p = _command(
        sub,
        "check-unity",
        "workflow.cli.contract:check_unity",
        "check the Unity projects without Unity: C# syntax, #if placement, package pins, editors",
    )
    p.add_argument(
        "path",
        type=Path,
        nargs="?",
        default=Path("prototypes/unity"),
        metavar="PATH",
        help="directory to check (default: prototypes/unity)",
    )


def _add_runs(sub: SubParsers) -> None:
    p = _command(
        sub,
        "run-cell",
        "workflow.cli.runs:run_cell",
        "run one repetition of one cell: sandbox, server, players, monitors",
    )
    p.add_argument("cell", type=Path, metavar="CELL.json", help="cell document (cell.schema.json)")
    p.add_argument("--out", type=Path, required=True, help="the run's directory (created)")

    p = _command(
        sub,
        "campaign",
        "",
        "campaigns: plan, run one run (a Snakemake job), summary, status, reset failed runs, facts",
    )
    csub = p.add_subparsers(dest="campaign_cmd", required=True, metavar="VERB")
    q = _command(
        csub, "plan", "workflow.cli.campaign:plan", "validate and expand a campaign; print it"
    )
    _campaign_args(q)
    q.add_argument("--write", action="store_true", help="write data/raw/<campaign>/plan.json")
    q = _command(
        csub,
        "run-one",
        "workflow.cli.campaign:run_one",
        "run one run of a written plan (what each Snakemake job does), write its record",
    )
    q.add_argument(
        "plan", type=Path, metavar="PLAN.json", help="the campaign's data/raw/<campaign>/plan.json"
    )
    q.add_argument("key", help="<cell-id>/<run-id> of the plan")
    q.add_argument("--attempt", type=int, default=1, help="this attempt (1-based)")
    q.add_argument("--attempts", type=int, default=1, help="attempts allowed in all")
    q = _command(
        csub, "summary", "workflow.cli.campaign:summary", "runs ok, failed, not run; the report"
    )
    _campaign_args(q)
    q.add_argument("--report", type=Path, default=None, help="the campaign's report, if built")
    q = _command(
        csub,
        "status",
        "workflow.cli.campaign:status",
        "where every run stands now: per cell ok, failed, not run, running, stale; each failed "
        "run with its reason, exit code, attempts and last stderr lines (give the overrides the "
        "campaign was started with). Exit code 1 when any run failed for good, 2 for an invalid "
        "campaign, else 0 (runs still to come or in flight are not failures)",
    )
    _campaign_args(q)
    q.add_argument("--json", action="store_true", help="the same as one JSON document")
    q = _command(
        csub,
        "reset-failed",
        "workflow.cli.campaign:reset_failed",
        "let the next start retry runs that failed",
    )
    _campaign_args(q)
    q = _command(
        csub,
        "facts",
        "workflow.cli.campaign:facts",
        "the campaign's facts once every run has finished: what the runs recorded and the "
        "checkout and machine that collect the results -> data/results/<campaign>/facts.json "
        "(with plan.json and raw-manifest.tsv)",
    )
    q.add_argument("campaign", help="campaign name: data/raw/<campaign> -> data/results/<campaign>")
    q.add_argument("--data-dir", type=Path, default=DATA, help="data root (default: data)")

    p = _command(
        sub, "demo", "workflow.cli.runs:demo", "every transport once on loopback: an RTT/CPU table"
    )
    p.add_argument(
        "--transports",
        type=names,
        default=names(REFERENCE_TRANSPORTS),
        help=f"comma-separated (default {REFERENCE_TRANSPORTS})",
    )
    p.add_argument("--players", type=positive_int, default=20, help="players (default 20)")
    p.add_argument("--duration-s", type=seconds(0, True), default=6.0, help="window (default 6)")
    p.add_argument("--out-dir", type=Path, help="where runs go (default data/demo/<time>)")
    binary_arg(p)


def _add_stats(sub: SubParsers) -> None:
    p = _command(
        sub,
        "stats",
        "workflow.cli.stats:stats",
        "ingest a campaign's raw runs and compute intervals, comparisons, findings",
    )
    p.add_argument("campaign", help="campaign name: data/raw/<campaign> -> data/results/<campaign>")
    p.add_argument("--data-dir", type=Path, default=DATA, help="data root (default: data)")
    p.add_argument("--seed", type=int, default=0, help="seed of every bootstrap")
    p.add_argument(
        "--step",
        choices=("all", "ingest", "analyse"),
        default="all",
        help="only this step (the workflow's rules run them one by one)",
    )

    p = _command(
        sub,
        "compare",
        "workflow.cli.stats:compare",
        "regressions between results (oldest first): per cell against the baseline, "
        "change points over the whole history",
    )
    p.add_argument("results", nargs="+", help="data/results/<name> directories or names")
    p.add_argument("--data-dir", type=Path, default=DATA, help="data root (default: data)")
    p.add_argument("--metric", default="rtt_net_p50_us", help="runs table column to compare")
    p.add_argument("--min-effect", type=float, default=0.05, help="smallest ratio change counted")
    p.add_argument("--out", type=Path, default=None, help="write the verdicts as JSON here")


def _add_import(sub: SubParsers) -> None:
    p = _command(
        sub,
        "import",
        "workflow.cli.stats:import_study",
        "an earlier study's own raw data -> Netstick's samples, runs and resources tables",
    )
    p.add_argument("study", choices=("netcelerity", "envirostick"), help="whose format")
    p.add_argument("dir", type=Path, help="the study's raw data directory")
    p.add_argument("--out", type=Path, required=True, help="directory for the Parquet tables")
    p.add_argument(
        "--tz",
        default="Europe/Amsterdam",
        help="envirostick: zone of the logs' local time (default Europe/Amsterdam)",
    )


def _add_report(sub: SubParsers) -> None:
    p = _command(
        sub,
        "report",
        "workflow.cli.report:report",
        "a campaign's report from its results and facts (`netstick campaign facts`): figure "
        "data, check-list, HTML/PDF, RO-Crate",
    )
    p.add_argument("campaign", help="campaign name: data/results/<campaign> -> report/_output/...")
    p.add_argument("--data-dir", type=Path, default=DATA, help="data root (default: data)")
    p.add_argument(
        "--report-dir",
        type=Path,
        default=REPO / "report" / "_output",
        help="report root (default: report/_output)",
    )
    p.add_argument(
        "--step",
        choices=("all", "figures", "checklist", "render", "crate"),
        default="all",
        help="only this step (the workflow's rules run them one by one)",
    )
    p.add_argument("--no-pdf", action="store_true", help="HTML only")

    p = _command(
        sub,
        "reanalysis",
        "",
        "Net-Celerity's committed raw data re-analysed: tables, findings, report",
    )
    rsub = p.add_subparsers(dest="reanalysis_cmd", required=True, metavar="VERB")
    q = _command(rsub, "compute", "workflow.cli.report:reanalysis_compute", "tables and findings")
    q.add_argument("--out", type=Path, required=True, help="tables directory")
    q.add_argument("--data", type=Path, default=None, help="raw data (default: the vendored copy)")
    q = _command(rsub, "render", "workflow.cli.report:reanalysis_render", "the report")
    q.add_argument("tables", type=Path, help="tables directory (from compute)")
    q.add_argument("--out", type=Path, required=True, help="HTML file")
    q.add_argument("--pdf", type=Path, default=None, help="also a PDF here")


def _add_history(sub: SubParsers) -> None:
    p = _command(sub, "history", "", "nightly history: per-cell trends, change points, verdicts")
    hsub = p.add_subparsers(dest="history_cmd", required=True, metavar="VERB")
    q = _command(hsub, "compute", "workflow.cli.report:history_compute", "trends and verdicts")
    q.add_argument("nights", nargs="+", type=Path, help="results directories, oldest first")
    q.add_argument("--out", type=Path, required=True, help="tables directory")
    q = _command(hsub, "render", "workflow.cli.report:history_render", "the history report")
    q.add_argument("tables", type=Path, help="tables directory (from compute)")
    q.add_argument("--out", type=Path, required=True, help="HTML file")
    hist = DATA / "history"

    def history_dir(q: argparse.ArgumentParser) -> None:
        q.add_argument(
            "--history-dir", type=Path, default=hist, help="history store (default data/history)"
        )

    def decision_args(q: argparse.ArgumentParser) -> None:
        q.add_argument("--metric", default="rtt_net_p50_us", help="runs-table metric")
        q.add_argument("--k", type=int, default=5, help="baseline: the last k comparable nights")
        q.add_argument(
            "--min-effect", type=float, default=0.05, help="smallest ratio change that matters"
        )

    q = _command(hsub, "list", "workflow.cli.history:list_", "the nights in the history store")
    history_dir(q)
    q = _command(hsub, "show", "workflow.cli.history:show", "a campaign's nights, cell by cell")
    q.add_argument("campaign", help="campaign name (data/history/<campaign>)")
    q.add_argument("--cell", default=None, help="one cell's series (apache-otava's CSV shape)")
    q.add_argument(
        "--otava-csv",
        type=Path,
        default=None,
        help="write --cell's series here, and apache-otava's configuration beside it (.otava.yaml)",
    )
    q.add_argument("--metric", default="rtt_net_p50_us", help="metric of the cell-by-night table")
    history_dir(q)
    q = _command(
        hsub, "import", "workflow.cli.history:import_", "append a results directory (idempotent)"
    )
    q.add_argument("results", type=Path, help="results directory with runs.parquet")
    history_dir(q)
    q = _command(hsub, "decide", "workflow.cli.history:decide", "tonight against the last k nights")
    q.add_argument("campaign", help="campaign name (data/history/<campaign>)")
    q.add_argument("--out", type=Path, required=True, help="decision JSON (confirmed: null)")
    q.add_argument(
        "--upstream",
        type=Path,
        default=None,
        help="the night's upstream check, for publication dates and versions that did not "
        "build (default data/upstream/CAMPAIGN.json when there is one)",
    )
    decision_args(q)
    history_dir(q)
    q = _command(
        hsub,
        "bisect",
        "workflow.cli.bisect:confirmed",
        "bisect every version the night confirmed slower than the release before it (the "
        "releases between them, or with --clone the commits between their tags) into "
        "<history>/<campaign>/bisections/",
    )
    q.add_argument("regressions", type=Path, help="the night's regressions.json (after confirm)")
    q.add_argument("--clone", action="store_true", help="clone the library and bisect commits")
    q.add_argument("--work-dir", type=Path, help="builds and runs (default data/bisect/NIGHT)")
    q.add_argument("--runs", type=positive_int, default=6, help="runs per side at first (6)")
    q.add_argument("--max-runs", type=positive_int, default=24, help="runs per side at most (24)")
    q.add_argument("--alpha", type=float, default=0.05, help="chance of any wrong call (0.05)")
    history_dir(q)
    q = _command(
        hsub, "confirm-plan", "workflow.cli.history:confirm_plan", "campaign re-running suspects"
    )
    q.add_argument("regressions", type=Path, help="decision JSON (from decide)")
    q.add_argument("--campaign-file", default=None, help="the night's campaign (default: named)")
    q.add_argument("--out", type=Path, required=True, help="directory of the campaign file")
    q.add_argument("--prototypes", default="", help="the night's --prototypes, if any")
    q.add_argument("--repetitions", type=int, default=None, help="the night's override, if any")
    q.add_argument("--duration-s", type=float, default=None, help="the night's override, if any")
    q = _command(
        hsub, "confirm", "workflow.cli.history:confirm", "fill in confirmed from the re-run"
    )
    q.add_argument("regressions", type=Path, help="decision JSON (from decide)")
    q.add_argument("--rerun", type=Path, required=True, help="results of the confirming campaign")
    q.add_argument("--out", type=Path, required=True, help="regressions.json")
    history_dir(q)
    q = _command(
        hsub, "site", "workflow.cli.site:site", "the trend site (static, offline) of a campaign"
    )
    q.add_argument("campaign", help="campaign name (data/history/<campaign>)")
    q.add_argument("--out", type=Path, required=True, help="site directory (index.html, site.js)")
    history_dir(q)
    for verb, text in (
        ("push", "append the nights to a data branch of a git repository (idempotent)"),
        ("pull", "restore this machine's history from that branch (never overwrites)"),
    ):
        q = _command(hsub, verb, f"workflow.cli.archive:{verb}", text)
        archive_arguments(q, verb)
        history_dir(q)


def _add_bisect(sub: SubParsers) -> None:
    from workflow.cli import bisect  # its flags live beside its handler

    bisect.arguments(_command(sub, "bisect", "workflow.cli.bisect:bisect", bisect.DESCRIPTION))


class _BenchParser(argparse.ArgumentParser):
    """A bench's parser: its module adds the options (`arguments`) when the parser is first
    used, to parse or to show its help, so building netstick's parser imports no benchmark."""

    def __init__(self, *args: Any, module: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._module = module

    def _load(self) -> None:
        if self._module:
            module, self._module = self._module, ""
            importlib.import_module(module).arguments(self)

    def parse_known_args(self, *args: Any, **kwargs: Any) -> Any:
        self._load()
        return super().parse_known_args(*args, **kwargs)

    def format_help(self) -> str:
        self._load()
        return super().format_help()


def _add_bench(sub: SubParsers) -> None:
    p = _command(sub, "bench", "", "the tool measuring itself: writes data/bench/NAME.json")
    bsub = p.add_subparsers(
        dest="bench_name", required=True, metavar="NAME", parser_class=_BenchParser
    )
    for name, help_text in BENCHES.items():
        module = bench_module(name)
        q = bsub.add_parser(name, help=help_text, description=help_text, module=module)
        q.set_defaults(target=f"{module}:main")


def _add_upstream(sub: SubParsers) -> None:
    p = _command(
        sub, "upstream", "", "the followed libraries upstream: what is new since the last night"
    )
    usub = p.add_subparsers(dest="upstream_cmd", required=True, metavar="VERB")
    q = _command(
        usub,
        "check",
        "workflow.cli.upstream:check",
        "list, per followed library (prototype.yaml's follow), the versions never measured (the "
        "newest first, each resolved to go.sum lines or a commit), what was skipped and why, the "
        "head commit; write the document (default data/upstream/CAMPAIGN.json)",
    )
    q.add_argument("--campaign", default="nightly", help="whose history counts (default nightly)")
    q.add_argument(
        "--history-dir",
        type=Path,
        default=DATA / "history",
        help="history store (default data/history)",
    )
    q.add_argument(
        "--out", type=Path, default=None, help="the document (default data/upstream/CAMPAIGN.json)"
    )
    q.add_argument(
        "--prototype",
        nargs="+",
        action="extend",
        metavar="NAME",
        help="prototypes to check: a directory under prototypes/ or a prototype.yaml (default all)",
    )
    q = _command(
        usub,
        "prepare",
        "workflow.cli.upstream:prepare",
        "generate and build the new Go versions the check found (and the release before each) "
        "and declare them for tonight (versions/upstream.json beside the manifest); a campaign "
        "names them with `upstream` in a transport's versions",
    )
    q.add_argument("--campaign", default="nightly", help="whose check (default nightly)")
    q.add_argument(
        "--upstream",
        type=Path,
        default=None,
        help="the check's document (default data/upstream/CAMPAIGN.json)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="netstick", description="Reproducible benchmarks of game-networking libraries."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_runs(sub)
    _add_contract(sub)
    _add_stats(sub)
    _add_import(sub)
    _add_report(sub)
    _add_bisect(sub)
    _add_bench(sub)
    _add_history(sub)
    _add_upstream(sub)
    return parser


def _resolve(target: str) -> Callable[[argparse.Namespace], int]:
    module, _, name = target.partition(":")
    func: Callable[[argparse.Namespace], int] = getattr(importlib.import_module(module), name)
    return func


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    binary = getattr(args, "binary", "absent")
    if binary is None and getattr(args, "prototype", None) is not None:
        pass  # --prototype without --binary: the executable its manifest names
    elif binary != "absent":
        args.binary = binary or REPO / DEFAULT_BINARY
        if not args.binary.is_file():
            print(
                f"netstick: prototype binary {args.binary} not found; build it with `make build` "
                "or pass --binary",
                file=sys.stderr,
            )
            return 2
    return int(_resolve(args.target)(args))


if __name__ == "__main__":
    sys.exit(main())
