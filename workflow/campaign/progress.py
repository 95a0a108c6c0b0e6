"""What a campaign is doing and what it did: the plan on screen, runs done of total with an ETA
while it runs, and a one-screen summary at the end.

The progress line is printed by a thread in the main Snakemake process that counts run records
on disk, so it works the same with the local executor and with SLURM (where the jobs' own
output goes to SLURM's log files).
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any, TextIO

from workflow.campaign import expand as campaigns
from workflow.campaign import layout, records
from workflow.files import read_json, write_json

SUMMARY_FAILED_LINES = 8


def describe_plan(plan: campaigns.Plan) -> str:
    lines = [
        f"campaign {plan.name}: {len(plan.runs)} runs of {len(plan.cell_ids)} cells, "
        f"seed {plan.seed}, estimate {plan.estimate_s() / 60:.1f} min on one machine "
        f"({plan.window_s() / 60:.1f} min of measurement windows)"
    ]
    for u in plan.unavailable:
        lines.append(
            f"  not runnable here: {u.prototype} ({u.cells} cells, {u.runs} runs): {u.reason}"
        )
    return "\n".join(lines)


def write_plan(plan: campaigns.Plan, raw: Path) -> Path:
    """data/raw/<campaign>/plan.json; an older, different plan is kept as plans/<stamp>.json."""
    path = layout.campaign_dir(plan.name, raw) / "plan.json"
    doc = plan.to_doc()
    old = read_json(path)
    if old is not None and old.get("runs") != doc["runs"]:
        history = path.parent / "plans"
        history.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, history / f"{time.strftime('%Y%m%dT%H%M%S')}.json")
    write_json(path, doc)
    return path


def _slurm_states(job_ids: list[str]) -> dict[str, str]:
    """sacct's state of each SLURM job (CANCELLED, FAILED, TIMEOUT...), where accounting exists."""
    if not job_ids or shutil.which("sacct") is None:
        return {}
    try:
        out = subprocess.run(
            ["sacct", "-n", "-P", "-X", "-o", "JobID,State", "-j", ",".join(job_ids)],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return {}
    states = {}
    for line in out.stdout.splitlines():
        job, _, state = line.partition("|")
        if job and state:
            states[job] = state.split()[0]  # "CANCELLED by 0" -> CANCELLED
    return states


def summarize(
    plan: campaigns.Plan, raw: Path, report: Path | None = None, since_unix_ns: int | None = None
) -> dict[str, Any]:
    """The campaign's state as a document (also written as summary.json by the workflow).
    since_unix_ns: the session's start, so that a resumed campaign's share of time spent
    measuring counts only the runs of this session."""
    counts: Counter[str] = Counter()
    failed: list[dict[str, Any]] = []
    retried: list[dict[str, Any]] = []
    overheads: list[float] = []
    window_ok_s = window_session_s = 0.0
    for found in records.collect(plan, raw):
        rec = found.record
        status = "not_run" if rec is None else rec["status"]
        counts[status] += 1
        if rec is not None and rec["status"] == "ok":
            window_ok_s += float(rec.get("window_s") or 0)
            if since_unix_ns is None or int(rec.get("start_unix_ns") or 0) >= since_unix_ns:
                window_session_s += float(rec.get("window_s") or 0)
            if rec.get("overhead_s") is not None:
                overheads.append(float(rec["overhead_s"]))
        if rec is not None and rec["status"] != "ok":
            failed.append({"key": found.key, "reason": rec.get("reason"), "detail": rec["detail"]})
        if found.failed_attempts:
            retried.append({"key": found.key, "status": status, "attempts": found.failed_attempts})
    job_ids = [
        str(a["slurm_job_id"]) for r in retried for a in r["attempts"] if a.get("slurm_job_id")
    ]
    states = _slurm_states(job_ids)
    for r in retried:
        for a in r["attempts"]:
            if a.get("slurm_job_id") and str(a["slurm_job_id"]) in states:
                a["slurm_state"] = states[str(a["slurm_job_id"])]
    return {
        "campaign": plan.name,
        "seed": plan.seed,
        "runs": {
            "total": len(plan.runs),
            "ok": counts["ok"],
            "failed": counts["failed"],
            "not_run": counts["not_run"],
        },
        "failed": failed,
        "failed_attempts": retried,
        "unavailable": [campaigns._unavail(u) for u in plan.unavailable],
        "window_ok_s": round(window_ok_s, 1),
        "window_session_s": round(window_session_s, 1),
        "overhead_s_median": round(statistics.median(overheads), 3) if overheads else None,
        "raw": str(layout.campaign_dir(plan.name, raw)),
        "report": str(report) if report is not None and report.is_file() else None,
    }


def format_summary(doc: dict[str, Any], wall_s: float | None = None) -> str:
    r = doc["runs"]
    lines = [
        f"== campaign {doc['campaign']}: {r['ok']} of {r['total']} runs ok, {r['failed']} failed, "
        f"{r['not_run']} not run =="
    ]
    if wall_s:
        measured = doc.get("window_session_s", doc["window_ok_s"])
        share = measured / wall_s if wall_s > 0 else 0.0
        lines.append(
            f"wall {wall_s / 60:.1f} min, measuring {measured / 60:.1f} min "
            f"({share:.0%}); median overhead per run {doc['overhead_s_median']} s"
        )
    for f in doc["failed"][:SUMMARY_FAILED_LINES]:
        first = (f["detail"] or "").splitlines()[0][:100] if f["detail"] else ""
        lines.append(f"  FAILED {f['key']}: {f['reason']} {first}".rstrip())
    if len(doc["failed"]) > SUMMARY_FAILED_LINES:
        lines.append(f"  ... and {len(doc['failed']) - SUMMARY_FAILED_LINES} more failed runs")
    attempts = [a for x in doc["failed_attempts"] for a in x["attempts"]]
    if attempts:
        reasons = Counter(
            a["reason"] + (f" ({a['slurm_state']})" if a.get("slurm_state") else "")
            for a in attempts
        )
        text = ", ".join(f"{n}x {why}" for why, n in reasons.most_common())
        lines.append(f"failed attempts kept ({len(attempts)}): {text}")
    for u in doc["unavailable"]:
        lines.append(f"not runnable here: {u['prototype']} ({u['runs']} runs): {u['reason']}")
    lines.append(f"raw data: {doc['raw']}")
    if doc["report"]:
        lines.append(f"report: {doc['report']}")
    elif r["not_run"]:
        lines.append("resume: run the same command again; finished runs are kept as they are")
    return "\n".join(lines)


class Monitor:
    """Prints `runs done/total, ETA` whenever the number of finished runs changes (and at
    least every `every_s`), from the records on disk."""

    def __init__(
        self,
        plan: campaigns.Plan,
        raw: Path,
        *,
        parallel: int = 1,
        every_s: float = 60.0,
        poll_s: float = 1.0,
        out: TextIO = sys.stderr,
    ) -> None:
        self.plan, self.raw, self.parallel = plan, raw, max(1, parallel)
        self.every_s, self.poll_s, self.out = every_s, poll_s, out
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="netstick-progress", daemon=True)
        self._paths = [layout.record_path(plan.name, r.cell_id, r.run_id, raw) for r in plan.runs]
        self._estimates = [r.estimate_s() for r in plan.runs]
        self._initial_est = sum(
            e for e, p in zip(self._estimates, self._paths, strict=True) if p.is_file()
        )

    def start(self) -> Monitor:
        self._thread.start()
        return self

    def stop(self) -> float:
        """Stop and print the final count (the last run may finish between two polls)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        print(self.line(), file=self.out, flush=True)
        return time.monotonic() - self.started

    def _done(self) -> tuple[int, int]:
        done = failed = 0
        for p in self._paths:
            if p.is_file():
                done += 1
                rec = read_json(p)
                if rec is not None and rec.get("status") != "ok":
                    failed += 1
        return done, failed

    def line(self) -> str:
        done, failed = self._done()
        total = len(self._paths)
        elapsed = time.monotonic() - self.started
        finished = [p.is_file() for p in self._paths]
        done_est = sum(e for e, f in zip(self._estimates, finished, strict=True) if f)
        left_est = sum(e for e, f in zip(self._estimates, finished, strict=True) if not f)
        session_est = done_est - self._initial_est
        # The pace measured in this session (wall per estimated second) once a run has finished;
        # before that the estimate spread over the parallel jobs.
        eta = elapsed / session_est * left_est if session_est > 0 else left_est / self.parallel
        pct = 100.0 * done / total if total else 100.0
        fail = f", {failed} failed" if failed else ""
        return (
            f"netstick: campaign {self.plan.name}: {done}/{total} runs ({pct:.0f}%){fail}, "
            f"elapsed {_dur(elapsed)}, ETA {_dur(eta)}"
        )

    def _loop(self) -> None:
        last_done, last_print = -1, 0.0
        while not self._stop.wait(self.poll_s):
            done = self._done()[0]
            now = time.monotonic()
            if done != last_done or now - last_print >= self.every_s:
                print(self.line(), file=self.out, flush=True)
                last_done, last_print = done, now


def _dur(seconds: float) -> str:
    s = round(max(0.0, seconds))
    if s >= 3600:
        return f"{s // 3600} h {s % 3600 // 60:02d} min"
    if s >= 60:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s} s"


def write_summary(doc: dict[str, Any], raw: Path) -> Path:
    path = layout.campaign_dir(doc["campaign"], raw) / "summary.json"
    write_json(path, doc)
    return path
