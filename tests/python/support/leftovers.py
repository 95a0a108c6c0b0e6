"""What a test that starts processes or sandboxes may leave behind: nothing. The run tier's
autouse fixture (tests/python/e2e/run/conftest.py) asks these after every test.

Another program's sandboxes on this machine (a benchmark running beside the tests) are not a
test's leftovers: a namespace whose owner file names a live process outside this test session
is left out, as `netstick bench faults` leaves out sandboxes not of its own runs.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterable
from pathlib import Path

import psutil

from workflow.harness import netns, sandbox


def _ours() -> set[int]:
    me = psutil.Process()
    return {me.pid, *(p.pid for p in me.children(recursive=True))}


def _describe(proc: psutil.Process) -> str:
    try:
        return f"pid {proc.pid}: {' '.join(proc.cmdline())[:160]}"
    except psutil.Error:
        return f"pid {proc.pid}"


def _running(proc: psutil.Process) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE  # a zombie runs nothing any more
    except psutil.Error:
        return False


def processes(root: Path) -> list[psutil.Process]:
    """Live processes this session started that still run, and any live process whose command
    line names root (the test's directory: a process started in a new session, or by a child
    that exited, is no child of ours any more)."""
    me = psutil.Process()
    found = {p.pid: p for p in me.children(recursive=True) if _running(p)}
    for proc in psutil.process_iter(["cmdline"]):
        cmd = " ".join(proc.info["cmdline"] or [])
        if str(root) in cmd and proc.pid != me.pid and _running(proc):
            found.setdefault(proc.pid, proc)
    return list(found.values())


def kill(procs: Iterable[psutil.Process]) -> None:
    """SIGKILL procs, so that one test's leftovers do not fail the tests after it too."""
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.kill()


def _foreign(name: str) -> bool:
    """Whether the sandbox named name belongs to a live process outside this session."""
    short = name.split()[-1].removeprefix(netns.PREFIX).partition("-")[0]
    try:
        owner = json.loads((sandbox.OWNER_DIR / f"{short}.json").read_text())
        pid = int(owner["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return psutil.pid_exists(pid) and pid not in _ours()


def sandboxes(before: Iterable[str] = ()) -> list[str]:
    """Namespaces and host links of sandboxes (netns.leftovers()) that were not there before,
    other programs' left out."""
    known = set(before)
    return [n for n in netns.leftovers() if n not in known and not _foreign(n)]


def left_behind(root: Path, before: Iterable[str] = (), grace_s: float = 3.0) -> list[str]:
    """processes(root) and sandboxes(before), waiting up to grace_s for what is being stopped
    (a process killed a moment ago, a namespace being deleted) to go; the processes still
    there are then killed."""
    before = list(before)
    deadline = time.monotonic() + grace_s
    while True:
        procs, nets = processes(root), sandboxes(before)
        if not (procs or nets) or time.monotonic() >= deadline:
            found = [_describe(p) for p in procs] + nets
            kill(procs)
            return found
        time.sleep(0.1)
