"""The machine lock is shared by every user who measures on the machine: a lock file another
user made (in /tmp, where users without root keep it) can still be held, and one a user makes
can be held by the next user. A forked child drops to another uid to be that user."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from workflow.harness import benchlock

NOBODY = 65534

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as other users")


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="netstick-lock-"))
    d.chmod(0o1777)  # like /tmp: everyone may create, nobody may remove another's file
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _as_user(uid: int, path: Path) -> int:
    """Exit code of a child that became uid and held the lock at path: 0 held, 1 refused."""
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            os.setgid(uid)
            os.setuid(uid)
            with benchlock.held(path, "a test run", wait_s=1.0, announce=False):
                code = 0
        except BaseException:  # anything is a refusal, reported by the code
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def test_a_lock_file_another_user_made_can_be_held(shared_dir: Path) -> None:
    path = shared_dir / benchlock.MACHINE_LOCK
    path.write_text("")
    os.chown(path, 1, 1)  # another user's, mode 644 as the harness used to make it
    path.chmod(0o644)
    assert _as_user(NOBODY, path) == 0


def test_a_lock_file_a_user_makes_can_be_held_by_the_next(shared_dir: Path) -> None:
    path = shared_dir / benchlock.MACHINE_LOCK
    assert _as_user(NOBODY, path) == 0
    assert path.stat().st_uid == NOBODY and path.stat().st_mode & 0o777 == 0o666
    assert _as_user(1, path) == 0
