"""`netstick check-logs`, `check-prototype` and `check-unity`: the contract's checkers."""

from __future__ import annotations

import argparse
import sys

from prototypes.contract.processes import Interrupted, interruptible


def check_logs(args: argparse.Namespace) -> int:
    from prototypes.contract import manifest
    from prototypes.contract.checklogs import check_log_dir

    man = None
    if args.manifest is not None:
        try:
            man = manifest.load(args.manifest)
        except manifest.ManifestError as exc:
            print(f"netstick check-logs: --manifest: {exc}", file=sys.stderr)
            return 2
    violations = check_log_dir(args.dir, max_per_file=args.max_per_file, manifest=man)
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


def check_prototype(args: argparse.Namespace) -> int:
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
    skip = [c.strip() for c in args.skip.split(",") if c.strip()]
    unknown_checks = sorted(set(skip) - set(conformance.CHECKS))
    if unknown_checks:
        print(
            f"netstick check-prototype: --skip {','.join(unknown_checks)}: expected checks from "
            f"{', '.join(conformance.CHECKS)}",
            file=sys.stderr,
        )
        return 2
    all_passed = True
    for transport in names or man.transport_names:
        work_dir = args.work_dir / transport if args.work_dir else None
        try:
            # Another version's build, and what is true of it (server_lost_s, message limits).
            checked = man.for_version(transport, args.library_version)
        except (manifest.ManifestError, ValueError) as exc:
            print(f"netstick check-prototype: --library-version: {exc}", file=sys.stderr)
            return 2
        try:
            # SIGTERM unwinds like SIGINT: the checker's cleanup stops the servers and players
            # it started instead of leaving them to init.
            with interruptible():
                results = conformance.check_prototype(
                    checked, transport, quick=args.quick, work_dir=work_dir, skip=skip
                )
        except conformance.ConformanceError as exc:
            print(f"netstick check-prototype: {exc}", file=sys.stderr)
            return 2
        except Interrupted as stop:
            print(f"netstick check-prototype: stopped by {stop}", file=sys.stderr)
            return 128 + stop.signum
        print(conformance.format_table(checked, transport, results) + "\n", flush=True)
        all_passed = all_passed and all(r.passed for r in results)
    return 0 if all_passed else 1


def check_unity(args: argparse.Namespace) -> int:
    from prototypes.contract import unity

    if not args.path.is_dir():
        print(f"netstick check-unity: {args.path}: expected a directory", file=sys.stderr)
        return 2
    report = unity.check_tree(args.path)
    for v in report.violations:
        print(v)
    counted = (
        f"{report.cs_files} C# file(s), {report.package_files} package file(s), "
        f"{len(report.project_versions)} ProjectVersion.txt"
    )
    if report.violations:
        print(f"{len(report.violations)} problem(s) in {args.path} ({counted})", file=sys.stderr)
        return 1
    print(f"{args.path}: {counted}: parsed, pinned and consistent")
    return 0
