"""What one run of the harness holds while it runs, how it ends, and its timing bounds.

The phases (workflow.harness.run), the run directory (rundir), stopping (stop) and the traffic
counters (traffic) all work on the one Run record defined here, so that cleanup can stop
whatever a run started, however far it got.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from monitors.sampler import Sampler
from prototypes.contract.processes import Child
from workflow.harness import placement

CLIENT_EXIT_SLACK_S = 20.0  # beyond the duration: drain, disconnect, flush
MIN_LOCK_WAIT_S = 1800.0
EXIT_STATUS_WAIT_S = 2.0  # a process whose stdout closed has exited or will within this
GROUP_GONE_S = 5.0  # a killed process group's last zombies are reaped by init within this


class RunFailure(Exception):
    """The run failed for a reason of status.json (not_ready, server_exit, ...)."""

    def __init__(self, reason: str, detail: str, **counts: int) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail
        self.counts = counts


@dataclass
class Outcome:
    """What run_cell did: where the record is and whether it counts as data."""

    status: str  # ok | failed
    reason: str | None
    detail: str
    path: Path
    interrupted_by: int | None = None


@dataclass
class Run:
    """Everything a run started, so cleanup can stop it whatever happened."""

    cell: dict[str, Any]
    tmp: Path
    children: list[Child] = field(default_factory=list)
    sampler: Sampler | None = None
    counter: Any = None  # the perf stat attached to the server in its window (perfstat.py)
    net: Any = None
    sandbox: Any = None
    phases: dict[str, float] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    exit_codes: dict[str, int | None] = field(default_factory=dict)
    where: placement.Placement | None = None  # how cleanup must stop the children
    # The machine lock (benchlock): released after cleanup, when nothing of the run is left.
    locks: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    manifest: Any = None  # the prototype's manifest, once loaded
    baseline: dict[str, Any] = field(default_factory=dict)
    host_start: tuple[float, Any] | None = None

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        t0 = time.monotonic()
        try:
            yield
        finally:
            self.phases[name] = round(self.phases.get(name, 0.0) + time.monotonic() - t0, 4)
