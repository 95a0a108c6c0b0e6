"""The conformance checker (prototypes.contract.conformance, `netstick check-prototype`) on real
prototype processes: the conformant stand-in (support/conformant_stand_in.py) passes every
check, each broken variant of it gets the right violation, fake_prototype.py's own client does
not conform, and the Go reference passes through the CLI."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from prototypes.contract import conformance
from prototypes.contract import manifest as mf
from workflow.cli.main import main as cli_main

from support import conformant_stand_in as conformant
from support.marks import needs_reference_binary
from support.paths import FAKE_MANIFEST, REFERENCE_MANIFEST


def results_by_name(results: list[conformance.CheckResult]) -> dict[str, conformance.CheckResult]:
    return {r.name: r for r in results}


def our_children() -> list[psutil.Process]:
    return [p for p in psutil.Process().children(recursive=True) if p.is_running()]


def test_stand_in_passes_every_check(tmp_path: Path) -> None:
    results = conformance.check_prototype(
        conformant.manifest(), "tcp", work_dir=tmp_path / "work", duration_s=1.5
    )
    failed = [(r.name, r.violations) for r in results if r.status != "pass"]
    assert failed == []
    assert [r.name for r in results] == list(conformance.CHECKS)
    assert our_children() == []
    # two client processes (3 + 2 players) per run, named by their first player
    logs = tmp_path / "work" / "run-idle" / "logs"
    assert sorted(p.name for p in logs.glob("client-*.meta.json")) == [
        "client-0.meta.json",
        "client-3.meta.json",
    ]


@pytest.mark.parametrize(
    ("environment", "only", "check", "expected"),
    [
        (
            {"FAKE_PROTOTYPE_MODE": "chatty"},
            ["ready-line"],
            "ready-line",
            [
                "stdout had 'starting up' before the READY line; nothing may precede it "
                "(diagnostics go to stderr)",
                "server stdout has 2 lines ('starting up' besides READY); the server prints "
                "exactly one line to stdout",
            ],
        ),
        (
            {"FAKE_CONFORMANCE_BREAK": "sigterm-exit-1"},
            ["sigterm-client"],
            "sigterm-client",
            ["client exited with code 1, expected to exit 0 after SIGTERM; stderr: (no output)"],
        ),
        (
            {"FAKE_CONFORMANCE_BREAK": "no-app-probes"},
            ["probes-events"],
            "probes-events",
            [
                "stream: client-0.events.csv has no probes event with kind=app for player(s) "
                "0, 1, 2; one is written per player and kind at exit",
                "stream: client-3.events.csv has no probes event with kind=app for player(s) "
                "3, 4; one is written per player and kind at exit",
            ],
        ),
        (
            {"FAKE_CONFORMANCE_BREAK": "no-world-loaded"},
            ["player-events"],
            "player-events",
            [
                "stream: client-0.events.csv has no world_loaded event for player(s) 0, 1, 2; "
                "every connected player logs one, whatever the workload (world_loaded with "
                "objects=0 for an empty world)",
                "stream: client-3.events.csv has no world_loaded event for player(s) 3, 4; "
                "every connected player logs one, whatever the workload (world_loaded with "
                "objects=0 for an empty world)",
            ],
        ),
        (
            {"FAKE_CONFORMANCE_BREAK": "accept-known-workloads"},
            ["unknown-workload"],
            "unknown-workload",
            [
                "server accepted -workload active (not in the manifest's workloads) and started "
                "(printed 'NETSTICK READY",
                # nothing listens: the client ignoring the workload cannot connect
                "client exited with code 4 for -workload active (not in the manifest's "
                "workloads), expected 2 (bad arguments)",
                "client's stderr does not name 'active' for -workload active",
            ],
        ),
        (
            {"FAKE_CONFORMANCE_BREAK": "duration-zero-exits"},
            ["duration-zero"],
            "duration-zero",
            [
                "client started with -duration 0 exited with code 0 within 1 s of connecting; "
                "-duration 0 means: run until SIGTERM or SIGINT (CONTRACT.md section 1)"
            ],
        ),
        (
            {"FAKE_CONFORMANCE_BREAK": "server-refuses-client-flags"},
            ["other-role-flags"],
            "other-role-flags",
            [
                "server given the client's flags -players 3 -first-player 2 "
                "-connect-timeout-s 5 exited with code 2 before READY; a flag of the other role "
                "is ignored, not an error (CONTRACT.md section 1); stderr: fake: -players is a "
                "client flag"
            ],
        ),
        (
            # One cause, one violation: the checker kills the stuck client, and does not also
            # report the meta.json it had no chance to rewrite.
            {"FAKE_CONFORMANCE_BREAK": "client-ignores-sigterm"},
            ["sigterm-client"],
            "sigterm-client",
            ["client did not exit within 2 s of SIGTERM"],
        ),
    ],
    ids=[
        "prints-before-ready",
        "exits-1-on-sigterm",
        "no-app-probes-event",
        "no-world-loaded",
        "runs-an-unlisted-workload",
        "duration-zero-exits",
        "server-refuses-client-flags",
        "client-ignores-sigterm",
    ],
)
def test_broken_stand_in_gets_the_right_violation(
    tmp_path: Path, environment: dict[str, str], only: list[str], check: str, expected: list[str]
) -> None:
    results = results_by_name(
        conformance.check_prototype(
            conformant.manifest(**environment),
            "tcp",
            only=only,
            quick=True,
            duration_s=1.0,
            work_dir=tmp_path / "work",
        )
    )
    assert results[check].status == "fail"
    violations = list(results[check].violations)
    assert len(violations) == len(expected)
    for got, want in zip(violations, expected, strict=True):
        assert got.startswith(want), (got, want)
    assert our_children() == []


def test_a_client_killed_by_the_checker_is_one_cause_under_one_check(tmp_path: Path) -> None:
    """A client that ignores -duration is killed; run-stream names that, and the checks reading
    a finished client's exit events do not count it again."""
    results = results_by_name(
        conformance.check_prototype(
            conformant.manifest(FAKE_CONFORMANCE_BREAK="client-ignores-duration"),
            "tcp",
            only=["run-stream", "probes-events", "rtt-kinds", "player-events"],
            quick=True,
            duration_s=1.0,
            work_dir=tmp_path / "work",
        )
    )
    assert results["run-stream"].violations == tuple(
        f"{proc} still running 16 s after its start with -duration 1; killed"
        for proc in ("client-0", "client-3")
    )
    for check in ("probes-events", "rtt-kinds", "player-events"):
        assert results[check].status == "skip", results[check]
        assert results[check].summary == "no client of the stream run exited 0 (see run-stream)"
    assert our_children() == []


