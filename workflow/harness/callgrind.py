"""A run whose server runs under callgrind (the cell's server_profiler: callgrind): the
harness's side of monitors.callgrind.

The server is started under valgrind, its counts are zeroed the moment every player connected
(the window opens) and dumped the moment the last client exited (it closes). meta.json's
server_profiler says so, with the switches' times: the runs table counts the server's messages
between them (stats.per_message), the instructions' own span, not the window's. Only a local
run can be profiled: vgdb reaches the valgrind process through this machine's /tmp.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from monitors import callgrind
from prototypes.contract.processes import Child
from workflow.harness import placement
from workflow.harness.state import Run, RunFailure

CALLGRIND = "callgrind"  # the one server_profiler (workflow/schemas/cell.schema.json)
REASON = "profiler_error"  # status.json reason of a run whose profiler failed


def wanted(cell: Mapping[str, Any]) -> bool:
    """Whether the cell asks for its server under callgrind."""
    return cell.get("server_profiler") == CALLGRIND


def check(run: Run, where: placement.Placement) -> None:
    """Fail the run before anything starts when callgrind cannot profile it here."""
    if not wanted(run.cell):
        return
    if where.kind != "local":
        raise RunFailure(REASON, "server_profiler callgrind needs placement local (vgdb)")
    why = callgrind.unavailable()
    if why is not None:
        raise RunFailure(REASON, f"server_profiler callgrind: {why}")
    run.meta["server_profiler"] = {
        "tool": CALLGRIND,
        "valgrind": callgrind.version(),
        "command": callgrind.command(run.tmp),
        "environment": {"GODEBUG": callgrind.GODEBUG},
        "files": callgrind.OUT_FILE,
    }


def prefix(run: Run) -> list[str]:
    """What goes before the server's own argv: valgrind's command, or nothing."""
    return callgrind.command(run.tmp) if wanted(run.cell) else []


def environment(run: Run, env: dict[str, str]) -> dict[str, str]:
    """The server's environment: env, with what the Go runtime needs under callgrind."""
    return callgrind.environment(env) if wanted(run.cell) else env


def switch(run: Run, server: Child, on: bool) -> None:
    """Start counting (the window opened) or dump the count (it closed), recording when in
    meta.json's server_profiler; a failed switch fails the run (its count would be wrong)."""
    if not wanted(run.cell):
        return
    try:
        # `ip netns exec` execs in place and valgrind runs the server in its own process: the
        # pid the harness started is the valgrind process's.
        done = callgrind.switch(server.popen.pid, on)
    except callgrind.CallgrindError as exc:
        raise RunFailure(REASON, str(exc)) from None
    edge = "on" if on else "off"
    record = run.meta["server_profiler"]
    record[f"{edge}_unix_ns"] = done.sent_unix_ns
    record[f"{edge}_done_unix_ns"] = done.done_unix_ns
