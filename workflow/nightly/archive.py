"""The history store kept off the runner: data/history/ mirrored onto a data branch of a git
repository, append-only, one night per commit.

    python3 workflow/nightly/archive.py push --remote URL|PATH [--history-dir data/history]
    python3 workflow/nightly/archive.py pull --remote URL|PATH [--history-dir data/history]
    (netstick history push|pull run the same functions)

A night is its csv (<campaign>/<stamp>-<night_id>.csv) with the decision and bisections of the
same stem (<campaign>/verdicts/<stem>.json, <campaign>/bisections/<stem>-<n>.json). push()
appends the nights the branch lacks, oldest first, one commit each, and never changes or deletes
a file there; pull() copies the branch's files a machine lacks and never overwrites one.

Standard library only, and no project import: the GitHub-hosted job that writes the branch
checks out this one file and runs it with a bare `python3`, so no code a pull request can change
runs with the job's write token. The work dir is a bare repository used as a cache (default
.history-archive beside the history dir): commits are built with plumbing (a private index,
write-tree, commit-tree) so there is no work tree to leave half written, and the remote's
branch moves only by a successful `git push`, atomically. A kill at any point leaves the
remote's history as it was; the next start repairs or re-creates the cache.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import random
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

DEFAULT_BRANCH: Final = "netstick-history"
WORK_DIR_NAME: Final = ".history-archive"  # beside the history dir unless --work-dir says
PUSH_ATTEMPTS: Final = 8  # a rejected push is rebuilt on the new tip and retried this often
BACKOFF_S: Final = (0.05, 0.4)  # randomised pause range, times the attempt number
LOCAL_TIMEOUT_S: Final = 120
NETWORK_TIMEOUT_S: Final = 300
LOCK_WAIT_S: Final = 600  # another push or pull using the same work dir
# Test hooks: with PAUSE_ENV set, push() writes that file once its commits are built and waits
# before `git push` until the file RESUME_ENV names exists (or PAUSE_S), so a test can kill it
# exactly there, or hold two pushers until both have built on the same tip.
PAUSE_ENV: Final = "NETSTICK_ARCHIVE_PAUSE_BEFORE_PUSH"
RESUME_ENV: Final = "NETSTICK_ARCHIVE_RESUME"
PAUSE_S: Final = 120.0
FILE_MODE: Final = "100644"
CACHE_MARKER: Final = "netstick-history-cache"  # in the work dir: ours to delete and re-create
IDENTITY: Final = ("netstick history", "netstick-history@users.noreply.github.com")

_STAMP = r"(?P<stamp>\d{8}T\d{6}Z)"
_ID = r"(?P<night_id>[0-9A-Za-z_]+)"
_NIGHT_CSV = re.compile(rf"{_STAMP}-{_ID}\.csv")
_VERDICTS = re.compile(rf"{_STAMP}-{_ID}\.json")
_BISECTION = re.compile(rf"{_STAMP}-{_ID}-(?P<n>\d+)\.json")
# A push the remote refused because its branch moved (another pusher was first): retry.
_MOVED = re.compile(
    r"fetch first|non-fast-forward|failed to update ref|cannot lock ref|failed to lock|"
    r"incorrect old value|stale info"
)


class ArchiveError(Exception):
    """A push or pull that was not done; the message names the file, remote or git command."""


class GitError(ArchiveError):
    """A git command that failed: the command (credentials hidden) and its stderr."""

    def __init__(self, cmd: Sequence[str], returncode: int, stderr: str) -> None:
        self.stderr = stderr
        shown = _redact(" ".join(cmd))
        super().__init__(f"`{shown}` exited {returncode}: {_redact(stderr) or '(no message)'}")


@dataclass(frozen=True)
class Night:
    """One night's files (paths relative to the history dir, POSIX), in one campaign."""

    campaign: str
    stamp: str
    night_id: str
    files: tuple[str, ...]

    @property
    def stem(self) -> str:
        return f"{self.stamp}-{self.night_id}"


@dataclass(frozen=True)
class Appended:
    """A night's files that one commit added to the branch."""

    night: Night
    commit: str


