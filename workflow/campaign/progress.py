"""What a campaign is doing and what it did: the plan on screen, runs done of total with an ETA
while it runs, a one-screen summary at the end, and its state at any time (`netstick campaign
status`: per cell, runs ok, failed, not run, in flight). A failed run is shown with its cause:
the reason, the failing process's exit code, the attempts made and its last stderr lines.

The progress line is printed by a thread in the main Snakemake process that counts run records
on disk, so it works the same with the local executor and with SLURM (where the jobs' own
output goes to SLURM's log files).
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import psutil

from workflow import layout
from workflow.campaign import expand as campaigns
from workflow.campaign import records
from workflow.files import read_json, write_json
from workflow.harness import benchlock

SUMMARY_FAILED_LINES = 8
CAUSE_CHARS = 200  # a stderr line on the console is cut to this
# A process whose start is later than the last change to a run's work directory cannot be the
# one that wrote it (the pid was reused): the slack covers the clocks' resolutions.
OWNER_START_SLACK_S = 1.0


def describe_plan(plan: campaigns.Plan) -> str:
    lines = [
        f"campaign {plan.name}: {len(plan.runs)} runs of {len(plan.cell_ids)} cells, "
        f"seed {plan.seed}, estimate {plan.estimate_s() / 60:.1f} min on one machine "
        f"({plan.window_s() / 60:.1f} min of measurement windows)"
    ]
    for (proto, transport, library), versions in campaigns.versions_in(plan).items():
        lines.append(f"  {proto} {transport}: {library} {', '.join(versions)}")
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
    found_runs = records.collect(plan, raw)
    for run, found in zip(plan.runs, found_runs, strict=True):
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
            out = layout.run_dir(plan.name, run.cell_id, run.run_id, raw)
            failed.append(_failure_doc(found.key, rec, layout.failed_attempts(out)))
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


def _failure_doc(
    key: str, record: dict[str, Any] | None, attempts: Sequence[layout.FailedAttempt]
) -> dict[str, Any]:
    """A failed run as summary.json and `campaign status --json` list it: its key, the
    record's detail and its cause (layout.Failure)."""
    failure = layout.failure_of(record, attempts)
    doc: dict[str, Any] = {"key": key}
    if failure is not None:
        doc.update(failure.to_doc())
    doc["detail"] = (record or {}).get("detail", "")
    doc["not_retried"] = (record or {}).get("not_retried")
    return doc


def format_failure(doc: dict[str, Any], label: str = "FAILED") -> list[str]:
    """One line per failed run (key, reason, exit code, attempts, the last stderr line), then
    the stderr lines before it, indented."""
    what = [str(doc.get("reason") or "unknown")]
    code = doc.get("exit_code")
    if code is not None:
        what.append(f"exit code {code}{_signal_name(code)}")
    attempts = int(doc.get("attempts") or 1)
    # A failure a retry cannot mend (records.not_retried_because) ends the run early.
    early = " (not retried)" if doc.get("not_retried") else ""
    what.append(f"{attempts} attempt{'s' if attempts != 1 else ''}{early}")
    stderr = [str(x) for x in doc.get("stderr") or []]
    cause = stderr[-1] if stderr else str(doc.get("summary") or "")
    head = f"  {label} {doc['key']}: {', '.join(what)}"
    lines = [f"{head}: {_cut(cause)}" if cause else head]
    lines += [f"      {_cut(x)}" for x in stderr[:-1]]
    return lines


def _signal_name(exit_code: int) -> str:
    """ " (SIGKILL)" for -9: a process killed by a signal."""
    try:
        return f" ({signal.Signals(-exit_code).name})" if exit_code < 0 else ""
    except ValueError:
        return ""


def _cut(text: str) -> str:
    return text if len(text) <= CAUSE_CHARS else text[: CAUSE_CHARS - 3] + "..."


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
        lines += format_failure(f)
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


