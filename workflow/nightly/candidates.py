"""The candidates of a bisection and their builds: the commits or released versions of a Go
library between a last good and a first bad, and a main package of a Go module built against
the library at each of them.

- Commits of a local git repository: `git rev-list --reverse --first-parent good..bad`, good
  first. One is built with `replace library => <a git worktree at that commit>` in a copy of the
  main module's go.mod, and required at the Go pseudo-version that names the commit, so the
  executable's build info (and the reference prototype's library_versions) says which commit it
  runs, not the version the module file required before.
- Released versions: those the Go module proxy lists (`go list -m -versions`, semver-ordered)
  from good to bad. One is built from a module file with exactly that requirement, tidied
  (workflow.harness.builds.go_module_file, which `make versions` uses too).

Every go command runs with GOFLAGS=-mod=mod and GOTOOLCHAIN=local (like `make versions`); GOPROXY
and the rest come from the environment (tests set GOPROXY=off or a file:// proxy: no network).
"""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from prototypes.contract.follow import version_key
from prototypes.contract.library_builds import VersionBuildError
from workflow.harness.builds import go_module_file
from workflow.nightly.bisect import CandidateFailed

GO_ENV: Final = {"GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local"}
BUILD_TIMEOUT_S: Final = 900.0
# The release tag a pseudo-version counts from (vX.Y.Z without pre-release or build suffix).
RELEASE_TAG: Final = re.compile(r"^v(\d+)\.(\d+)\.(\d+)$")
MAJOR_SUFFIX: Final = re.compile(r"/v(\d+)$")


class CandidatesError(ValueError):
    """The candidates cannot be listed: what was asked, what was found, what was expected."""


