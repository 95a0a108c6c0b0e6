"""One measurement at a time per machine, and one process per run.

Snakemake's ``bench`` resource keeps one Snakemake from overlapping its own runs. It knows
nothing of a run left behind by a Snakemake that was killed (SIGKILL, an OOM kill, a lost SSH
session): that run's harness goes on measuring. A restarted campaign must neither start another
run beside it (two measurement windows on one machine contaminate each other) nor run the same
run twice and let the older process overwrite the newer one's record. So the harness holds
flock(2) locks while it runs:

- the machine lock (``LOCK_DIR/bench.lock``), for runs placed on this machine: a run waits
  for the one in flight to finish;
- the run lock (``<cell-id>/.<run-id>.lock`` beside the run), for every placement, held from the
  start of the run to its record: the same run never runs in two processes at once.

The kernel releases a dead process's locks, so nothing stale is ever left to clean up. The
holder writes who it is into the lock file so that a waiting run can say what it waits for.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

# /run is a per-boot tmpfs: a machine lock never outlives the machine's processes.
RUN_LOCK_DIR = Path("/run/netstick")
POLL_S = 0.2


class LockTimeout(RuntimeError):
    """The lock stayed held longer than the caller would wait; the message names the holder."""


LOCK_DIR_ENV = "NETSTICK_LOCK_DIR"
MACHINE_LOCK = "bench.lock"


def lock_dir() -> Path:
    """Where the machine lock lives: /run/netstick, or the temporary directory where /run is
    not writable (not root); LOCK_DIR_ENV where a parent chose it (a run in its own user
    namespace has a /run of its own, so its parent passes the shared place on)."""
    if given := os.environ.get(LOCK_DIR_ENV):
        return Path(given)
    # A machine lock root made is every user's: flock needs only read access to the file.
    if os.access(RUN_LOCK_DIR / MACHINE_LOCK, os.R_OK):
        return RUN_LOCK_DIR
    try:
        RUN_LOCK_DIR.mkdir(parents=True, exist_ok=True)
        if os.access(RUN_LOCK_DIR, os.W_OK):
            return RUN_LOCK_DIR
    except OSError:
        pass
    return Path(tempfile.gettempdir())


def machine_lock_path() -> Path:
    return lock_dir() / MACHINE_LOCK


def run_lock_path(out: Path) -> Path:
    return out.parent / f".{out.name}.lock"


# Locks this process holds (path -> depth): run_cell inside records.execute takes the same lock
# again, and a second flock on a new descriptor of the same file would wait for itself.
_held: dict[Path, int] = {}
# Locks a parent process holds for this one (os.pathsep-separated paths): a run handed to a
# child in its own user namespace (workflow/harness/userns.py) is already under its parent's
# run lock, which the child would otherwise wait for as long as the parent waits for the child.
HELD_ENV = "NETSTICK_LOCKS_HELD"


def held_for_children() -> str:
    """The HELD_ENV value that passes this process's locks on to a child it waits for."""
    inherited = [p for p in os.environ.get(HELD_ENV, "").split(os.pathsep) if p]
    return os.pathsep.join(dict.fromkeys([*inherited, *(str(p) for p in _held)]))


def _held_by_parent(path: Path) -> bool:
    return str(path) in os.environ.get(HELD_ENV, "").split(os.pathsep)


def holder(path: Path) -> str:
    """Who holds (or last held) the lock, as the holder wrote it."""
    try:
        doc = json.loads(path.read_text() or "{}")
    except (OSError, ValueError):
        return "another process"
    if not isinstance(doc, dict) or "pid" not in doc:
        return "another process"
    return f"{doc.get('what', 'a run')} (pid {doc['pid']} on {doc.get('host', '?')})"


def _open(path: Path) -> int:
    """A descriptor to flock path by, whoever made the file: created readable and writable by
    every user (a machine lock in /tmp is shared by all who measure on the machine), and where
    another user's file may not be written, opened for reading, which is all flock needs (the
    holder's name is then not written: it is for messages only)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except PermissionError:
        return os.open(path, os.O_RDONLY)
    with contextlib.suppress(OSError):  # the umask took bits the other users need
        if os.fstat(fd).st_uid == os.geteuid():
            os.fchmod(fd, 0o666)
    return fd


@contextlib.contextmanager
def held(path: Path, what: str, wait_s: float, *, announce: bool = True) -> Iterator[float]:
    """Hold the flock on path for the block; yields the seconds waited for it.

    Raises LockTimeout when another process still holds it after wait_s. announce prints one
    line to stderr when the lock is busy, naming the holder.
    """
    path = path.resolve()
    if _held_by_parent(path) and path not in _held:
        _held[path] = 0  # the parent's flock covers it; counted from here as this process's
    if path in _held:
        _held[path] += 1
        try:
            yield 0.0
        finally:
            _held[path] -= 1
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = _open(path)
    try:
        t0 = time.monotonic()
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EACCES):
                    raise
            if time.monotonic() - t0 >= wait_s:
                raise LockTimeout(
                    f"{path}: held by {holder(path)} for more than {wait_s:g} s; "
                    f"{what} did not start"
                )
            if announce and not told:
                print(f"{what}: waiting for {holder(path)} to finish", file=sys.stderr, flush=True)
                told = True
            time.sleep(POLL_S)
        waited_s = time.monotonic() - t0
        with contextlib.suppress(OSError):  # who holds it is for messages only (a full disk)
            os.ftruncate(fd, 0)
            os.pwrite(
                fd,
                json.dumps(
                    {"pid": os.getpid(), "host": socket.gethostname(), "what": what}
                ).encode(),
                0,
            )
        _held[path] = 1
        try:
            yield waited_s
        finally:
            del _held[path]
    finally:
        os.close(fd)  # closing the descriptor releases the flock
