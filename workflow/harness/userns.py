"""Network isolation without root: the run inside a user namespace of its own.

DAS-6 and most shared machines give no root, and without it `ip netns` cannot be used: runs fell
back to plain loopback (`isolation: none`: no emulator, so no network profile, and no exact
traffic counters). An unprivileged user can, where the kernel allows user namespaces
(`user.max_user_namespaces` > 0), be root of a user namespace and of the network and mount
namespaces it creates. So a run that wants isolation, started by a user who is not root, is run
by a child process inside

    unshare --user --map-root-user --net --mount --propagation private
        sh -c 'mount -t tmpfs netstick-run /run && exec python -m workflow.harness.userns_child ...'

where it is uid 0 with CAP_SYS_ADMIN and CAP_NET_ADMIN over its own namespaces: the sandbox
(workflow/harness/sandbox.py) builds the same topology, unchanged (`ip netns add` needs its
/run/netns, hence the private tmpfs on /run; the child sits in a network namespace of its own,
because `ip netns add` returns to the namespace it came from), the emulator's AF_PACKET bridge
and the veth counters work as they do for root, and the run's meta.json records
`isolation: userns`. Everything the run writes lands on the real file system as the user; every
namespace dies with the last process in the user namespace, so a run killed with SIGKILL leaves
none behind.

Where user namespaces are off the run keeps the old fallback, and isolation_available() says why,
naming the sysctl. Under SLURM on several nodes neither is possible across hosts (placement).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from workflow.harness import benchlock
from workflow.harness.state import Outcome

# Set in the child: this process is root of its own user namespace, not of the machine.
INSIDE_ENV = "NETSTICK_USERNS"
SYSCTL = Path("/proc/sys/user/max_user_namespaces")
PROBE_TIMEOUT_S = 10
# The shell inside: the system directories on PATH (an ordinary user's PATH often lacks ip,
# ethtool and sysctl), a private /run for `ip netns` (and the sandbox's owner files), then the run.
_INNER = 'PATH="$PATH:/usr/sbin:/sbin"; mount -t tmpfs -o mode=0755 netstick-run /run && exec "$@"'


def inside() -> bool:
    return os.environ.get(INSIDE_ENV) == "1"


def wrap(argv: list[str]) -> list[str]:
    """argv run as root of a new user namespace with its own network and mount namespaces."""
    return [
        "unshare", "--user", "--map-root-user", "--net", "--mount", "--propagation", "private",
        "--", "sh", "-c", _INNER, "netstick-userns", *argv,
    ]  # fmt: skip


@functools.cache
def available() -> tuple[bool, str]:
    """(True, how) if this (non-root) user can build a run's namespaces in a user namespace,
    else (False, why not, naming the sysctl or the tool)."""
    if shutil.which("unshare") is None:
        return False, "unshare (util-linux) is not installed"
    try:
        limit = int(SYSCTL.read_text().strip())
    except (OSError, ValueError):
        limit = None
    if limit == 0:
        return False, (
            "user namespaces are off (sysctl user.max_user_namespaces = 0): ask the machine's "
            "administrator for user.max_user_namespaces > 0"
        )
    probe = wrap(["ip", "netns", "add", "netstick-probe"])
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError) as exc:
        return False, f"a user namespace could not be created: {exc}"
    if done.returncode != 0:
        why = (done.stderr or done.stdout).strip().splitlines()
        return False, (
            "a user namespace could not build a network namespace "
            f"({why[-1] if why else f'exit {done.returncode}'}); user.max_user_namespaces is "
            f"{limit if limit is not None else 'unknown'}"
        )
    return True, "user namespace: unshare --user --map-root-user --net --mount, ip netns inside"


def run_cell_inside(cell: dict[str, Any], out: Path, job: dict[str, Any] | None) -> Outcome:
    """Run the cell by a child in its own user namespace and return its outcome. SIGTERM and
    SIGINT are passed on to the child, which stops the run as the harness always does."""
    with tempfile.TemporaryDirectory(prefix="netstick-userns-") as tmp:
        given = Path(tmp) / "cell.json"
        given.write_text(json.dumps({"cell": cell, "out": str(out), "job": job}))
        result = Path(tmp) / "outcome.json"
        env = {
            **os.environ,
            INSIDE_ENV: "1",
            # The machine lock stays where every other run looks for it (the child's /run is
            # its own).
            benchlock.LOCK_DIR_ENV: str(benchlock.lock_dir()),
            # The run lock this process (records.execute) holds covers the child it waits for.
            benchlock.HELD_ENV: benchlock.held_for_children(),
        }
        argv = wrap(
            [sys.executable, "-m", "workflow.harness.userns_child", str(given), str(result)]
        )
        child = subprocess.Popen(argv, env=env)
        previous = {
            sig: signal.signal(sig, lambda s, _f: child.send_signal(s))
            for sig in (signal.SIGTERM, signal.SIGINT)
        }
        try:
            code = child.wait()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        try:
            doc = json.loads(result.read_text())
        except (OSError, ValueError):
            return Outcome(
                "failed",
                "internal_error",
                f"the run in its user namespace ended with exit {code} and left no outcome",
                out,
            )
    return Outcome(
        doc["status"], doc["reason"], doc["detail"], Path(doc["path"]), doc.get("interrupted_by")
    )
