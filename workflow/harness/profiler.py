"""The server's profiler, whichever the cell's server_profiler names: the one seam the harness
calls at each step of a run.

    check        before anything starts: fail the run when the profiler cannot work here
    prefix       what goes before the server's argv (valgrind's command, or nothing)
    environment  the server's environment
    switch       the window opened (start counting) or closed (take the count)
    release      cleanup: stop a profiler still attached when the run ended early

callgrind (workflow.harness.callgrind) runs the server under valgrind; perf
(workflow.harness.perfstat) attaches the CPU's counter to the server at full speed. Each
answers only for the cells that name it, so a cell without server_profiler passes through.
"""

from __future__ import annotations

from prototypes.contract.processes import Child
from workflow.harness import callgrind, perfstat, placement
from workflow.harness.state import Run


def check(run: Run, where: placement.Placement) -> None:
    """Fail the run (RunFailure, reason profiler_error) when its profiler cannot work here."""
    callgrind.check(run, where)
    perfstat.check(run, where)


def prefix(run: Run) -> list[str]:
    """What goes before the server's own argv."""
    return callgrind.prefix(run)


def environment(run: Run, env: dict[str, str]) -> dict[str, str]:
    """The server's environment: env, with what its profiler needs."""
    return callgrind.environment(run, env)


def switch(run: Run, server: Child, on: bool) -> None:
    """The window opened (on) or closed: start counting or take the count."""
    callgrind.switch(run, server, on)
    perfstat.switch(run, server, on)


def release(run: Run) -> None:
    """Stop a profiler still attached when the run ends early (its count is not used)."""
    perfstat.release(run)
