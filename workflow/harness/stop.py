"""Stopping what a run started: its processes (local or srun steps), monitors and sandbox.

Every process runs in its own process group and is killed as a group; the run ends with nothing
left behind, whether it succeeded, failed, or was interrupted. What could not be removed is
returned, so the run's status names it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import time

from prototypes.contract.processes import Child, signal_group, terminate
from workflow.harness import placement, profiler, traffic
from workflow.harness.state import GROUP_GONE_S, Run

SRUN_TASK_EXIT = re.compile(r"srun: error: \S+: task \d+: Exited with exit code (\d+)")


def stop(child: Child, where: placement.Placement | None, grace_s: float) -> int:
    """Stop child: as terminate does, or for an srun step SIGINT, SIGTERM, then SIGKILL.

    srun forwards SIGINT to its task (graceful stop); it answers SIGTERM by SIGKILLing its
    task. Only srun itself is signalled, never its group: srun's helper process cancels the
    step if srun dies (SIGKILL) with the step still running, so it must outlive srun.
    """
    if where is None or where.kind != "slurm":
        return terminate(child, grace_s)
    for sig in (where.stop_signal, signal.SIGTERM, signal.SIGKILL):
        if child.popen.poll() is not None:
            break
        with contextlib.suppress(ProcessLookupError):
            os.kill(child.popen.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.popen.wait(timeout=grace_s)
    return child.popen.wait()


def remote_exit_code(child: Child) -> int | None:
    """The exit code srun reported for the remote task, while srun itself still runs."""
    try:
        m = SRUN_TASK_EXIT.search(child.stderr_path.read_text(errors="replace"))
    except OSError:
        return None
    return int(m.group(1)) if m else None


def describe_exit(code: int) -> str:
    """An exit code as a user reads it: -9 is "-9 (killed by SIGKILL)"."""
    if code < 0:
        try:
            return f"{code} (killed by {signal.Signals(-code).name})"
        except ValueError:
            return str(code)
    return str(code)


def record_exits(run: Run) -> None:
    """The exit codes of processes that ended on their own before cleanup stops the rest: a
    process that died mid-run leaves its trace even when another one's failure ended the run."""
    for child in run.children:
        code = child.popen.poll()
        if code is not None and child.name not in run.exit_codes:
            run.exit_codes[child.name] = code


def cleanup(run: Run) -> list[str]:
    """Stop everything the run started; returns what could not be removed."""
    profiler.release(run)  # before the server it counts is stopped
    problems = _stop_children(run)
    if run.sampler is not None:
        try:
            cost = run.sampler.stop()
            run.meta["monitor"] = {
                "interval_s": run.cell.get("sample_interval_s"),
                "sampler_cpu_s": cost.thread_cpu_s,
                "sampler_wall_s": cost.wall_s,
            }
        except (RuntimeError, OSError) as exc:  # a full disk fails its last write
            problems.append(f"sampler: {exc}")
    if run.net is not None:
        with contextlib.suppress(Exception):
            run.net.stop()
    with contextlib.suppress(Exception):  # evidence only: never a reason to lose the run
        traffic.host_traffic(run)
    if run.sandbox is not None:
        traffic.sandbox_totals(run)
        try:
            run.sandbox.__exit__(None, None, None)
        except Exception as exc:
            problems.append(f"sandbox: {exc}")
        emu = run.tmp / "emulator.json"
        if emu.exists():
            with contextlib.suppress(json.JSONDecodeError):
                run.meta["emulator"] = json.loads(emu.read_text())
    return problems


def _stop_children(run: Run) -> list[str]:
    """Stop every process of the run and its group; the groups that still have members."""
    problems: list[str] = []
    srun = run.where is not None and run.where.kind == "slurm"
    for child in run.children:
        if child.popen.poll() is None:
            name = child.name
            code = stop(child, run.where, run.cell.get("stop_grace_s", 3.0))
            run.exit_codes.setdefault(name, code)
        if srun:
            # srun's helper process (same group) cancels the step through slurmctld when srun
            # died before its step ended; killing it too would leave the step on its node.
            _group_alive(child.popen.pid, GROUP_GONE_S)
        signal_group(child, signal.SIGKILL)  # helpers the leader left behind
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.popen.wait(timeout=5)
        child.watcher.join()
        if _group_alive(child.popen.pid, GROUP_GONE_S):
            problems.append(f"process group {child.popen.pid} ({child.name}) still has members")
    return problems


def _group_alive(pgid: int, wait_s: float = 0.0) -> bool:
    """Whether the process group still has members after waiting up to wait_s for it to empty.

    A member that outlives the leader (srun's helper, which exits on its own once srun is
    gone) is re-parented to init and stays in the group, as a zombie, until init reaps it:
    about a second here.
    """
    deadline = time.monotonic() + wait_s
    while True:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        if time.monotonic() >= deadline:
            return True
        time.sleep(0.05)