@dataclass(frozen=True)
class PushResult:
    """What push() appended (empty: nothing new, nothing pushed) and the branch tip after it."""

    appended: tuple[Appended, ...]
    tip: str | None
    attempts: int


@dataclass(frozen=True)
class PullResult:
    """The files pull() restored and how many of the branch's files were already there."""

    restored: tuple[str, ...]
    present: int
    tip: str | None  # None: no branch yet (allow_missing)


# -- the layout: which night a file belongs to -------------------------------------------------


def night_of(rel: str) -> tuple[str, str, str]:
    """(campaign, stamp, night_id) of a history file given relative to the history dir;
    ArchiveError naming it when it is not a file of the layout."""
    parts = rel.split("/")
    match: re.Match[str] | None = None
    if len(parts) == 2:
        match = _NIGHT_CSV.fullmatch(parts[1])
    elif len(parts) == 3 and parts[1] == "verdicts":
        match = _VERDICTS.fullmatch(parts[2])
    elif len(parts) == 3 and parts[1] == "bisections":
        match = _BISECTION.fullmatch(parts[2])
    if match is None:
        raise ArchiveError(
            f"{rel}: not a file of the history layout (<campaign>/<stamp>-<night_id>.csv, "
            "<campaign>/verdicts/<stamp>-<night_id>.json, "
            "<campaign>/bisections/<stamp>-<night_id>-<n>.json)"
        )
    return parts[0], match["stamp"], match["night_id"]


def group_nights(files: Sequence[str]) -> list[Night]:
    """The files grouped by campaign and night stem, oldest night first (stamp, then campaign
    and night id), each night's files sorted."""
    groups: dict[tuple[str, str, str], list[str]] = {}
    for rel in files:
        campaign, stamp, night_id = night_of(rel)
        groups.setdefault((campaign, stamp, night_id), []).append(rel)
    order = sorted(groups, key=lambda k: (k[1], k[0], k[2]))
    return [Night(c, s, n, tuple(sorted(groups[(c, s, n)]))) for c, s, n in order]


def history_files(history_dir: Path) -> list[str]:
    """Every file under history_dir (relative, POSIX, sorted) but hidden ones: a leftover
    temporary file of an interrupted write (.<name>.tmp-<pid>) is not part of the store."""
    out = []
    for path in history_dir.rglob("*"):
        rel = path.relative_to(history_dir)
        if any(part.startswith(".") for part in rel.parts):
            continue
        if path.is_file():
            out.append(rel.as_posix())
    return sorted(out)


def new_nights(
    nights: Sequence[Night],
    hashes: Mapping[str, str],
    branch_files: Mapping[str, str],
    where: str = "",
) -> list[Night]:
    """The part of each night the branch lacks (nights the branch holds whole are left out).
    A file the branch holds with other content: ArchiveError naming every such file (under
    where, the history dir)."""
    differ = [
        rel
        for night in nights
        for rel in night.files
        if rel in branch_files and branch_files[rel] != hashes[rel]
    ]
    if differ:
        raise ArchiveError(
            "the branch holds other content than "
            + ", ".join(f"{where}/{rel}" if where else rel for rel in differ)
            + ": history files are written once, never replaced; nothing was pushed"
        )
    out = []
    for night in nights:
        missing = tuple(rel for rel in night.files if rel not in branch_files)
        if missing:
            out.append(Night(night.campaign, night.stamp, night.night_id, missing))
    return out


def commit_message(night: Night, note: str = "") -> str:
    """The commit of one night: campaign and night in the subject, its files in the body."""
    body = "\n".join(night.files)
    text = f"{night.campaign}: night {night.stem}\n\n{body}\n"
    return text + (f"\n{note.strip()}\n" if note.strip() else "")


# -- git ---------------------------------------------------------------------------------------


def _redact(text: str) -> str:
    """Credentials in a URL (https://user:token@host) never reach a message."""
    return re.sub(r"(://)[^/@\s]+@", r"\1***@", text)


