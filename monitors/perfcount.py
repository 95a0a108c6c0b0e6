"""Hardware instruction counters: whether this machine has them, asked of `perf stat`.

On bare metal (a DAS-6 node, say) `perf stat -e instructions:u` counts a process's user-space
instructions with the CPU's own counter at no slowdown, the quiet metric callgrind gives at
~20-50x the server's CPU. In a virtual machine without a virtual PMU the kernel has no such event
and perf answers `<not supported>` (this development VM); a kernel that restricts perf events
(perf_event_paranoid) refuses with an error instead. Every run records which (the harness's
provenance, `instruction_counter`), so a result says whether counters could have been used, and
a bench that chooses its metric says why it fell back to callgrind.

    perf stat -x , -e instructions:u -- true      -> "<count>,,instructions:u,..." on stderr
"""

from __future__ import annotations

import functools
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any, Final

EVENT: Final = "instructions:u"
TIMEOUT_S: Final = 10.0
# perf stat's CSV count field when the event gave no count.
NO_COUNT: Final = ("<not supported>", "<not counted>")


def parse_stat_csv(text: str, event: str = EVENT) -> int | str:
    """The count of event in `perf stat -x ,` output: an int, or perf's reason for none
    (`<not supported>`, `<not counted>`). ValueError naming the event when no line has it."""
    for line in text.splitlines():
        fields = line.split(",")
        if len(fields) >= 3 and fields[2] == event:
            count = fields[0].strip()
            if count in NO_COUNT:
                return count
            try:
                return int(count)
            except ValueError:
                raise ValueError(f"perf stat: count {count!r} of {event}: not a number") from None
    raise ValueError(f"perf stat: no line for event {event} in its output")


@functools.cache
def status(event: str = EVENT) -> dict[str, Any]:
    """Whether this machine counts event: {"event", "available", "reason"} (reason None when
    available). Cached: the answer does not change while a process runs."""
    out: dict[str, Any] = {"event": event, "available": False, "reason": None}
    if shutil.which("perf") is None:
        return out | {"reason": "perf not found on PATH (Debian: linux-perf)"}
    argv = ["perf", "stat", "-x", ",", "-e", event, "--", "true"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return out | {"reason": f"{' '.join(argv)}: {exc}"}
    try:
        count = parse_stat_csv(done.stderr, event)
    except ValueError:
        said = [ln.strip() for ln in done.stderr.splitlines() if ln.strip()][:2]
        return out | {"reason": f"{' '.join(argv)} exited {done.returncode}: {' '.join(said)}"}
    if isinstance(count, str):
        return out | {"reason": f"perf stat says {count} for {event} (no hardware counter here)"}
    return out | {"available": True}


# -- counting a running server's window ---------------------------------------------------------
# The harness attaches `perf stat -p PID` to the server when the window opens and stops it with
# SIGINT when the window closes (perf then writes its count and exits; SIGTERM would kill it
# without a count). Attaching counts every thread the server has and, by inheritance, every
# thread it starts later. perf needs a moment to open its counters after it starts (tens of ms),
# the same in every run, so the span counted begins a little after on_unix_ns.
OUT_FILE: Final = "server.perf-stat.csv"
DETACH_TIMEOUT_S: Final = 10.0


class PerfError(RuntimeError):
    """perf could not count the window, or its output cannot be read."""


def attach_command(pid: int, out: Path, event: str = EVENT) -> list[str]:
    """The argv that counts event in process pid (all its threads) into out until SIGINT."""
    return ["perf", "stat", "-x", ",", "-e", event, "-p", str(pid), "-o", str(out)]


def detach(popen: subprocess.Popen[bytes], timeout_s: float = DETACH_TIMEOUT_S) -> int:
    """Stop an attached perf stat (SIGINT: it writes its count and exits); the time it was
    sent, ns since the epoch. PerfError when perf had already exited or does not stop."""
    if popen.poll() is not None:
        raise PerfError(f"perf stat exited with {popen.returncode} before the window closed")
    sent = time.time_ns()
    popen.send_signal(signal.SIGINT)
    try:
        code = popen.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise PerfError(f"perf stat did not stop within {timeout_s:g} s of SIGINT") from None
    # perf stat exits 0 after SIGINT, or with the signal's code when it reports it as such.
    if code not in (0, -signal.SIGINT, 128 + signal.SIGINT):
        raise PerfError(f"perf stat exited with {code} after SIGINT")
    return sent


def read_count(run_dir: Path, event: str = EVENT) -> int:
    """The server's count of event over the window (OUT_FILE in run_dir). FileNotFoundError
    without the file; ValueError naming the file when perf gave no count."""
    path = run_dir / OUT_FILE
    count = parse_stat_csv(path.read_text(encoding="utf-8"), event)
    if isinstance(count, str):
        raise ValueError(f"{path}: perf stat gave no count of {event}: {count}")
    return count
