"""The record each finished run leaves for the workflow (the layout is workflow.layout).

The record, data/raw/<campaign>/<cell-id>/<run-id>.json, not the run directory, is what
Snakemake tracks: Snakemake deletes a job's outputs before it runs the job, and measured data
must never be deleted by a workflow engine. The harness itself refuses to redo a run directory
that holds status ok, so even a lost record only costs a re-read, never a re-measurement.

A run is retried by Snakemake while attempts remain; the last failed attempt writes a record
with status failed and exits 0, so one bad run does not stop the campaign's report, which lists
it. An interrupted run (SIGINT, SIGTERM, scancel) writes no record: a restarted campaign runs
it again.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workflow import layout
from workflow.campaign import expand as campaigns
from workflow.files import read_json, write_json
from workflow.layout import RAW, record_of, record_path, run_dir

RECORD_SCHEMA = 1


def failed_attempts(out: Path) -> list[dict[str, Any]]:
    """Every failed attempt the harness set aside for this run, oldest first, as the record
    and the campaign summary list them."""
    return [_attempt_doc(a) for a in layout.failed_attempts(out)]


def _attempt_doc(attempt: layout.FailedAttempt) -> dict[str, Any]:
    status = attempt.status or {}
    return {
        "path": attempt.path.name,
        "reason": status.get("reason", "unknown"),
        "detail": str(status.get("detail", ""))[:400],
        "slurm_job_id": ((attempt.meta or {}).get("job") or {}).get("slurm_job_id"),
    }


def _job_info() -> dict[str, Any]:
    return {
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
    }


# A prototype's exit code 2 means bad arguments (CONTRACT.md section 2): the next attempt would
# get the same arguments. The reasons are the harness's for failures that do not depend on luck.
NOT_RETRIED_EXIT_CODES = {2: "exit code 2 (bad arguments) fails again with the same arguments"}
NOT_RETRIED_REASONS = {
    "disk_full": "the disk is full; retrying cannot succeed until space is freed",
    "pinning_error": "the CPUs to pin to are not available on this machine",
}


def not_retried_because(status: dict[str, Any] | None, reason: str | None) -> str | None:
    """Why a failed attempt is final although attempts remain, or None (retry it)."""
    if reason in NOT_RETRIED_REASONS:
        return NOT_RETRIED_REASONS[reason]
    for proc, code in sorted(((status or {}).get("exit_codes") or {}).items()):
        if code in NOT_RETRIED_EXIT_CODES:
            return f"{proc}: {NOT_RETRIED_EXIT_CODES[code]}"
    return None


def execute(
    run: campaigns.Run,
    campaign: str,
    *,
    attempt: int,
    attempts: int,
    raw: Path = RAW,
) -> tuple[int, dict[str, Any] | None]:
    """Run one planned run through the harness and write its record when it is final.

    Returns (exit code for Snakemake, record or None): 0 with a record when the run is ok or
    failed for the last time (or failed in a way a retry cannot mend); 1 without a record while
    retries remain; 128+signal when interrupted (no record: a restart runs it again).
    """
    from workflow.harness import benchlock
    from workflow.harness import run as harness

    out = run_dir(campaign, run.cell_id, run.run_id, raw)
    # Held from the run's start to its record (run_cell takes it again inside): a process left
    # running this run by a killed Snakemake finishes, record included, before this one starts,
    # so a stale process never overwrites a newer record.
    try:
        with benchlock.held(
            benchlock.run_lock_path(out), f"run {run.key}", harness.lock_wait_s(run.cell)
        ):
            return _execute(run, campaign, out, attempt=attempt, attempts=attempts)
    except benchlock.LockTimeout as exc:
        print(f"{run.key}: {exc}", file=sys.stderr)
        return 1, None


def _execute(
    run: campaigns.Run, campaign: str, out: Path, *, attempt: int, attempts: int
) -> tuple[int, dict[str, Any] | None]:
    from workflow.harness import run as harness

    job = {**_job_info(), "attempt": attempt, "attempts_allowed": attempts}
    t0 = time.time()
    outcome = harness.run_cell(run.cell, out, job=job)
    wall_s = time.time() - t0
    if outcome.interrupted_by is not None:
        return 128 + outcome.interrupted_by, None
    status = read_json(outcome.path / "status.json")
    final_why = None if outcome.status == "ok" else not_retried_because(status, outcome.reason)
    if outcome.status != "ok" and attempt < attempts and final_why is None:
        return 1, None
    record = build_record(
        run, campaign, out, outcome, status, read_json(outcome.path / "meta.json")
    )
    if outcome.status != "ok":
        # The attempt that failed is this one; a failed attempt's meta may be missing.
        record.update(attempt=attempt, attempts_allowed=attempts, job=job)
        record["harness_wall_s"] = round(wall_s, 3)
        record["not_retried"] = final_why if attempt < attempts else None
    try:
        write_json(record_of(out), record)
    except OSError as exc:
        # A full disk: no record can be written, so Snakemake must not count the run as done.
        why = f"{outcome.reason}: {outcome.detail}" if outcome.status != "ok" else "ok"
        print(f"{run.key}: {why}; its record cannot be written: {exc}", file=sys.stderr)
        return 1, None
    return 0, record


def build_record(
    run: campaigns.Run,
    campaign: str,
    out: Path,
    outcome: Any,
    status: dict[str, Any] | None,
    meta: dict[str, Any] | None,
) -> dict[str, Any]:
    """The run's record from what its run directory holds. For an ok run it depends on nothing
    else, so a resumed campaign that finds the run already complete writes the same record
    byte for byte (the attempt and the job that measured it come from its meta.json)."""
    ok = outcome.status == "ok"
    meta = meta or {}
    job = dict(meta.get("job") or {})
    start_ns, end_ns = meta.get("start_unix_ns"), meta.get("end_unix_ns")
    return {
        "record_schema": RECORD_SCHEMA,
        "campaign": campaign,
        "cell_id": run.cell_id,
        "run_id": run.run_id,
        "block": run.block,
        "run_order": run.cell.get("run_order"),
        "status": outcome.status,
        "reason": None if ok else (status or {}).get("reason", outcome.reason),
        "detail": "" if ok else str((status or {}).get("detail", outcome.detail))[:2000],
        "attempt": job.pop("attempt", None),
        "attempts_allowed": job.pop("attempts_allowed", None),
        "run_dir": run.run_id if ok else None,
        "failed_attempts": failed_attempts(out),
        "window_s": float(run.cell["duration_s"]),
        "harness_wall_s": (
            round((end_ns - start_ns) / 1e9, 3) if start_ns is not None and end_ns else None
        ),
        "overhead_s": meta.get("overhead_s") if ok else None,
        "start_unix_ns": start_ns if ok else None,
        "end_unix_ns": end_ns if ok else None,
        "job": job,
        "counts": (status or {}).get("counts", {}) if ok else {},
        "not_retried": None,
    }


@dataclass(frozen=True, slots=True)
class Found:
    key: str
    record: dict[str, Any] | None  # None: not run (yet), or interrupted
    failed_attempts: list[dict[str, Any]]


def collect(plan: campaigns.Plan, raw: Path = RAW) -> Iterator[Found]:
    """The state of every planned run, in execution order (the plan in memory: plan.json may
    not be written yet)."""
    doc = {"campaign": plan.name, "runs": [{"block": r.block, "cell": r.cell} for r in plan.runs]}
    for found in layout.walk(layout.campaign_dir(plan.name, raw), doc):
        yield Found(found.key, found.record, [_attempt_doc(a) for a in found.failed])


def reset_failed(plan: campaigns.Plan, raw: Path = RAW) -> list[str]:
    """Move the records of failed runs aside (kept as <run>.json.reset-<stamp>) so the next
    start of the campaign retries them; their failed attempts stay where they are."""
    moved = []
    stamp = time.strftime("%Y%m%dT%H%M%S")
    for r in plan.runs:
        path = record_path(plan.name, r.cell_id, r.run_id, raw)
        rec = read_json(path)
        if rec is not None and rec.get("status") != "ok":
            os.rename(path, path.with_name(f"{path.name}.reset-{stamp}"))
            moved.append(r.key)
    return moved
