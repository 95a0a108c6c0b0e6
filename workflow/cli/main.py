"""The `netstick` command."""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from collections.abc import Sequence
from pathlib import Path

from prototypes.contract.checklogs import DEFAULT_MAX_PER_FILE, check_log_dir
from workflow.cli import campaign as campaign_cli
from workflow.cli import stats as stats_cli
from workflow.cli.bench import demo
from workflow.cli.bench import prototypes as bench
from workflow.files import REPO


def repo_root() -> Path:
    """The checkout this package runs from (editable install)."""
    return REPO


DEFAULT_BINARY = Path("prototypes/reference/bin/netstick-ref")


def _binary(path: Path | None) -> Path:
    return path if path is not None else repo_root() / DEFAULT_BINARY


def _transports(text: str) -> list[str]:
    names = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [t for t in names if t not in bench.TRANSPORTS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown transport(s) {', '.join(unknown) or '(none given)'}; "
            f"expected a comma-separated list from {','.join(bench.TRANSPORTS)}"
        )
    return names


def _player_counts(text: str) -> list[int]:
    try:
        counts = [int(p) for p in text.split(",") if p.strip()]
    except ValueError:
        counts = []
    if not counts or any(c < 1 for c in counts):
        raise argparse.ArgumentTypeError(f"expected player counts >= 1 like 50,200; got {text!r}")
    return counts


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return int(text)


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, got {text!r}")
    return value


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds >= 0, got {text!r}")
    return value


def _cmd_check_logs(args: argparse.Namespace) -> int:
    violations = check_log_dir(args.dir, max_per_file=args.max_per_file)
    for v in violations:
        print(v)
    if violations:
        print(
            f"{len(violations)} violation(s) of prototypes/CONTRACT.md in {args.dir}",
            file=sys.stderr,
        )
        return 1
    print(f"{args.dir}: conforms to prototypes/CONTRACT.md (log schema 1)")
    return 0


def _cmd_check_prototype(args: argparse.Namespace) -> int:
    from prototypes.contract import conformance, manifest

    try:
        man = manifest.load(args.manifest)
    except manifest.ManifestError as exc:
        print(f"netstick check-prototype: {exc}", file=sys.stderr)
        return 2
    names = [t.strip() for t in (args.transport or "").split(",") if t.strip()]
    unknown = [t for t in names if t not in man.transport_names]
    if unknown:
        print(
            f"netstick check-prototype: --transport {','.join(unknown)}: expected names from "
            f"{man.path} (transports: {','.join(man.transport_names)})",
            file=sys.stderr,
        )
        return 2
    all_passed = True
    for transport in names or man.transport_names:
        work_dir = args.work_dir / transport if args.work_dir else None
        try:
            results = conformance.check_prototype(
                man, transport, quick=args.quick, work_dir=work_dir
            )
        except conformance.ConformanceError as exc:
            print(f"netstick check-prototype: {exc}", file=sys.stderr)
            return 2
        print(conformance.format_table(man, transport, results) + "\n", flush=True)
        all_passed = all_passed and all(r.passed for r in results)
    return 0 if all_passed else 1


def _cmd_demo(args: argparse.Namespace) -> int:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    out_dir = args.out_dir or repo_root() / "data" / "demo" / stamp
    text, all_ok = demo.run_demo(
        _binary(args.binary),
        out_dir,
        args.transports,
        players=args.players,
        duration_s=args.duration_s,
        warmup_s=args.warmup_s,
        pin=args.pin,
    )
    print(text)
    return 0 if all_ok else 1