def _run(argv: Sequence[str], cwd: Path, env: Mapping[str, str] | None = None) -> str:
    try:
        res = subprocess.run(
            list(argv), cwd=cwd, capture_output=True, text=True, check=False,
            env=None if env is None else {**os.environ, **env}, timeout=BUILD_TIMEOUT_S,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise CandidatesError(
            f"{' '.join(argv)} (in {cwd}) did not finish in {BUILD_TIMEOUT_S:g} s"
        ) from None
    if res.returncode != 0:
        raise CandidatesError(
            f"{' '.join(argv)} (in {cwd}) failed: {(res.stderr or res.stdout).strip()[-2000:]}"
        )
    return res.stdout


def _git(repo: Path, *args: str) -> str:
    return _run(["git", "-C", str(repo), *args], repo).strip()


def commits_between(repo: Path, good: str, bad: str) -> list[str]:
    """Full SHAs oldest first: good, then every commit of bad's first-parent chain after good
    up to bad. good must lie on that chain (a merge's side branch has no place in the order)."""
    shas = []
    for flag, rev in (("--good", good), ("--bad", bad)):
        try:
            shas.append(_git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"))
        except CandidatesError:
            raise CandidatesError(
                f"{flag} {rev}: not a commit of the git repository {repo}"
            ) from None
    good_sha, bad_sha = shas
    if good_sha == bad_sha:
        raise CandidatesError(f"--good and --bad are the same commit {good_sha}")
    chain = _git(repo, "rev-list", "--reverse", "--first-parent", f"{good_sha}..{bad_sha}")
    later = chain.split()
    first_parent = _git(repo, "rev-parse", f"{later[0]}^1") if later else None
    if not later or first_parent != good_sha:
        raise CandidatesError(
            f"--good {good}: not on the first-parent chain of --bad {bad} in {repo}; expected "
            "an earlier commit of the same branch"
        )
    return [good_sha, *later]


def versions_between(module_dir: Path, library: str, good: str, bad: str) -> list[str]:
    """The released versions of library from good to bad (both included), in semver order:
    those the module proxy lists (`go list -m -versions`, run in module_dir), plus good and bad
    themselves where its list lacks them (a proxy's list can miss a release that resolves, as
    the pinned kcp-go v5.6.72 here; a version that does not resolve fails its build)."""
    out = _run(["go", "list", "-m", "-versions", library], module_dir, GO_ENV).split()
    listed = out[1:] if out and out[0] == library else out
    for flag, v in (("--good", good), ("--bad", bad)):
        if version_key(v) is None:
            shown = ", ".join(listed[-12:]) or "none"
            raise CandidatesError(
                f"{flag} {v}: not a version of {library} (the module proxy lists: {shown}); "
                "expected a semantic version such as v1.2.3"
            )
    order = sorted({*listed, good, bad}, key=lambda v: version_key(v) or ())
    i, j = order.index(good), order.index(bad)
    if i >= j:
        raise CandidatesError(f"--good {good} is not older than --bad {bad} in {library}'s order")
    return order[i : j + 1]


def pseudo_version(repo: Path, sha: str, library: str) -> str:
    """The Go pseudo-version of a commit (https://go.dev/ref/mod#pseudo-versions):
    vX.Y.(Z+1)-0.<UTC time>-<sha12> after the nearest release tag vX.Y.Z, else vN.0.0-<UTC
    time>-<sha12> with N the major version the module path names (0 or 1 without /vN)."""
    seconds = int(_git(repo, "show", "-s", "--format=%ct", sha))
    stamp = dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%Y%m%d%H%M%S")
    suffix = MAJOR_SUFFIX.search(library)
    major = int(suffix.group(1)) if suffix else 0
    try:
        tag = _git(repo, "describe", "--tags", "--abbrev=0", "--match", "v[0-9]*", sha)
    except CandidatesError:
        tag = ""
    m = RELEASE_TAG.match(tag)
    if m is not None and int(m.group(1)) == major:
        return f"v{m.group(1)}.{m.group(2)}.{int(m.group(3)) + 1}-0.{stamp}-{sha[:12]}"
    return f"v{major}.0.0-{stamp}-{sha[:12]}"


def _key(candidate: str) -> str:
    """A directory name for a candidate (versions may hold characters paths should not)."""
    return re.sub(r"[^A-Za-z0-9._+-]", "_", candidate)


@dataclass
class GoBuilder:
    """Builds the main package `main` of the Go module in module_dir against library at a
    candidate: a commit of the git repository `repo`, or (repo None) a released version. Each
    candidate is built once into work_dir/builds/<candidate>/; a build that fails raises
    CandidateFailed with the compiler's message."""

    module_dir: Path
    main: str
    library: str
    work_dir: Path
    repo: Path | None = None
    env: Mapping[str, str] = field(default_factory=dict)

    def build(self, candidate: str) -> Path:
        where = self.work_dir / "builds" / _key(candidate)
        exe = where / (Path(self.main).name or "main")
        if exe.is_file():
            return exe
        if where.exists():
            shutil.rmtree(where)  # a build interrupted before: start again
        mod = where / "go.mod"
        try:
            if self.repo is None:
                go_module_file(self.module_dir, self.library, candidate, mod)
                self._go_build(candidate, mod, exe)
            else:
                self._build_commit(candidate, mod, exe)
        except (VersionBuildError, CandidatesError) as exc:
            raise CandidateFailed(candidate, f"does not build: {exc}") from None
        return exe

    def _build_commit(self, sha: str, mod: Path, exe: Path) -> None:
        assert self.repo is not None
        version = pseudo_version(self.repo, sha, self.library)
        mod.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(self.module_dir / "go.mod", mod)
        sums = self.module_dir / "go.sum"
        mod.with_suffix(".sum").write_bytes(sums.read_bytes() if sums.is_file() else b"")
        tree = (mod.parent / "tree").resolve()
        # A worktree outside the repository's own directory; removed after the build (the build
        # cache keeps what it compiled, by content: -trimpath keeps the path out of it).
        _git(self.repo, "worktree", "add", "--detach", "--force", str(tree), sha)
        try:
            _run(
                ["go", "mod", "edit", f"-modfile={mod}", f"-require={self.library}@{version}",
                 f"-replace={self.library}={tree}"],
                self.module_dir, {**GO_ENV, **self.env},
            )  # fmt: skip
            self._go_build(sha, mod, exe)
        finally:
            _git(self.repo, "worktree", "remove", "--force", str(tree))

    def _go_build(self, candidate: str, mod: Path, exe: Path) -> None:
        _run(
            ["go", "build", "-trimpath", f"-modfile={mod}", "-o", str(exe), self.main],
            self.module_dir, {**GO_ENV, **self.env},
        )  # fmt: skip
        if not exe.is_file():
            raise CandidatesError(f"{candidate}: go build left no {exe}")


def build_info(executable: Path) -> dict[str, str]:
    """What a Go executable says it was built with (`go version -m`): "go" -> the toolchain,
    each dependency's module path -> the version required (a pseudo-version naming the commit
    for the bisection's commit builds)."""
    out = _run(["go", "version", "-m", str(executable)], executable.parent, GO_ENV)
    lines = out.splitlines()
    info: dict[str, str] = {}
    if lines and ": " in lines[0]:
        info["go"] = lines[0].split(": ", 1)[1].strip()
    for line in lines[1:]:
        parts = line.strip().split("\t")
        if len(parts) >= 3 and parts[0] == "dep":
            info[parts[1]] = parts[2]
    return info