def test_app_probes_echoed_at_once_are_named(tmp_path: Path) -> None:
    """A prototype that answers app probes in its receive path, not in its next tick."""
    results = results_by_name(
        conformance.check_prototype(
            conformant.manifest(FAKE_CONFORMANCE_BREAK="app-echo-at-once"),
            "tcp",
            only=["run-stream"],
            quick=True,
            duration_s=1.5,
            work_dir=tmp_path / "work",
        )
    )
    violations = results["run-stream"].violations
    assert results["run-stream"].status == "fail"
    assert {v.split(".rtt.csv:")[0] for v in violations} == {
        "check-logs: client-0",
        "check-logs: client-3",
    }
    assert all(
        "app probes were answered between the server's ticks (server.ticks.csv)" in v
        for v in violations
    )
    assert our_children() == []


def test_library_versions_other_than_the_manifest_are_named(tmp_path: Path) -> None:
    man = conformant.manifest()
    doc = dict(man.raw, library_versions={"python": "9.9"})
    doc["executable"] = Path(conformant.__file__).name
    man = mf.parse(doc, FAKE_MANIFEST)
    results = results_by_name(
        conformance.check_prototype(
            man, "tcp", only=["library-versions"], quick=True, duration_s=1.0,
            work_dir=tmp_path / "work",
        )
    )  # fmt: skip
    python = "{}.{}".format(*sys.version_info[:2])
    assert results["library-versions"].violations == tuple(
        f"stream: {proc}.meta.json: library_versions says python {python!r} but the manifest "
        f"{FAKE_MANIFEST} says '9.9': the process ran with another version than declared"
        for proc in ("client-0", "client-3", "server")
    )
    assert our_children() == []