def _cmd_bench(args: argparse.Namespace) -> int:
    root = repo_root()
    out = args.out or root / "data" / "bench" / "prototypes.json"
    raw_dir = args.raw_dir or root / "data" / "raw" / "bench-prototypes"
    doc = bench.run_bench(
        _binary(args.binary),
        out,
        raw_dir,
        root,
        transports=args.transports,
        players=args.players,
        duration_s=args.duration_s,
        warmup_s=args.warmup_s,
        pin=not args.no_pin,
        repetitions=args.repetitions,
    )
    print(bench.target_summary(doc))
    failed = sum(not r["ok"] for r in doc["records"])
    print(f"{len(doc['records'])} cells, {failed} failed; results in {out}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="netstick",
        description="Reproducible benchmarks of game-networking libraries.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("check-logs", help="check a log directory against prototypes/CONTRACT.md")
    p.add_argument("dir", type=Path, metavar="DIR")
    p.add_argument(
        "--max-per-file",
        type=int,
        default=DEFAULT_MAX_PER_FILE,
        help="show at most this many violations per file (default %(default)s)",
    )
    p.set_defaults(func=_cmd_check_logs)

    p = sub.add_parser(
        "check-prototype",
        help="run a prototype from its manifest and report every violation of the contract",
    )
    p.add_argument(
        "manifest", type=Path, metavar="MANIFEST", help="prototypes/<name>/prototype.yaml"
    )
    p.add_argument(
        "--transport", help="comma-separated transports (default: all the manifest lists)"
    )
    p.add_argument("--quick", action="store_true", help="one 2 s stream run instead of stream+idle")
    p.add_argument("--work-dir", type=Path, help="keep the logs here (default: a removed temp dir)")
    p.set_defaults(func=_cmd_check_prototype)

    all_transports = ",".join(bench.TRANSPORTS)
    p = sub.add_parser("demo", help="a quick table of every transport on loopback")
    p.add_argument(
        "--transports",
        type=_transports,
        default=list(bench.TRANSPORTS),
        help=f"comma-separated (default {all_transports})",
    )
    p.add_argument(
        "--players",
        type=_positive_int,
        default=demo.DEMO_PLAYERS,
        help=f"players of the one client process (default {demo.DEMO_PLAYERS})",
    )
    p.add_argument("--duration-s", type=_positive_float, default=demo.DEMO_DURATION_S)
    p.add_argument("--warmup-s", type=_non_negative_float, default=demo.DEMO_WARMUP_S)
    p.add_argument("--binary", type=Path, help=f"prototype binary (default {DEFAULT_BINARY})")
    p.add_argument("--out-dir", type=Path, help="where logs go (default data/demo/<time>)")
    p.add_argument("--pin", action="store_true", help="pin the server to CPU 0, client to CPU 1")
    p.set_defaults(func=_cmd_demo)

    p = sub.add_parser(
        "bench-prototypes", help="every transport at 50 and 200 players, against the targets"
    )
    p.add_argument(
        "--transports",
        type=_transports,
        default=list(bench.TRANSPORTS),
        help=f"comma-separated (default {all_transports})",
    )
    p.add_argument(
        "--players",
        type=_player_counts,
        default=list(bench.BENCH_PLAYERS),
        help="comma-separated player counts (default 50,200)",
    )
    p.add_argument(
        "--duration-s",
        type=_positive_float,
        default=bench.BENCH_DURATION_S,
        help="seconds after all players connected (default %(default)s)",
    )
    p.add_argument(
        "--warmup-s",
        type=_non_negative_float,
        default=bench.BENCH_WARMUP_S,
        help="seconds excluded at the start (default %(default)s)",
    )
    p.add_argument("--out", type=Path, help="result JSON (default data/bench/prototypes.json)")
    p.add_argument(
        "--raw-dir", type=Path, help="logs of each cell (default data/raw/bench-prototypes)"
    )
    p.add_argument("--binary", type=Path, help=f"prototype binary (default {DEFAULT_BINARY})")
    p.add_argument("--no-pin", action="store_true", help="do not pin server/client to CPUs 0/1")
    p.add_argument(
        "--repetitions",
        type=_positive_int,
        default=3,
        help="runs per cell; the record holds their medians (default %(default)s)",
    )
    p.set_defaults(func=_cmd_bench)

    p = sub.add_parser(
        "bench-harness", help="the harness's own costs: overhead, monitors, emulator"
    )
    p.add_argument("--out", type=Path, default=Path("data/bench/harness.json"))
    p.add_argument("--raw-dir", type=Path, default=Path("data/raw/bench-harness"))
    p.add_argument("--repetitions", type=int, default=3)
    p.set_defaults(func=_cmd_bench_harness)

    p = sub.add_parser(
        "bench-campaign",
        help="benchmark the workflow: the quick campaign's time outside windows, dry runs",
    )
    p.add_argument("--out", type=Path, default=Path("data/bench/campaign.json"))
    p.set_defaults(func=_cmd_bench_campaign)

    p = sub.add_parser(
        "run-cell", help="run one repetition of one cell: sandbox, server, players, monitors"
    )
    p.add_argument("cell", type=Path, metavar="CELL.json", help="cell document (cell.schema.json)")
    p.add_argument("--out", type=Path, required=True, help="the run's directory (created)")
    p.set_defaults(func=_cmd_run_cell)
    campaign_cli.add_parser(sub)
    stats_cli.add_parsers(sub)
    return parser


def _cmd_bench_harness(args: argparse.Namespace) -> int:
    from workflow.cli.bench import harness as bench_harness
    from workflow.harness import run as harness

    doc = bench_harness.run(args.out, args.raw_dir, harness.REPO, args.repetitions)
    print(bench_harness.summary(doc))
    print(f"results in {args.out}")
    return 0


def _cmd_bench_campaign(args: argparse.Namespace) -> int:
    from workflow.cli.bench import campaign as bench_campaign
    from workflow.cli.bench import harness as bench_harness
    from workflow.harness import run as harness

    doc = bench_campaign.run(args.out, harness.REPO)
    print(bench_harness.summary(doc))
    print(f"results in {args.out}")
    return 0


def _cmd_run_cell(args: argparse.Namespace) -> int:
    from workflow.harness import cell as cells
    from workflow.harness import run as harness

    try:
        doc = cells.load(args.cell)
    except cells.CellError as exc:
        print(f"netstick run-cell: {exc}", file=sys.stderr)
        return 2
    outcome = harness.run_cell(doc, args.out)
    if outcome.status == "ok":
        print(f"ok: {outcome.path}")
        return 0
    print(
        f"failed ({outcome.reason}): {outcome.detail}\nrecord kept in {outcome.path}",
        file=sys.stderr,
    )
    if outcome.interrupted_by is not None:
        return 128 + outcome.interrupted_by
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if hasattr(args, "binary"):
        binary = _binary(args.binary)
        if not binary.is_file():
            print(
                f"netstick: prototype binary {binary} not found; build it with "
                "`cd prototypes/reference && go build -o bin/netstick-ref ./cmd/netstick-ref` "
                "or pass --binary",
                file=sys.stderr,
            )
            return 2
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