STATES = ("ok", "failed", "not_run", "running", "stale")


def _owner_start_unix_s(work: Path, pid: int) -> float | None:
    """When pid started, if it is alive and is the process that writes the work directory (not
    a later process that got its pid); else None."""
    try:
        proc = psutil.Process(pid)
        started = proc.create_time()
        if proc.status() == psutil.STATUS_ZOMBIE:
            return None
        return started if started <= work.stat().st_mtime + OWNER_START_SLACK_S else None
    except (psutil.Error, OSError):
        return None


def _last_write_unix_s(work: Path) -> float:
    """When anything in the work directory (or its logs/) last changed."""
    newest = 0.0
    for d in (work, work / "logs"):
        try:
            newest = max(newest, d.stat().st_mtime)
            newest = max([newest, *(e.stat().st_mtime for e in d.iterdir())])
        except OSError:
            continue
    return newest


def _run_lock(out: Path) -> tuple[bool | None, dict[str, Any] | None]:
    """Whether a process holds the run's lock now (benchlock: held from a run's start to its
    record, and released by the kernel when its holder dies), and who holds or last held it;
    (None, None) where the run has no lock file (a harness that took none)."""
    path = benchlock.run_lock_path(out)
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None, None
    try:
        # A shared lock for an instant: two status commands never wait for each other, and a
        # harness starting at that very instant retries a moment later.
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        held = False
    except OSError as exc:
        if exc.errno not in (errno.EWOULDBLOCK, errno.EACCES):
            return None, None
        held = True
    finally:
        os.close(fd)
    return held, read_json(path)


def _in_flight(run: layout.RawRun, now_s: float) -> dict[str, Any] | None:
    """Running: a process holds the run's lock (or, without a lock file, a live process writes
    its work directory). Stale: nobody does, yet a work directory is left and the run has no
    record. None otherwise."""
    held, holder = _run_lock(run.run_dir)
    work = layout.work_dirs(run.run_dir)
    live = [
        (path, pid, t) for path, pid in work if (t := _owner_start_unix_s(path, pid)) is not None
    ]
    if held or (held is None and live):
        doc: dict[str, Any] = {"key": run.key, "state": "running", "attempt": len(run.failed) + 1}
        here = socket.gethostname()
        if held and holder and "pid" in holder:
            doc.update(pid=holder["pid"], host=holder.get("host"))
        else:
            doc.update(pid=live[0][1], host=here)
        started = next((t for path, pid, t in live if pid == doc["pid"]), None)
        if doc["host"] == here and started is not None:
            doc["elapsed_s"] = round(max(0.0, now_s - started), 1)
        doc["dir"] = str(live[0][0]) if live else str(work[-1][0]) if work else None
        return doc
    if work and run.record is None:
        path, pid = work[-1]
        return {
            "key": run.key,
            "state": "stale",
            "attempt": len(run.failed) + 1,
            "pid": pid,
            "dir": str(path),
            "idle_s": round(max(0.0, now_s - _last_write_unix_s(path)), 1),
        }
    return None