def test_ignoring_bad_arguments_is_reported_for_both_roles(tmp_path: Path) -> None:
    results = results_by_name(
        conformance.check_prototype(
            conformant.manifest(FAKE_CONFORMANCE_BREAK="ignore-bad-args"),
            "tcp",
            only=["bad-flag", "unknown-workload", "bad-param"],
            work_dir=tmp_path / "work",
        )
    )
    bad_flag = results["bad-flag"].violations
    assert bad_flag[0] == (
        "server accepted the unknown flag -netstick-no-such-flag and started (printed "
        f"'NETSTICK READY role=server transport=tcp addr=127.0.0.1:{_port(bad_flag[0])} "
        f"pid={_pid(bad_flag[0])} schema=1')"
    )
    # the client ignores the flag, cannot reach the (absent) server and exits 4 after 1 s
    assert bad_flag[1] == (
        "client exited with code 4 for the unknown flag -netstick-no-such-flag, expected 2 "
        "(bad arguments)"
    )
    assert bad_flag[2].startswith(
        "client's stderr does not name '-netstick-no-such-flag' for the unknown flag"
    )
    assert results["unknown-workload"].status == "fail"
    assert (
        results["unknown-workload"]
        .violations[0]
        .startswith("server accepted -workload netstick-no-such-workload and started")
    )
    assert (
        results["bad-param"]
        .violations[0]
        .startswith("server accepted -workload stream -param size=17 and started")
    )
    assert our_children() == []


def _port(text: str) -> str:
    m = re.search(r"addr=127\.0\.0\.1:([0-9]+)", text)
    return m.group(1) if m else "?"


def _pid(text: str) -> str:
    m = re.search(r"pid=([0-9]+)", text)
    return m.group(1) if m else "?"


def test_unmodified_fake_client_is_not_conformant(tmp_path: Path) -> None:
    """fake_prototype.py's own client: a lost server is a Python traceback, not exit 5."""
    man = mf.load(FAKE_MANIFEST)
    results = results_by_name(
        conformance.check_prototype(
            man,
            "tcp",
            only=["server-lost", "server-stop"],
            work_dir=tmp_path / "work",
            duration_s=1.0,
        )
    )
    assert (
        results["server-stop"]
        .violations[0]
        .startswith("client exited with code 1 after its server stopped on SIGTERM, expected 5")
    )
    (violation, *rest) = results["server-lost"].violations
    assert violation.startswith(
        "client exited with code 1 after its server was killed, expected 5 (connection lost)"
    )
    assert "client-0.meta.json has status 'running' after the process exited" in rest[0]
    assert our_children() == []


@needs_reference_binary
def test_reference_tcp_quick_passes_via_cli(capsys: pytest.CaptureFixture[str]) -> None:
    t0 = time.monotonic()
    code = cli_main(["check-prototype", str(REFERENCE_MANIFEST), "--transport", "tcp", "--quick"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "17 passed, 0 failed, 1 skipped" in out
    assert time.monotonic() - t0 < 20
    assert our_children() == []


def test_stand_in_script_rejects_bad_arguments_directly(tmp_path: Path) -> None:
    """The stand-in itself (sanity check of the test double, without the checker)."""
    proc = subprocess.run(
        [
            sys.executable,
            conformant.__file__,
            "-role",
            "server",
            "-log-dir",
            str(tmp_path),
            "-bogus",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=20,
        check=False,
    )
    assert (proc.returncode, proc.stdout) == (2, "")
    assert "unknown flag -bogus" in proc.stderr


def test_a_skipped_check_is_reported_and_its_scenario_not_run(tmp_path: Path) -> None:
    """--skip server-lost (a library that notices a dead server after minutes): the check is
    listed as skipped on request and nothing of its scenario ran."""
    results = results_by_name(
        conformance.check_prototype(
            conformant.manifest(), "tcp", only=["no-server", "server-lost"],
            skip=["server-lost"], work_dir=tmp_path / "work",
        )
    )  # fmt: skip
    assert results["server-lost"].status == "skip"
    assert results["server-lost"].summary == "skipped on request (--skip)"
    assert results["no-server"].status == "pass"
    assert not (tmp_path / "work" / "server-lost").exists()
    assert our_children() == []
