"""Processes of a run: started in their own process group, their stdout teed to a file with the
contract's NETSTICK lines remembered, stopped as a group. Shared by the harness and the
conformance checker.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from prototypes.contract import lines

LOOPBACK = "127.0.0.1"
TERM_GRACE_S = 3.0
STDERR_TAIL_LINES = 20


class NoFreePortError(RuntimeError):
    """No port was free for both TCP and UDP."""


def pick_free_port(host: str = LOOPBACK, attempts: int = 50) -> int:
    """A port free for both TCP and UDP on host (transports use either or both)."""
    for _ in range(attempts):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
            tcp.bind((host, 0))
            port = int(tcp.getsockname()[1])
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
                try:
                    udp.bind((host, port))
                except OSError:
                    continue
        return port
    raise NoFreePortError(f"found no port free for both TCP and UDP on {host} in {attempts} tries")


def tail(path: Path, lines: int = STDERR_TAIL_LINES) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return "(no output)"
    kept = text.rstrip("\n").split("\n")[-lines:]
    return "\n".join(kept) if any(kept) else "(no output)"


# -- processes ---------------------------------------------------------------------------------


class LineWatcher:
    """Reads a child's stdout in a thread: tees it to a file and remembers NETSTICK lines."""

    def __init__(self, stream: IO[bytes], tee_path: Path) -> None:
        self._stream = stream
        self._tee_path = tee_path
        self._lines: list[tuple[int, str]] = []  # (t_unix_ns when read, line)
        self.first_line: str | None = None
        self._cond = threading.Condition()
        self._eof = False
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"tee-{tee_path.name}")
        self._thread.start()

    def _run(self) -> None:
        with self._tee_path.open("wb") as tee:
            for raw in iter(self._stream.readline, b""):
                t_ns = time.time_ns()
                tee.write(raw)
                tee.flush()
                line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
                if self.first_line is None:
                    self.first_line = line
                if line.startswith(lines.PREFIX):
                    with self._cond:
                        self._lines.append((t_ns, line))
                        self._cond.notify_all()
        with self._cond:
            self._eof = True
            self._cond.notify_all()

    @property
    def at_eof(self) -> bool:
        """The child closed its stdout: it has exited or is exiting."""
        with self._cond:
            return self._eof

    def wait_for(self, prefix: str, timeout_s: float) -> tuple[int, str] | None:
        """The first line starting with prefix, waiting at most timeout_s; None at EOF/timeout."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while True:
                for t_ns, line in self._lines:
                    if line.startswith(prefix):
                        return t_ns, line
                remaining = deadline - time.monotonic()
                if self._eof or remaining <= 0:
                    return None
                self._cond.wait(timeout=remaining)

    def join(self, timeout_s: float = 2.0) -> None:
        self._thread.join(timeout=timeout_s)


@dataclass
class Child:
    name: str
    popen: subprocess.Popen[bytes]
    watcher: LineWatcher
    stderr_path: Path


def spawn(
    name: str,
    argv: Sequence[str],
    run_dir: Path,
    *,
    env: Mapping[str, str] | None = None,
    cpus: Collection[int] | None = None,
) -> Child:
    """Start argv in its own process group: stdout teed to <name>.stdout.log with NETSTICK lines
    remembered, stderr to <name>.stderr.log; env (if given) is the child's whole environment;
    cpus (if given) are the only CPUs it and everything it starts may run on."""
    stderr_path = run_dir / f"{name}.stderr.log"
    # The affinity is set between fork and exec so every thread the runtime creates inherits
    # it (setting it after start would miss threads that already exist); a launcher such as
    # `ip netns exec` passes it on through exec.
    preexec = functools.partial(os.sched_setaffinity, 0, set(cpus)) if cpus else None
    with stderr_path.open("wb") as stderr:
        popen = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=dict(env) if env is not None else None,
            start_new_session=True,  # own process group, killed as a whole
            preexec_fn=preexec,
        )
    assert popen.stdout is not None
    return Child(
        name, popen, LineWatcher(popen.stdout, run_dir / f"{name}.stdout.log"), stderr_path
    )


def affinity(child: Child) -> list[int]:
    """The CPUs the child may run on, read back from the kernel (it may have exited)."""
    try:
        return sorted(os.sched_getaffinity(child.popen.pid))
    except OSError:
        return []


def pin_running(pid: int, cpus: Collection[int]) -> list[int]:
    """Restrict a process that is already running, every thread of it and of its descendants,
    to cpus; returns the CPUs its main thread may run on afterwards.

    For processes started by someone else (the sandbox's emulator). Threads created later
    inherit the affinity of the thread that creates them, so pinning every existing thread
    covers them too. Raises OSError when the process is gone or a CPU is not allowed.
    """
    wanted = set(cpus)
    pending = [pid]
    while pending:
        proc = pending.pop()
        task_dir = Path(f"/proc/{proc}/task")
        for task in task_dir.iterdir():
            with contextlib.suppress(ProcessLookupError):  # a thread that just ended
                os.sched_setaffinity(int(task.name), wanted)
            with contextlib.suppress(OSError):
                pending += [int(c) for c in (task / "children").read_text().split()]
    return sorted(os.sched_getaffinity(pid))


def signal_group(child: Child, sig: signal.Signals) -> None:
    # With start_new_session the pgid is the child's pid. The group outlives its leader while
    # any member lives, so this also reaches helpers after the leader exited.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.popen.pid, sig)


class Interrupted(Exception):
    """The process received SIGINT or SIGTERM while inside interruptible()."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


_deferring: dict[str, int | None] = {"depth": 0, "pending": None}


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Inside interruptible(), hold a SIGINT/SIGTERM until the block ends: for steps that must
    not be cut in half, such as starting a child and registering it for cleanup (cut between
    the two, the child would be left running)."""
    _deferring["depth"] = (_deferring["depth"] or 0) + 1
    try:
        yield
    finally:
        _deferring["depth"] = (_deferring["depth"] or 1) - 1
        pending = _deferring["pending"]
        if not _deferring["depth"] and pending is not None:
            _deferring["pending"] = None
            raise Interrupted(pending)


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """Turn SIGINT/SIGTERM into Interrupted inside the block, so a process that started children
    unwinds through its cleanup (Python's default SIGTERM ends it at once and orphans them)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, _frame: object) -> None:
        if _deferring["depth"]:
            _deferring["pending"] = signum
            return
        raise Interrupted(signum)

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def terminate(child: Child, grace_s: float = TERM_GRACE_S) -> int:
    """SIGTERM the child's group, SIGKILL it after grace_s; returns the exit code."""
    if child.popen.poll() is None:
        signal_group(child, signal.SIGTERM)
        try:
            return child.popen.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            signal_group(child, signal.SIGKILL)
    return child.popen.wait()


# -- the run -----------------------------------------------------------------------------------
