"""A Go library with a known history, for the bisection's tests: a module in a real git
repository with 16 commits, one of which makes its one function slower by a given percentage,
and a main package (its own module, requiring the library through a `replace`) that calls the
library in a fixed, bounded loop.

The slowdown is extra CPU work per call: Mix runs `rounds` rounds of a 64-bit LCG and xorshift,
each round dependent on the last (nothing to vectorise or elide), and from the planted commit on
`rounds * per_mille / 1000` rounds more. Later commits change only an unrelated constant
(Revision), so every commit from the planted one on keeps the slowdown, and commits are dated an
hour apart (their pseudo-versions are in order).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

LIBRARY = "example.com/netstick/fixturelib"
MAIN_MODULE = "example.com/netstick/fixturemain"
MAIN_PACKAGE = "./cmd/loop"
COMMITS = 16
# Rounds per call of Mix; the main package's argument is the number of calls. About 1.3 ns a
# round here: 1500 calls take about 0.2 s of CPU.
ROUNDS_PER_CALL = 100_000
CALLS = 1500
# 2025-01-01T00:00:00Z, the first commit's date; each next commit an hour later.
EPOCH_S = 1_735_689_600

LIB_SOURCE = """\
// Package fixturelib is a library with a history: one of its commits made Mix slower.
package fixturelib

// Revision is the commit's number: every commit changes it, and nothing Mix does.
const Revision = {revision}

// extraPerMille is the planted slowdown: Mix runs this many more rounds per thousand.
const extraPerMille = {per_mille}

// Mix scrambles x with rounds rounds of a 64-bit LCG and an xorshift, each round depending on
// the one before: a fixed amount of CPU work per round.
func Mix(x uint64, rounds int) uint64 {{
\tn := rounds + rounds*extraPerMille/1000
\tfor i := 0; i < n; i++ {{
\t\tx = x*6364136223846793005 + 1442695040888963407
\t\tx ^= x >> 29
\t}}
\treturn x
}}
"""

MAIN_SOURCE = f"""\
// Command loop calls fixturelib.Mix a fixed number of times (its argument, default {CALLS}) and
// prints the result, so that nothing of the work can be left out.
package main

import (
\t"fmt"
\t"os"
\t"strconv"

\t"{LIBRARY}"
)

func main() {{
\tcalls := {CALLS}
\tif len(os.Args) > 1 {{
\t\tn, err := strconv.Atoi(os.Args[1])
\t\tif err != nil || n < 1 {{
\t\t\tfmt.Fprintf(os.Stderr, "loop: calls %q: expected an integer >= 1\\n", os.Args[1])
\t\t\tos.Exit(2)
\t\t}}
\t\tcalls = n
\t}}
\tx := uint64(1)
\tfor i := 0; i < calls; i++ {{
\t\tx = fixturelib.Mix(x, {ROUNDS_PER_CALL})
\t}}
\tfmt.Println(x)
}}
"""


@dataclass(frozen=True, slots=True)
class FixtureLibrary:
    """The fixture's places and history."""

    repo: Path  # the library's git repository (its work tree at the newest commit)
    main_dir: Path  # the main module
    commits: tuple[str, ...]  # full SHAs, oldest first
    planted: str | None  # the commit that made Mix slower; None without a slowdown
    library: str = LIBRARY
    main: str = MAIN_PACKAGE


def _git(repo: Path, *args: str, when_s: int | None = None) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Fixture",
        "GIT_AUTHOR_EMAIL": "fixture@netstick.invalid",
        "GIT_COMMITTER_NAME": "Fixture",
        "GIT_COMMITTER_EMAIL": "fixture@netstick.invalid",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    if when_s is not None:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = f"@{when_s} +0000"
    res = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, check=True
    )
    return res.stdout.strip()


def make_fixture(
    root: Path, *, slowdown_percent: float, planted_at: int = 9, commits: int = COMMITS
) -> FixtureLibrary:
    """The library's repository under root/fixturelib and the main module under
    root/fixturemain; commit planted_at (0-based) adds slowdown_percent of extra work per
    call (0: no slowdown anywhere)."""
    if not 0 < planted_at < commits:
        raise ValueError(f"planted_at {planted_at}: expected 1..{commits - 1}")
    per_mille = round(slowdown_percent * 10)
    repo = root / "fixturelib"
    repo.mkdir(parents=True)
    _git(repo, "init", "--quiet", "--initial-branch=main")
    (repo / "go.mod").write_text(f"module {LIBRARY}\n\ngo 1.22\n", encoding="utf-8")
    shas = []
    for i in range(commits):
        extra = per_mille if per_mille and i >= planted_at else 0
        (repo / "mix.go").write_text(
            LIB_SOURCE.format(revision=i, per_mille=extra), encoding="utf-8"
        )
        _git(repo, "add", "go.mod", "mix.go")
        what = "Mix does more work" if extra and i == planted_at else "revision"
        _git(repo, "commit", "--quiet", "-m", f"{what} {i}", when_s=EPOCH_S + 3600 * i)
        shas.append(_git(repo, "rev-parse", "HEAD"))
    main_dir = root / "fixturemain"
    (main_dir / "cmd" / "loop").mkdir(parents=True)
    (main_dir / "go.mod").write_text(
        f"module {MAIN_MODULE}\n\ngo 1.22\n\nrequire {LIBRARY} v0.0.0\n\n"
        f"replace {LIBRARY} => ../fixturelib\n",
        encoding="utf-8",
    )
    (main_dir / "cmd" / "loop" / "main.go").write_text(MAIN_SOURCE, encoding="utf-8")
    planted = shas[planted_at] if per_mille else None
    return FixtureLibrary(repo, main_dir, tuple(shas), planted)


def go_env() -> dict[str, str]:
    """The environment of the fixture's Go builds: no network (GOPROXY=off; the library comes
    through `replace`), the local toolchain, modules resolved as needed."""
    return {**os.environ, "GOPROXY": "off", "GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local"}
