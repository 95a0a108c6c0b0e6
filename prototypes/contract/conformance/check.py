"""check_prototype: run the scenarios a set of checks needs, and the plain-text report."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Collection
from pathlib import Path

from prototypes.contract.conformance.scenarios import (
    RUN_CHECKS,
    scenario_bad_args,
    scenario_no_server,
    scenario_other_role_flags,
    scenario_run,
    scenario_server_lost,
    scenario_server_stop,
    scenario_sigterm_client,
)
from prototypes.contract.conformance.session import (
    CHECKS,
    QUICK_DURATION_S,
    RUN_DURATION_S,
    SCENARIO_OF,
    SCENARIOS,
    CheckResult,
    ConformanceError,
    Session,
)
from prototypes.contract.manifest import (
    Manifest,
)

# -- entry point ------------------------------------------------------------------------------


def check_prototype(
    man: Manifest,
    transport: str,
    *,
    quick: bool = False,
    work_dir: Path | None = None,
    only: Collection[str] | None = None,
    duration_s: float | None = None,
    skip: Collection[str] = (),
) -> list[CheckResult]:
    """Run the checks against one transport of a prototype; one result per check in CHECKS.

    quick: one short run (stream, 2 s) instead of stream and idle for 3 s each. work_dir: where
    the logs go (a temporary directory, removed afterwards, when None). only: names of checks to
    run (the scenarios they need run; other checks they feed are reported too). skip: checks
    reported as skipped (a scenario only they need is not run).
    """
    man.transport(transport)  # raises for an unknown transport
    if problem := missing_executables(man):
        raise ConformanceError(problem)
    unknown = sorted(set(only or ()) - set(CHECKS))
    if unknown:
        raise ConformanceError(
            f"unknown check(s) {', '.join(unknown)}; expected {', '.join(CHECKS)}"
        )
    wanted = list(CHECKS) if only is None else [c for c in CHECKS if c in only]
    # A skipped check's scenario still runs when another wanted check needs it.
    needed = [c for c in wanted if c not in skip]
    scenarios = [sc for sc in SCENARIOS if any(SCENARIO_OF[c] == sc for c in needed)]
    workloads = [w for w in ("stream", "idle") if w in man.workloads]
    if quick:
        workloads = workloads[:1]
    if not workloads:
        workloads = [man.workloads[0]]
    duration = (
        duration_s if duration_s is not None else (QUICK_DURATION_S if quick else RUN_DURATION_S)
    )

    own_dir = work_dir is None
    root = Path(tempfile.mkdtemp(prefix="netstick-conformance-")) if own_dir else Path(work_dir)
    root.mkdir(parents=True, exist_ok=True)
    s = Session(man, transport, root, duration)
    try:
        for scenario in scenarios:
            if scenario == "run":
                for w in workloads:
                    if f"run-{w}" in wanted or any(c in wanted for c in RUN_CHECKS):
                        scenario_run(s, w)
            elif scenario == "sigterm-client":
                scenario_sigterm_client(s)
            elif scenario == "server-stop":
                scenario_server_stop(s)
            elif scenario == "server-lost":
                scenario_server_lost(s)
            elif scenario == "bad-args":
                scenario_bad_args(s)
            elif scenario == "no-server":
                scenario_no_server(s)
            elif scenario == "other-role-flags":
                scenario_other_role_flags(s)
    finally:
        s.kill_all()
        if own_dir:
            shutil.rmtree(root, ignore_errors=True)
    for w in ("stream", "idle"):
        if w not in workloads:
            s.skip(f"run-{w}", "quick mode runs one workload" if w in man.workloads
                   else f"the manifest does not list the {w} workload")  # fmt: skip
    for c in skip:
        s.ran.discard(c)
        s.violations.pop(c, None)
        s.skips[c] = "skipped on request (--skip)"
    return [_result(s, c) for c in wanted]


def missing_executables(man: Manifest) -> str | None:
    """What is missing of the programs the checks start (the server's, and the clients' where
    the manifest names client_executable), and how to get it: the build command, or for a
    prototype built elsewhere (build.external) who builds it and the command that fetches it."""
    keys = {man.program("client"): "client_executable", man.executable: "executable"}
    missing = [
        f"{path} ({man.path}: {keys[path]})" for path in man.executables if not path.is_file()
    ]
    if not missing:
        return None
    if man.build_external:
        fetch = (
            f"fetch them with `{' '.join(man.build_fetch)}` (run in {man.directory})"
            if man.build_fetch
            else "the manifest names no build.fetch command: copy them there by hand"
        )
        how = f"they are built elsewhere ({' '.join(man.build_external.split())}); {fetch}"
    elif man.build_command:
        how = f"build it with `{' '.join(man.build_command)}` in {man.directory}"
    else:
        how = "the manifest has no build command"
    return f"missing: {'; '.join(missing)}; {how}"


def _result(s: Session, check: str) -> CheckResult:
    if s.violations.get(check):
        v = tuple(s.violations[check])
        return CheckResult(check, "fail", f"{len(v)} violation(s)", v)
    if check in s.ran:
        return CheckResult(check, "pass", (s.notes.get(check) or [CHECKS[check]])[0])
    return CheckResult(check, "skip", s.skips.get(check, "not run"))


def format_table(man: Manifest, transport: str, results: list[CheckResult]) -> str:
    """Plain-text report: one row per check, each violation on its own line below a failure."""
    width = max(len(r.name) for r in results) if results else 10
    rows = [f"{man.name} / {transport}  ({man.path})", f"{'check':<{width}}  result  details"]
    for r in results:
        status = r.status.upper() if r.status == "fail" else r.status
        rows.append(f"{r.name:<{width}}  {status:<6}  {r.summary}")
        rows += [f"{'':<{width}}    - {v}" for v in r.violations]
    failed = sum(r.status == "fail" for r in results)
    passed = sum(r.status == "pass" for r in results)
    skipped = sum(r.status == "skip" for r in results)
    rows.append(f"{passed} passed, {failed} failed, {skipped} skipped")
    return "\n".join(rows)
