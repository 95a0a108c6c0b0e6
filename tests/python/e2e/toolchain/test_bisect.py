"""`netstick bisect` on the fixture library (support/fixture_library.py): a Go module in a real git
repository with 16 commits, one of which makes it slower, built with the real Go toolchain (no
network: the library comes through `replace` of a git worktree, GOPROXY=off) and measured by the
CPU time of a bounded loop, A and B interleaved.

A 20 % slowdown is found at the commit that planted it; a 3 % one is found there or left
inconclusive, never put elsewhere; no slowdown stops at the endpoints, "no regression"."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

from support.fixture_library import FixtureLibrary, go_env, make_fixture
from support.marks import needs_go
from support.paths import NETSTICK

PLANTED_AT = 9


def bisect(fixture: FixtureLibrary, tmp_path: Path, runs: int, max_runs: int) -> dict[str, Any]:
    out = tmp_path / "bisection.json"
    argv = [
        str(NETSTICK), "bisect", "--module-dir", str(fixture.main_dir), "--main", fixture.main,
        "--library", fixture.library, "--repo", str(fixture.repo),
        "--good", fixture.commits[0], "--bad", fixture.commits[-1],
        "--runs", str(runs), "--max-runs", str(max_runs),
        "--work-dir", str(tmp_path / "work"), "--out", str(out),
    ]  # fmt: skip
    t0 = time.monotonic()
    res = subprocess.run(argv, capture_output=True, text=True, env=go_env(), timeout=240)
    assert res.returncode == 0, res.stderr
    doc: dict[str, Any] = json.loads(out.read_text())
    steps = [(s["candidate"][:7], s["decision"], s["runs_per_side"]) for s in doc["steps"]]
    print(f"{doc['status']} in {time.monotonic() - t0:.1f} s: {doc['bound']}; steps {steps}")
    # Nothing is left in the library's repository: every worktree was removed after its build.
    trees = subprocess.run(
        ["git", "-C", str(fixture.repo), "worktree", "list", "--porcelain"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert trees.count("worktree ") == 1, trees
    return doc


def never_misplaced(doc: dict[str, Any], fixture: FixtureLibrary) -> None:
    """Every call agrees with the history: nothing before the planted commit is bad, nothing
    from it on is good."""
    planted = fixture.commits.index(fixture.planted) if fixture.planted else len(fixture.commits)
    for step in doc["steps"]:
        i = fixture.commits.index(step["candidate"])
        assert step["decision"] != "bad" or i >= planted, step
        assert step["decision"] != "good" or i < planted, step


@needs_go
def test_a_20_percent_slowdown_is_found_at_its_commit(tmp_path: Path) -> None:
    fixture = make_fixture(tmp_path / "lib", slowdown_percent=20, planted_at=PLANTED_AT)
    doc = bisect(fixture, tmp_path, runs=6, max_runs=12)
    assert doc["status"] == "found", doc["bound"]
    assert doc["first_bad"] == fixture.planted
    assert doc["last_good"] == fixture.commits[PLANTED_AT - 1]
    assert doc["candidates"] == list(fixture.commits) and doc["schema"] == 1
    assert 1.1 < doc["endpoint_ratio"] < 1.3
    never_misplaced(doc, fixture)
    # The endpoint check and four halvings of 15 gaps, each decided.
    assert len([s for s in doc["steps"] if s["decision"] != "undecided"]) == 5
    # The executable built for the planted commit says which commit it was built from.
    exe = tmp_path / "work" / "builds" / fixture.planted / "loop"
    info = subprocess.run(
        ["go", "version", "-m", str(exe)], capture_output=True, text=True, check=True
    ).stdout
    assert f"{fixture.library}\tv0.0.0-20250101090000-{fixture.planted[:12]}" in info


@needs_go
def test_a_3_percent_slowdown_is_found_or_inconclusive_never_a_wrong_commit(
    tmp_path: Path,
) -> None:
    fixture = make_fixture(tmp_path / "lib", slowdown_percent=3, planted_at=PLANTED_AT)
    doc = bisect(fixture, tmp_path, runs=6, max_runs=12)
    assert doc["first_bad"] in (None, fixture.planted)
    never_misplaced(doc, fixture)
    if doc["status"] == "found":
        assert doc["last_good"] == fixture.commits[PLANTED_AT - 1]
    else:
        assert doc["status"] == "inconclusive" and doc["bound"]
        assert doc["last_good"] is None
        # The range it names holds the planted commit (or it stopped at the endpoints).
        assert doc["remaining"] is None or fixture.planted in doc["remaining"]


@needs_go
def test_no_slowdown_is_inconclusive_no_regression(tmp_path: Path) -> None:
    fixture = make_fixture(tmp_path / "lib", slowdown_percent=0)
    doc = bisect(fixture, tmp_path, runs=6, max_runs=12)
    assert doc["status"] == "inconclusive"
    assert doc["first_bad"] is None and doc["remaining"] is None
    assert doc["bound"].startswith("no regression between the endpoints")
    # Only the endpoints were built and compared.
    assert {s["candidate"] for s in doc["steps"]} == {fixture.commits[-1]}
    assert len(list((tmp_path / "work" / "builds").iterdir())) == 2