def status(plan: campaigns.Plan, raw: Path, now_s: float | None = None) -> dict[str, Any]:
    """Where every planned run stands now, from what is on disk: per cell runs ok, failed, not
    run, running (a live process holds the run's lock) and stale (its writer died, leaving a
    work directory and no record: the next start runs it again); every failed run with its
    cause; every run in flight; and, for runs not finished (not run, running or stale) with
    failed attempts, the cause of the last one (earlier_failures)."""
    now = time.time() if now_s is None else now_s
    doc = {"campaign": plan.name, "runs": [{"block": r.block, "cell": r.cell} for r in plan.runs]}
    cells: dict[str, Counter[str]] = {}
    failed: list[dict[str, Any]] = []
    in_flight: list[dict[str, Any]] = []
    earlier: list[dict[str, Any]] = []
    for run in layout.walk(layout.campaign_dir(plan.name, raw), doc):
        flight = _in_flight(run, now)
        state = run.status if flight is None else str(flight["state"])
        cells.setdefault(run.cell_id, Counter())[state] += 1
        if flight is not None:
            in_flight.append(flight)
        if state == "failed":
            failed.append(_failure_doc(run.key, run.record, run.failed))
        elif state != "ok" and run.failed:
            earlier.append({**_failure_doc(run.key, None, run.failed), "state": state})
    totals = Counter[str]()
    for counts in cells.values():
        totals.update(counts)
    return {
        "campaign": plan.name,
        "seed": plan.seed,
        "runs": {"total": len(plan.runs), **{s: totals[s] for s in STATES}},
        "cells": [{"cell_id": c, **{s: n[s] for s in STATES}} for c, n in cells.items()],
        "failed": failed,
        "in_flight": in_flight,
        "earlier_failures": earlier,
        "raw": str(layout.campaign_dir(plan.name, raw)),
    }


def format_status(doc: dict[str, Any]) -> str:
    r = doc["runs"]
    lines = [
        f"campaign {doc['campaign']}: {r['total']} runs of {len(doc['cells'])} cells: "
        f"{r['ok']} ok, {r['failed']} failed, {r['running']} running, {r['stale']} stale, "
        f"{r['not_run']} not run"
    ]
    header = ("ok", "failed", "not run", "running", "stale")
    lines.append("  " + " ".join(f"{h:>7}" for h in header) + "  cell")
    for c in doc["cells"]:
        lines.append("  " + " ".join(f"{c[s]:>7}" for s in STATES) + f"  {c['cell_id']}")
    if doc["failed"]:
        lines.append(f"failed ({len(doc['failed'])}):")
        for f in doc["failed"]:
            lines += format_failure(f)
    for f in doc["in_flight"]:
        if f["state"] == "running":
            where = f"pid {f['pid']}" + (f" on {f['host']}" if f.get("host") else "")
            since = f", for {_dur(f['elapsed_s'])}" if f.get("elapsed_s") is not None else ""
            lines.append(f"  RUNNING {f['key']}: attempt {f['attempt']}, {where}{since}")
        else:
            lines.append(
                f"  STALE {f['key']}: attempt {f['attempt']}, pid {f['pid']} is gone and left "
                f"no record (last write {_dur(f['idle_s'])} ago); the next start runs it again"
            )
    if doc["earlier_failures"]:
        lines.append("runs not finished whose last attempt failed:")
        for f in doc["earlier_failures"]:
            lines += format_failure(f, label="ATTEMPT FAILED")
    lines.append(f"raw data: {doc['raw']}")
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
        self._seen: dict[Path, tuple[tuple[int, int], bool]] = {}
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

    def _status(self) -> list[bool | None]:
        """Per planned run: None (no record yet), True (its last attempt failed) or False (ok).
        A record is read again only when it changed (a retry replaces a failed one): the
        monitor polls inside Snakemake beside the measured runs, so a poll costs a stat per
        run, not a read of every finished record."""
        out: list[bool | None] = []
        for p in self._paths:
            try:
                st = p.stat()
            except OSError:
                out.append(None)
                continue
            seen = self._seen.get(p)
            version = (st.st_ino, st.st_mtime_ns)
            if seen is None or seen[0] != version:
                rec = read_json(p)
                seen = (version, rec is not None and rec.get("status") != "ok")
                self._seen[p] = seen
            out.append(seen[1])
        return out

    def _done(self, status: Sequence[bool | None]) -> tuple[int, int]:
        return sum(s is not None for s in status), sum(s is True for s in status)

    def line(self) -> str:
        status = self._status()
        done, failed = self._done(status)
        total = len(self._paths)
        elapsed = time.monotonic() - self.started
        finished = [s is not None for s in status]
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
            done = self._done(self._status())[0]
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
