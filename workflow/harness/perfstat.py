"""A run whose server's instructions are counted by the CPU (the cell's server_profiler: perf):
the harness's side of monitors.perfcount.

When every player connected (the window opens) `perf stat -p <server pid> -e instructions:u` is
attached to the server; when the last client exited (it closes) perf is stopped with SIGINT and
writes the count (server.perf-stat.csv in the run directory). meta.json's server_profiler
records the tool, the event and the two switches' times, so the runs table counts the server's
messages between them, exactly as for callgrind (stats.per_message). Unlike callgrind the server
runs at full speed, so the cell's load is any the server keeps up with.

It needs a hardware instruction counter (bare metal such as a DAS-6 node); where perf has none
(`<not supported>` in a VM without a virtual PMU, this development machine) or may not use it
(perf_event_paranoid), the run fails before anything starts, naming perf's answer, and
server_profiler callgrind is the way to count instructions there. Local placement only: perf
attaches to a process of this machine.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import time
from collections.abc import Mapping
from typing import Any

from monitors import perfcount
from prototypes.contract.processes import Child
from workflow.harness import placement
from workflow.harness.state import Run, RunFailure

PERF = "perf"  # the server_profiler value (workflow/schemas/cell.schema.json)
REASON = "profiler_error"  # status.json reason of a run whose profiler failed (as callgrind's)


def wanted(cell: Mapping[str, Any]) -> bool:
    """Whether the cell asks for its server's instructions counted by perf."""
    return cell.get("server_profiler") == PERF


def check(run: Run, where: placement.Placement) -> None:
    """Fail the run before anything starts when perf cannot count instructions here."""
    if not wanted(run.cell):
        return
    if where.kind != "local":
        raise RunFailure(REASON, "server_profiler perf needs placement local (perf attaches here)")
    status = perfcount.status()
    if not status["available"]:
        raise RunFailure(
            REASON,
            f"server_profiler perf: {status['reason']}; server_profiler callgrind counts "
            "instructions without a hardware counter",
        )
    run.meta["server_profiler"] = {
        "tool": PERF,
        "event": perfcount.EVENT,
        "command": perfcount.attach_command(0, run.tmp / perfcount.OUT_FILE)[:-4],
        "files": perfcount.OUT_FILE,
    }


def switch(run: Run, server: Child, on: bool) -> None:
    """Attach perf to the server (the window opened) or stop it (it closed), recording when in
    meta.json's server_profiler; a failed switch fails the run (its count would be wrong)."""
    if not wanted(run.cell):
        return
    record = run.meta["server_profiler"]
    if on:
        argv = perfcount.attach_command(server.popen.pid, run.tmp / perfcount.OUT_FILE)
        record["on_unix_ns"] = time.time_ns()
        with (run.tmp / "perf.stderr.log").open("wb") as err:
            run.counter = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err
            )
        return
    popen, run.counter = run.counter, None
    if popen is None:
        raise RunFailure(REASON, "server_profiler perf: the window closed with no perf attached")
    try:
        record["off_unix_ns"] = perfcount.detach(popen)
    except perfcount.PerfError as exc:
        raise RunFailure(REASON, f"server_profiler perf: {exc}") from None
    record["off_done_unix_ns"] = time.time_ns()


def release(run: Run) -> None:
    """Stop a perf still attached when the run ends early (cleanup): its count is not used."""
    popen, run.counter = run.counter, None
    if popen is not None and popen.poll() is None:
        popen.send_signal(signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            popen.wait(timeout=perfcount.DETACH_TIMEOUT_S)
        if popen.poll() is None:
            popen.kill()
            popen.wait()