def _git(
    repo: Path,
    args: Sequence[str],
    *,
    stdin: bytes | None = None,
    env: Mapping[str, str] | None = None,
    timeout_s: float = LOCAL_TIMEOUT_S,
    check: bool = True,
) -> subprocess.CompletedProcess[bytes]:
    """git on the cache repository. --git-dir always: never a repository git would discover
    around the work dir (it sits inside the project's checkout). No global configuration
    assumed (identity given here), never a prompt for credentials, C locale for the messages
    the push retry reads."""
    name, email = IDENTITY
    # Auto maintenance in the foreground: a detached gc would outlive the lock and the timeout.
    config = {
        "user.name": name, "user.email": email, "commit.gpgsign": "false",
        "gc.autoDetach": "false", "maintenance.autoDetach": "false",
    }  # fmt: skip
    options = [arg for key, value in config.items() for arg in ("-c", f"{key}={value}")]
    shown = ["git", f"--git-dir={repo}", *args]  # what an error shows: not the fixed options
    cmd = [shown[0], *options, *shown[1:]]
    full_env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", **(env or {})}
    try:
        proc = subprocess.run(
            cmd, input=stdin, capture_output=True, env=full_env, timeout=timeout_s, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise ArchiveError(f"`{_redact(' '.join(shown))}`: no answer in {timeout_s:g} s") from exc
    except OSError as exc:
        raise ArchiveError(f"`git`: {exc}; git must be installed") from exc
    if check and proc.returncode != 0:
        raise GitError(shown, proc.returncode, proc.stderr.decode(errors="replace").strip())
    return proc


def _out(
    repo: Path,
    args: Sequence[str],
    *,
    stdin: bytes | None = None,
    env: Mapping[str, str] | None = None,
    timeout_s: float = LOCAL_TIMEOUT_S,
) -> str:
    """git's standard output, stripped."""
    return _git(repo, args, stdin=stdin, env=env, timeout_s=timeout_s).stdout.decode().strip()


def remote_spec(remote: str) -> str:
    """A URL as given; a local path made absolute (git runs with the cache as its repository,
    where a relative path would mean something else)."""
    if "://" in remote or re.match(r"^[\w.-]+@[\w.-]+:", remote):
        return remote
    path = Path(remote).expanduser()
    if not path.exists():
        raise ArchiveError(f"--remote {remote}: neither a URL nor an existing repository path")
    return str(path.resolve())


@contextlib.contextmanager
def _locked(work_dir: Path) -> Iterator[None]:
    """One push or pull at a time per work dir (a lock file beside it, so re-creating the
    cache does not drop the lock); the lock goes with the process, also when it is killed."""
    lock_path = work_dir.with_name(work_dir.name + ".lock")
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("a") as handle:
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise ArchiveError(
                        f"{work_dir}: in use by another push or pull for {LOCK_WAIT_S} s"
                    ) from None
                time.sleep(0.2)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _is_cache(work_dir: Path) -> bool:
    if not work_dir.is_dir():
        return False
    proc = _git(work_dir, ["rev-parse", "--is-bare-repository"], check=False)
    return proc.returncode == 0 and proc.stdout.strip() == b"true"


def _recreate(work_dir: Path) -> None:
    """A new, empty cache in place of whatever a kill left. Only a directory this module
    made (its marker is written before anything else) or an empty one is deleted: a mistyped
    --work-dir pointing at other data is an error, never removed."""
    if work_dir.is_symlink() or work_dir.is_file():
        raise ArchiveError(f"--work-dir {work_dir}: not a directory; remove it or choose another")
    if work_dir.is_dir() and any(work_dir.iterdir()):
        if not (work_dir / CACHE_MARKER).is_file():
            raise ArchiveError(
                f"--work-dir {work_dir}: holds files but is no cache of netstick history "
                f"push/pull (no {CACHE_MARKER}); not deleted, choose an empty or new directory"
            )
        shutil.rmtree(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    (work_dir / CACHE_MARKER).write_text(
        "The cache of netstick history push|pull (workflow/nightly/archive.py); safe to delete.\n"
    )
    _git(work_dir, ["init", "--quiet", "--bare", str(work_dir)])


def _clear_stale_locks(work_dir: Path) -> None:
    """Lock files a killed git left (index, refs, packed-refs, config): with our own lock
    held no live git owns them, and git refuses to work while they exist."""
    for lock in [*work_dir.glob("*.lock"), *(work_dir / "refs").rglob("*.lock")]:
        lock.unlink(missing_ok=True)


def _remote_tip(repo: Path, remote: str, branch: str) -> str | None:
    """The branch's tip on the remote, fetched into the cache; None when there is no branch."""
    ref = f"refs/heads/{branch}"
    listed = _out(repo, ["ls-remote", "--heads", remote, ref], timeout_s=NETWORK_TIMEOUT_S)
    tracking = f"refs/remotes/archive/{branch}"
    if not listed:
        _git(repo, ["update-ref", "-d", tracking], check=False)
        return None
    _git(
        repo,
        ["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", remote, f"+{ref}:{tracking}"],
        timeout_s=NETWORK_TIMEOUT_S,
    )
    return _out(repo, ["rev-parse", "--verify", f"{tracking}^{{commit}}"])


def _open_cache(work_dir: Path, remote: str, branch: str) -> str | None:
    """The cache made usable whatever a kill left of it, and the remote tip fetched into it:
    stale locks cleared; re-created when it is not a bare repository or cannot fetch."""
    for fresh in (False, True):
        if fresh or not _is_cache(work_dir):
            _recreate(work_dir)
        _clear_stale_locks(work_dir)
        try:
            return _remote_tip(work_dir, remote, branch)
        except GitError:
            if fresh:
                raise
    raise AssertionError("unreachable")


def _hash(repo: Path, root: Path, files: Sequence[str], write: bool) -> dict[str, str]:
    """Blob ids of the files (relative to root), written into the cache when write."""
    if not files:
        return {}
    args = ["hash-object", *(["-w"] if write else []), "--stdin-paths", "--no-filters"]
    stdin = "".join(f"{root / rel}\n" for rel in files).encode()
    ids = _out(repo, args, stdin=stdin).split()
    if len(ids) != len(files):
        raise ArchiveError(f"git hash-object gave {len(ids)} ids for {len(files)} files")
    return dict(zip(files, ids, strict=True))


def _branch_files(repo: Path, tip: str | None) -> dict[str, str]:
    """path -> blob id of every file at tip (none without a tip)."""
    if tip is None:
        return {}
    out = _git(repo, ["ls-tree", "-r", "-z", "--full-tree", tip]).stdout
    files = {}
    for entry in out.split(b"\0"):
        if entry:
            meta, path = entry.split(b"\t", 1)
            files[path.decode()] = meta.split()[2].decode()
    return files


def _commit_nights(
    repo: Path, tip: str | None, nights: Sequence[Night], ids: Mapping[str, str], note: str
) -> list[Appended]:
    """A chain of commits on tip (an orphan chain without one), one per night, each adding that
    night's files; built in a private index, so nothing but objects is written."""
    index = repo / "netstick-archive.index"
    index.unlink(missing_ok=True)
    env = {"GIT_INDEX_FILE": str(index)}
    _git(repo, ["read-tree", tip] if tip else ["read-tree", "--empty"], env=env)
    parent = tip
    out = []
    for night in nights:
        info = "".join(f"{FILE_MODE} {ids[rel]}\t{rel}\n" for rel in night.files)
        _git(repo, ["update-index", "--index-info"], stdin=info.encode(), env=env)
        tree = _out(repo, ["write-tree"], env=env)
        args = ["commit-tree", tree, "-F", "-", *(["-p", parent] if parent else [])]
        parent = _out(repo, args, stdin=commit_message(night, note).encode())
        out.append(Appended(night, parent))
    index.unlink(missing_ok=True)
    return out


def _pause_for_tests() -> None:
    marker = os.environ.get(PAUSE_ENV)
    if not marker:
        return
    Path(marker).write_text(str(os.getpid()))
    resume = os.environ.get(RESUME_ENV)
    deadline = time.monotonic() + PAUSE_S
    while time.monotonic() < deadline and not (resume and Path(resume).exists()):
        time.sleep(0.02)


def _push_once(repo: Path, remote: str, commit: str, branch: str) -> bool:
    """True when the remote's branch now is commit; False when it moved under us (rejected)."""
    proc = _git(
        repo,
        ["push", "--porcelain", "--quiet", remote, f"{commit}:refs/heads/{branch}"],
        timeout_s=NETWORK_TIMEOUT_S,
        check=False,
    )
    if proc.returncode == 0:
        return True
    said = (proc.stdout + proc.stderr).decode(errors="replace")
    if _MOVED.search(said):
        return False
    raise GitError(["git", "push", remote, f"{commit}:refs/heads/{branch}"], proc.returncode, said)


# -- push and pull -----------------------------------------------------------------------------


def default_work_dir(history_dir: Path) -> Path:
    return history_dir.absolute().parent / WORK_DIR_NAME


def push(
    history_dir: Path,
    remote: str,
    branch: str = DEFAULT_BRANCH,
    work_dir: Path | None = None,
    message: str = "",
    attempts: int = PUSH_ATTEMPTS,
) -> PushResult:
    """Append the nights of history_dir that the remote's branch lacks, one commit per night,
    oldest first, and push them; the branch is created (orphan) when the remote has none.

    Idempotent: nothing new, no commit and no push. A file the branch holds with other
    content is an error naming it, and nothing is pushed. When another pusher moved the
    branch first, the commits are rebuilt on its new tip (they only add files, so this
    conflicts only where a file differs) and pushed again, up to attempts times with a short
    random pause. message is added to every commit (e.g. the run that measured the night).
    """
    if not history_dir.is_dir():
        raise ArchiveError(f"--history-dir {history_dir}: no such directory")
    try:
        nights = group_nights(history_files(history_dir))
    except ArchiveError as exc:
        raise ArchiveError(f"{history_dir}/{exc}") from None
    files = [rel for night in nights for rel in night.files]
    url = remote_spec(remote)
    cache = work_dir or default_work_dir(history_dir)
    with _locked(cache):
        tip = _open_cache(cache, url, branch)
        for attempt in range(1, attempts + 1):
            if attempt > 1:
                time.sleep(random.uniform(*BACKOFF_S) * attempt)
                tip = _remote_tip(cache, url, branch)
            ids = _hash(cache, history_dir, files, write=True)
            todo = new_nights(nights, ids, _branch_files(cache, tip), str(history_dir))
            if not todo:
                return PushResult((), tip, attempt)
            appended = _commit_nights(cache, tip, todo, ids, message)
            # The local branch shows what is about to be pushed (the cache's own record).
            _git(cache, ["update-ref", f"refs/heads/{branch}", appended[-1].commit])
            _pause_for_tests()
            if _push_once(cache, url, appended[-1].commit, branch):
                return PushResult(tuple(appended), appended[-1].commit, attempt)
    raise ArchiveError(
        f"{_redact(url)}: branch {branch} moved under each of {attempts} pushes (other pushers); "
        "nothing of this push was kept, run it again"
    )


def _read_blobs(repo: Path, ids: Sequence[str]) -> list[bytes]:
    """The contents of blobs, in order, through one `git cat-file --batch`."""
    out = _git(repo, ["cat-file", "--batch"], stdin="".join(f"{i}\n" for i in ids).encode()).stdout
    blobs, pos = [], 0
    for blob_id in ids:
        end = out.index(b"\n", pos)
        header = out[pos:end].split()
        if len(header) != 3 or header[0].decode() != blob_id or header[1] != b"blob":
            raise ArchiveError(f"git cat-file: unexpected answer {out[pos:end]!r} for {blob_id}")
        size = int(header[2])
        blobs.append(out[end + 1 : end + 1 + size])
        pos = end + 1 + size + 1
    return blobs


def _write_new(path: Path, data: bytes) -> None:
    """Write a file that must not exist yet, through a hidden temporary file and a rename (an
    interrupted pull leaves no half file under the file's own name)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def pull(
    remote: str,
    branch: str = DEFAULT_BRANCH,
    history_dir: Path = Path("data/history"),
    work_dir: Path | None = None,
    allow_missing: bool = False,
) -> PullResult:
    """Copy every file of the remote's branch that history_dir lacks. A local file with other
    content than the branch's is an error naming it (measured data is never overwritten;
    nothing is written then). A remote without the branch is an error, or with allow_missing
    (the first night ever) nothing to restore."""
    url = remote_spec(remote)
    cache = work_dir or default_work_dir(history_dir)
    with _locked(cache):
        tip = _open_cache(cache, url, branch)
        if tip is None and allow_missing:
            return PullResult((), 0, None)
        if tip is None:
            raise ArchiveError(
                f"{_redact(url)}: no branch {branch!r}; nothing was pushed there yet "
                "(`netstick history push` creates it)"
            )
        on_branch = _branch_files(cache, tip)
        present = sorted(rel for rel in on_branch if (history_dir / rel).exists())
        local = _hash(cache, history_dir, present, write=False)
        differ = [rel for rel in present if local[rel] != on_branch[rel]]
        if differ:
            raise ArchiveError(
                ", ".join(str(history_dir / rel) for rel in differ)
                + f": other content than on branch {branch}; measured data is never "
                "overwritten, nothing was restored"
            )
        missing = sorted(rel for rel in on_branch if rel not in local)
        for rel, data in zip(
            missing, _read_blobs(cache, [on_branch[r] for r in missing]), strict=True
        ):
            _write_new(history_dir / rel, data)
    return PullResult(tuple(missing), len(present), tip)


# -- the command line (also `netstick history push|pull`) ---------------------------------------


def describe_push(result: PushResult, branch: str) -> list[str]:
    if not result.appended:
        return [f"nothing new: branch {branch} already holds every night"]
    lines = [
        f"appended {a.night.campaign} night {a.night.stem} ({len(a.night.files)} files): "
        f"{a.commit[:12]}"
        for a in result.appended
    ]
    return [*lines, f"branch {branch} at {result.tip} (attempt {result.attempts})"]


def describe_pull(result: PullResult, history_dir: Path, branch: str) -> list[str]:
    if result.tip is None:
        return [f"no branch {branch} yet: nothing to restore into {history_dir}"]
    return [
        f"restored {len(result.restored)} files into {history_dir} from branch {branch} "
        f"at {result.tip[:12]} ({result.present} were there already)"
    ]


def arguments(p: argparse.ArgumentParser, verb: str) -> None:
    """The options of push or pull (this script's and `netstick history`'s)."""
    p.add_argument("--remote", required=True, help="repository URL or path holding the branch")
    p.add_argument("--branch", default=DEFAULT_BRANCH, help=f"data branch ({DEFAULT_BRANCH})")
    p.add_argument(
        "--work-dir",
        type=Path,
        default=None,
        help=f"local cache repository (default: {WORK_DIR_NAME} beside the history dir)",
    )
    if verb == "push":
        p.add_argument("--message", default="", help="added to every commit (e.g. the run URL)")
    else:
        p.add_argument(
            "--allow-missing",
            action="store_true",
            help="a remote without the branch (the first night) restores nothing, no error",
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The history store on a data branch.")
    sub = parser.add_subparsers(dest="verb", required=True)
    for verb in ("push", "pull"):
        p = sub.add_parser(verb)
        p.add_argument("--history-dir", type=Path, default=Path("data/history"))
        arguments(p, verb)
    args = parser.parse_args(argv)
    try:
        if args.verb == "push":
            res = push(args.history_dir, args.remote, args.branch, args.work_dir, args.message)
            lines = describe_push(res, args.branch)
        else:
            got = pull(
                args.remote, args.branch, args.history_dir, args.work_dir, args.allow_missing
            )
            lines = describe_pull(got, args.history_dir, args.branch)
    except ArchiveError as exc:
        print(f"archive {args.verb}: {exc}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
