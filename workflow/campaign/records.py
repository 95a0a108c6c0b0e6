"""The record each finished run leaves for the workflow (the layout is workflow.campaign.layout).

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
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workflow.campaign import expand as campaigns
from workflow.campaign import layout
from workflow.campaign.layout import RAW, record_path, run_dir
from workflow.files import read_json, write_json

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
    failed for the last time; 1 without a record while retries remain; 128+signal when
    interrupted (no record: a restart runs it again).
    """
    from workflow.harness import run as harness

    out = run_dir(campaign, run.cell_id, run.run_id, raw)
    t0 = time.time()
    outcome = harness.run_cell(run.cell, out, job=_job_info())
    wall_s = time.time() - t0
    if outcome.interrupted_by is not None:
        return 128 + outcome.interrupted_by, None
    if outcome.status != "ok" and attempt < attempts:
        return 1, None
    status = read_json(out / "status.json") if outcome.status == "ok" else None
    meta = read_json(out / "meta.json") if outcome.status == "ok" else None
    record = {
        "record_schema": RECORD_SCHEMA,
        "campaign": campaign,
        "cell_id": run.cell_id,
        "run_id": run.run_id,
        "block": run.block,
        "run_order": run.cell.get("run_order"),
        "status": outcome.status,
        "reason": outcome.reason,
        "detail": outcome.detail[:2000],
        "attempt": attempt,
        "attempts_allowed": attempts,
        "run_dir": run.run_id if outcome.status == "ok" else None,
        "failed_attempts": failed_attempts(out),
        "window_s": float(run.cell["duration_s"]),
        "harness_wall_s": round(wall_s, 3),
        "overhead_s": (meta or {}).get("overhead_s"),
        "start_unix_ns": (meta or {}).get("start_unix_ns"),
        "end_unix_ns": (meta or {}).get("end_unix_ns"),
        "job": _job_info(),
        "counts": (status or {}).get("counts", {}),
    }
    write_json(record_path(campaign, run.cell_id, run.run_id, raw), record)
    return 0, record


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
