"""A cell run by another, unprivileged user, for benches that set root's runs beside a user's.

A user who is not root gets a run's namespaces, veths and emulator inside a user namespace of
its own (workflow/harness/userns.py, `isolation: userns`). To measure what that costs, a bench
started by root runs the same cell as that user, through the one front door a user has:
`runuser -u USER -- netstick run-cell CELL.json --out DIR`, with the user's own environment
(HOME, a PATH without root's directories), so nothing of root's privileges reaches the run.

The user must be able to run this checkout's Python: a venv made from a Python under /root (a
pyenv) is not, and the check says so before any run starts.
"""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

CHECK_TIMEOUT_S = 60
_USER_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"


class UserError(ValueError):
    """The user cannot run cells here; the message names the flag, the user and why."""


def _argv(user: str, args: list[str]) -> list[str]:
    home = pwd.getpwnam(user).pw_dir
    # The PATH keeps the directory of the Go toolchain and of this venv's tools where they are
    # not root's own: a user's run needs ip, unshare and the prototypes' runtimes, nothing else.
    path = ":".join(
        [p for p in os.environ.get("PATH", "").split(":") if p and not p.startswith("/root")]
        + [_USER_PATH]
    )
    env = [f"HOME={home}", f"PATH={path}", "LANG=C.UTF-8"]
    return ["runuser", "-u", user, "--", "env", "-i", *env, *args]


def check(user: str, repo: Path) -> int:
    """The user's uid, after checking that it exists, is not root, and can run this checkout's
    Python and read its code; else UserError naming why."""
    if os.geteuid() != 0:
        raise UserError("--as-user: only root can run cells as another user (runuser)")
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        raise UserError(f"--as-user {user}: no such user on this machine") from None
    if entry.pw_uid == 0:
        raise UserError(f"--as-user {user}: expected an unprivileged user, not uid 0")
    probe = _argv(user, [sys.executable, "-c", "import workflow.harness.run"])
    try:
        done = subprocess.run(
            probe, cwd=repo, capture_output=True, text=True, timeout=CHECK_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise UserError(f"--as-user {user}: runuser could not start: {exc}") from None
    if done.returncode != 0:
        why = (done.stderr or done.stdout).strip().splitlines()
        raise UserError(
            f"--as-user {user}: the user cannot run {sys.executable} in {repo} "
            f"({why[-1] if why else f'exit {done.returncode}'}); run the bench from a checkout "
            "whose .venv and code every user can read (a venv made from /usr/bin/python3)"
        )
    return entry.pw_uid


def run_cell(user: str, cell: dict[str, Any], out: Path, repo: Path) -> tuple[str, str]:
    """Run the cell as the user into out (a directory the user may create) and return the
    run's (status, detail) as its status.json and the command's stderr tell it."""
    uid = pwd.getpwnam(user).pw_uid
    out.parent.mkdir(parents=True, exist_ok=True)
    os.chown(out.parent, uid, -1)
    with tempfile.TemporaryDirectory(prefix="netstick-as-user-") as tmp:
        Path(tmp).chmod(0o755)
        given = Path(tmp) / "cell.json"
        given.write_text(json.dumps(cell))
        given.chmod(0o644)
        # The venv's own entry point: the command a user types.
        netstick = str(Path(sys.executable).with_name("netstick"))
        argv = [netstick, "run-cell", str(given), "--out", str(out)]
        done = subprocess.run(
            _argv(user, argv), cwd=repo, capture_output=True, text=True, check=False
        )
    try:
        status = json.loads((out / "status.json").read_text())
    except (OSError, ValueError):
        return "failed", f"exit {done.returncode}: {done.stderr.strip()[-400:]}"
    return str(status.get("status")), done.stderr.strip()[-400:]
