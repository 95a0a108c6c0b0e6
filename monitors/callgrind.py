"""The server's instructions under callgrind: the command that runs it, the switches that
count only the measurement window, and the count read back.

Instructions executed are the one cost of a process that other processes on a shared machine do
not change (time, CPU time and cache misses all move with the neighbours), so a server run under
callgrind at a small fixed offered load gives an instruction count per message whose spread
between identical runs is far below that of CPU time. The price: callgrind runs the server's
own code ~20-50x slower (its CPU per message, kernel networking included, grows ~4x here), so
the load must be one it keeps up with (a cell key, server_profiler, asks for it;
workflow.harness.callgrind does the rest; `netstick bench noise` measures the load it keeps up
with).

    valgrind --tool=callgrind ... SERVER ARGS                   (command, environment)
    vgdb --pid=PID zero                                         the window opens (switch)
    vgdb --pid=PID dump window -c instrumentation off           it closes

The server is instrumented from its start, its counts are zeroed when the window opens and
dumped, with the hint "window", when it closes: startup, joins and shutdown are never counted.
Zeroing rather than switching instrumentation on spares the window the re-translation of the
code that switching on costs (a stall of ~170 ms against ~120 ms, measured). Instrumentation is
switched off after the dump because a SIGTERM handled while instrumenting trips callgrind's
assertion `sigNum == current_state.sig` (valgrind 3.19, seen here) and the server would die
instead of stopping. The window's dump is <OUT_FILE>.<n> beside <OUT_FILE>, which valgrind
writes at exit (read_instructions reads the window's dump alone).

Every vgdb command stops the server for ~120 ms (measured here, on an idle and a loaded server
alike: valgrind's gdbserver lingers for vgdb): at the window's start its messages wait in the
kernel and are handled in a burst after it. The same in every run, so it moves the level of
instructions per message a little, not its spread.

Go needs GODEBUG=asyncpreemptoff=1 under callgrind: the runtime's preemption signal (SIGURG)
trips the same assertion within seconds of the start. Without asynchronous preemption a
goroutine is preempted only at function calls, which the server's short handlers make often.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

OUT_FILE = "server.callgrind.out"  # in the run directory; dumps are OUT_FILE.<n>
WINDOW_HINT = "window"  # the window's dump says `desc: Trigger: dump window`
LOG_FILE = "server.valgrind.log"  # valgrind's own messages, kept out of the server's stderr
GODEBUG = "asyncpreemptoff=1"
# 0: vgdb never forces the command in with ptrace; the server's valgrind polls for it every
# few thousand basic blocks, which a server ticking at 60 Hz runs within ~10-30 ms (measured).
MAX_INVOKE_MS = 0
SWITCH_TIMEOUT_S = 30.0  # a command a live valgrind has not taken by then never will
_OUT_NAME = re.compile(re.escape(OUT_FILE) + r"(\.\d+)?(-\d+)?")


class CallgrindError(RuntimeError):
    """callgrind cannot run here, a switch failed, or its output cannot be read."""


@dataclass(frozen=True, slots=True)
class Switch:
    """When a switch command was sent and when vgdb returned, ns since the Unix epoch.

    The command takes effect between the two, when the server's valgrind next polls (8-27 ms
    after sent_unix_ns measured here); the rest of the call, up to done_unix_ns, is the dump
    being written and vgdb leaving. sent_unix_ns is the edge: both switches land after it alike,
    so the span counted and the span of the messages differ by the difference of two such
    delays (~10 ms, 0.2 % of a 5 s window)."""

    sent_unix_ns: int
    done_unix_ns: int


def unavailable() -> str | None:
    """Why callgrind cannot run here (valgrind or vgdb missing), or None when it can."""
    missing = [tool for tool in ("valgrind", "vgdb") if shutil.which(tool) is None]
    if missing:
        return f"{' and '.join(missing)} not found on PATH (install the valgrind package)"
    return None


def version() -> str | None:
    """valgrind --version (e.g. valgrind-3.19.0), None when it cannot be run."""
    try:
        out = subprocess.run(
            ["valgrind", "--version"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def command(run_dir: Path) -> list[str]:
    """The argv prefix that runs a server under callgrind, counting nothing until switched on,
    its counts and messages written into run_dir."""
    return [
        "valgrind",
        "--tool=callgrind",
        f"--callgrind-out-file={run_dir / OUT_FILE}",
        f"--log-file={run_dir / LOG_FILE}",
    ]


def environment(env: Mapping[str, str]) -> dict[str, str]:
    """env with GODEBUG=asyncpreemptoff=1 added to whatever GODEBUG it already holds."""
    out = dict(env)
    godebug = out.get("GODEBUG", "")
    out["GODEBUG"] = f"{godebug},{GODEBUG}" if godebug else GODEBUG
    return out


def switch(pid: int, on: bool, timeout_s: float = SWITCH_TIMEOUT_S) -> Switch:
    """Start counting the window (zero the counts) or end it (dump them with the window's
    hint, then stop instrumenting) in the valgrind process pid.

    Raises CallgrindError naming the command when vgdb fails (no valgrind gdbserver at pid:
    the process is not under valgrind, or has exited)."""
    commands = ["zero"] if on else ["dump", WINDOW_HINT, "-c", "instrumentation", "off"]
    argv = ["vgdb", f"--pid={pid}", f"--max-invoke-ms={MAX_INVOKE_MS}", *commands]
    sent = time.time_ns()
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise CallgrindError(f"{' '.join(argv)}: no answer within {timeout_s:g} s") from None
    except OSError as exc:
        raise CallgrindError(f"{' '.join(argv)}: {exc}") from None
    done = time.time_ns()
    if out.returncode != 0:
        said = (out.stderr or out.stdout).strip().splitlines()[-3:]
        raise CallgrindError(f"{' '.join(argv)} exited with {out.returncode}: {' / '.join(said)}")
    return Switch(sent, done)


def parse_instructions(text: str, source: str = "callgrind output") -> int:
    """The instructions (event Ir) one callgrind output file counted: each part's `totals:`
    line, or its `summary:` line where it has none, added over the file's parts.

    totals is preferred: with counting switched on and off, callgrind 3.19 writes `summary: 0`
    over parts whose totals are not. Raises ValueError naming source when a part has neither
    line or the file names no Ir event."""
    events: list[str] = []
    parts: list[dict[str, int]] = [{}]  # per part: "totals" and/or "summary"
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        if key == "part" and parts[-1]:
            parts.append({})
        elif key == "events":
            events = value.split()
        elif key in ("totals", "summary"):
            if "Ir" not in events:
                raise ValueError(f"{source}: {key} before an `events:` line naming Ir")
            try:
                parts[-1][key] = int(value.split()[events.index("Ir")])
            except (IndexError, ValueError):
                raise ValueError(f"{source}: {key} line {line!r} has no Ir count") from None
    if not all(parts):
        raise ValueError(
            f"{source}: no `totals:` or `summary:` line (not a callgrind output file?)"
        )
    return sum(part.get("totals", part.get("summary", 0)) for part in parts)


def output_files(run_dir: Path) -> list[Path]:
    """The callgrind output files of a run: OUT_FILE and its dumps OUT_FILE.<n>."""
    return sorted(p for p in run_dir.iterdir() if _OUT_NAME.fullmatch(p.name))


def read_instructions(run_dir: Path) -> int:
    """The server's instructions over the window: the count of the run's window dump (the
    callgrind output file whose trigger is `dump window`). Raises FileNotFoundError when the run
    has none, ValueError when it has two or the file is not callgrind output."""
    trigger = f"desc: Trigger: dump {WINDOW_HINT}"
    texts = {p: p.read_text(encoding="utf-8") for p in output_files(run_dir)}
    window = [(p, t) for p, t in texts.items() if trigger in t.splitlines()]
    if not window:
        raise FileNotFoundError(f"{run_dir / OUT_FILE}.<n>: no callgrind dump of the window")
    if len(window) > 1:
        names = ", ".join(p.name for p, _ in window)
        raise ValueError(f"{run_dir}: {len(window)} callgrind dumps of the window ({names})")
    path, text = window[0]
    return parse_instructions(text, str(path))
