"""`netstick run-cell`, `netstick demo` and the benchmarks that run cells (`netstick bench
prototypes|harness|campaign`)."""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path

from workflow.files import REPO, repo_relative


def run_cell(args: argparse.Namespace) -> int:
    from prototypes.contract import manifest
    from workflow.campaign import layout
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
        manifest.check_cell(man, doc)
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


def _check_transports(names: list[str], prototype: Path | None = None) -> str | None:
    from prototypes.contract import manifest

    known = manifest.load(
        prototype or REPO / "prototypes" / "reference" / "prototype.yaml"
    ).transport_names
    unknown = [t for t in names if t not in known]
    if unknown:
        return (
            f"--transports: unknown transport(s) {', '.join(unknown)}; expected a "
            f"comma-separated list from {','.join(known)}"
        )
    return None


def demo(args: argparse.Namespace) -> int:
    from workflow.cli.bench import demo as demos

    problem = _check_transports(args.transports)
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


def bench_prototypes(args: argparse.Namespace) -> int:
    from prototypes.contract import manifest
    from workflow.cli.bench import prototypes

    try:
        man = manifest.load(args.prototype or prototypes.REFERENCE_MANIFEST)
    except manifest.ManifestError as exc:
        print(f"netstick bench prototypes: --prototype: {repo_relative(str(exc))}", file=sys.stderr)
        return 2
    if args.binary is None and not man.executable.is_file():
        build = " ".join(man.build_command or ()) or "its build"
        print(
            f"netstick bench prototypes: {repo_relative(str(man.executable))} not found; "
            f"build it with `{build}` in {repo_relative(str(man.directory))}",
            file=sys.stderr,
        )
        return 2
    transports = args.transports or list(man.transport_names)
    problem = _check_transports(transports, man.path)
    if problem:
        print(f"netstick bench prototypes: {problem}", file=sys.stderr)
        return 2
    out = args.out or prototypes.out_path(man)
    doc = prototypes.run(
        out,
        args.raw_dir,
        prototype=man.path,
        transports=transports,
        players=args.players,
        duration_s=args.duration_s,
        repetitions=args.repetitions,
        pin=not args.no_pin,
        binary=args.binary,
    )
    print(prototypes.target_summary(doc))
    failed = sum(not r["ok"] for r in doc["records"])
    print(f"{len(doc['records'])} cells, {failed} failed; results in {out}")
    return 0


def bench_harness(args: argparse.Namespace) -> int:
    from workflow.cli.bench import harness

    doc = harness.run(args.out, args.raw_dir, REPO, args.repetitions)
    print(harness.summary(doc))
    print(f"results in {args.out}")
    return 0


def bench_campaign(args: argparse.Namespace) -> int:
    from workflow.cli.bench import campaign, harness

    doc = campaign.run(args.out, REPO)
    print(harness.summary(doc))
    print(f"results in {args.out}")
    return 0


def bench_faults(args: argparse.Namespace) -> int:
    from workflow.cli.bench import faults, record

    doc = faults.run(args.out, REPO)
    print(record.targets_text(doc["targets"]))
    print(f"results in {args.out}")
    return 0


def bench_nightly(args: argparse.Namespace) -> int:
    from workflow.cli.bench import nightly, record

    doc = nightly.run(args.out, REPO)
    for r in doc["version_comparisons"]:
        print(
            f"{r['a']} -> {r['b']} {r['metric']}: {r['ratio_b_over_a']:.3f} "
            f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}] {r['verdict']}"
        )
    print(record.targets_text(doc["targets"]))
    print(f"results in {args.out}")
    return 0


def bench_versions(args: argparse.Namespace) -> int:
    from workflow.cli.bench import versions

    doc = versions.run(args.out, REPO)
    for r in doc["comparisons"]:
        print(
            f"{r['a']} -> {r['b']} {r['metric']}: {r['ratio_b_over_a']:.3f} "
            f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}] {r['verdict']}"
        )
    print(f"results in {args.out}")
    return 0


def bench_show(args: argparse.Namespace) -> int:
    from workflow.cli.bench import record
    from workflow.files import read_json

    doc = read_json(args.file)
    if doc is None:
        print(f"netstick bench show: {args.file}: missing or not a JSON object", file=sys.stderr)
        return 2
    print(record.markdown(doc))
    return 0
