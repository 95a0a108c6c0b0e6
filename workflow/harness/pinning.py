"""CPU pinning of a run's processes: the cell's `cpu_pinning`, checked, applied and read back.

The server and client processes get their CPUs between fork and exec (prototypes.contract.processes
.spawn), so every thread they create inherits them. The emulator is started by the sandbox and
pinned thread by thread once it is ready. meta.json records the CPUs the kernel reports for each
process afterwards, not the request.
"""

from __future__ import annotations

import os
from typing import Any

from prototypes.contract.processes import Child, affinity, pin_running


class PinningError(ValueError):
    """The cell's cpu_pinning cannot be applied here; the message names the key."""


def check(requested: dict[str, list[int]] | None, placement_kind: str) -> dict[str, list[int]]:
    """The cell's cpu_pinning (role -> CPUs) when it can be applied here; {} without one."""
    if not requested:
        return {}
    if placement_kind == "slurm":
        # srun starts the processes on other nodes: an affinity set here would bind only the
        # local srun launcher, and meta.json would record a pinning that never happened.
        raise PinningError(
            "cell key cpu_pinning: not available with placement slurm (the processes run on "
            "other nodes, where the harness cannot set their affinity); remove it and bind "
            "CPUs with srun's --cpu-bind in the cluster profile"
        )
    allowed = os.sched_getaffinity(0)
    for role, cpus in requested.items():
        missing = sorted(set(cpus) - allowed)
        if missing:
            raise PinningError(
                f"cell key cpu_pinning.{role}: CPU {', '.join(map(str, missing))} not available "
                f"here; expected CPUs from {sorted(allowed)}"
            )
    return requested


def record(meta: dict[str, Any], child: Child, cpus: list[int] | None) -> None:
    """Note in meta the CPUs the kernel gave a pinned process (read back, not the request)."""
    if cpus:
        meta.setdefault("cpu_pinning", {})[child.name] = affinity(child)


def pin_emulator(meta: dict[str, Any], sandbox: Any, cpus: list[int]) -> None:
    """Pin the sandbox's emulator; null in meta when the run has none (no impairment, or the
    kernel's netem, which runs in no process of its own)."""
    proc = getattr(sandbox, "emulator_process", None)
    if proc is None:
        meta.setdefault("cpu_pinning", {})["emulator"] = None
        return
    try:
        meta.setdefault("cpu_pinning", {})["emulator"] = pin_running(proc.pid, cpus)
    except OSError as exc:
        raise PinningError(
            f"cell key cpu_pinning.emulator: cannot pin the emulator: {exc}"
        ) from exc
