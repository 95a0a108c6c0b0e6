"""The raw layout of a campaign on disk, and the one walker over it.

    data/raw/<campaign>/plan.json                  the expanded campaign (seed, order, cells)
    data/raw/<campaign>/<cell-id>/<run-id>/        the harness's run directory (only when ok)
    data/raw/<campaign>/<cell-id>/<run-id>.failed/ every failed attempt, kept (harness):
        <time>-<pid>[-<n>]/                        one attempt (attempt_dir)
        <time>-stale/                              a leftover found in <run-id>/ (stale_dir)
    data/raw/<campaign>/<cell-id>/<run-id>.json    the run's record: Snakemake's output
    data/raw/<campaign>/<cell-id>/.<run-id>.tmp-<pid>/  a run in flight, written by process pid

The workflow writes this layout; the statistics stage and the report read it. So that both read
it alike, this module imports only the standard library and workflow.files, and every reader
walks it with walk(): every planned run, in plan order, whatever state it is in.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workflow.files import REPO, read_json

RAW = REPO / "data" / "raw"
FAILED_SUFFIX = ".failed"
WORK_MARK = ".tmp-"  # .<run-id>.tmp-<pid>: where the harness writes a run until it is complete
CAUSE_LINES = 3  # stderr lines kept as a failure's cause: the error and what led to it
STDERR_TAIL_BYTES = 64 * 1024  # a chatty prototype's stderr: its end holds the error
_EXITED = re.compile(r"exited with code (-?\d+)")
_STDERR_INTRO = re.compile(r";?\s*(?:[\w-]+ )?stderr:$")


def campaign_dir(name: str, raw: Path = RAW) -> Path:
    return raw / name


def run_dir(name: str, cell_id: str, run_id: str, raw: Path = RAW) -> Path:
    return campaign_dir(name, raw) / cell_id / run_id


def record_path(name: str, cell_id: str, run_id: str, raw: Path = RAW) -> Path:
    return record_of(run_dir(name, cell_id, run_id, raw))


def record_of(out: Path) -> Path:
    """The record of the run directory out."""
    return out.parent / f"{out.name}.json"


def failed_dir(out: Path) -> Path:
    """Where the harness keeps the failed attempts of the run directory out."""
    return out.parent / f"{out.name}{FAILED_SUFFIX}"


def attempt_dir(out: Path, pid: int) -> Path:
    """A new name, not yet taken, for a failed attempt of the run directory out by process pid:
    the time and pid (failed_attempts sorts by it), plus a count when one process keeps two
    attempts within a second."""
    base = f"{_stamp()}-{pid}"
    dest, n = failed_dir(out) / base, 1
    while dest.exists():
        n += 1
        dest = failed_dir(out) / f"{base}-{n}"
    return dest


def stale_dir(out: Path) -> Path:
    """Where a leftover found in the run directory out (partial or failed) is set aside, among
    its failed attempts, so that an ok run never mixes with it."""
    return failed_dir(out) / f"{_stamp()}-stale"


def _stamp() -> str:
    # Local time to the second: attempt names sort oldest first.
    return time.strftime("%Y%m%dT%H%M%S")


def work_dir(out: Path, pid: int) -> Path:
    """Where process pid writes the run out until it is complete (work_dirs finds it)."""
    return out.parent / f".{out.name}{WORK_MARK}{pid}"


def work_dirs(out: Path) -> list[tuple[Path, int]]:
    """The directories the harness is writing (or was writing, when it died) the run out into,
    each with the pid of the process writing it, oldest name first."""
    found = []
    for path in sorted(out.parent.glob(f".{out.name}{WORK_MARK}*")):
        pid = path.name.removeprefix(f".{out.name}{WORK_MARK}")
        if pid.isdigit() and path.is_dir():
            found.append((path, int(pid)))
    return found


def transport_label(cell: Mapping[str, Any]) -> str:
    """The transport as a cell measures it: its name, and +<variant> for a named tuning of it
    (enet+merged-acks), never to be pooled with the stock transport."""
    variant = cell.get("variant")
    return f"{cell['transport']}+{variant}" if variant else str(cell["transport"])


def derive_cell_id(cell: Mapping[str, Any]) -> str:
    """A readable id for the cell, stable across repetitions (run_id and seed excluded).

    cell is a validated cell document (params already as text); campaign expansion appends a
    content hash to this, `netstick run-cell` uses it as it is for a cell file without one, and
    the importers name earlier studies' configurations with it.
    """
    profile = cell["network_profile"]
    if not isinstance(profile, str):
        digest = hashlib.sha256(json.dumps(profile, sort_keys=True).encode()).hexdigest()[:8]
        profile = f"custom{digest}"
    proto = Path(cell["prototype"]).parent.name or "prototype"
    parts = [proto]
    if cell.get("library_version", "pinned") != "pinned":
        parts.append(str(cell["library_version"]))
    parts += [transport_label(cell), f"p{cell['players']}", cell["workload"]]
    parts += [f"{k}={v}" for k, v in sorted(cell["params"].items())]
    parts += [f"t.{k}={v}" for k, v in sorted(cell["transport_options"].items())]
    parts += [profile, f"d{cell['duration_s']:g}"]
    if cell.get("server_profiler"):  # a profiled server is another measurement, never pooled
        parts.append(str(cell["server_profiler"]))
    return "-".join(parts)


def host_of(meta: Mapping[str, Any] | None) -> str | None:
    """The host a run was measured on: meta.json's job.host (who ran the run, written by the
    workflow), else versions.host.name (the harness's own provenance, present for runs started
    outside a campaign too). Every table and document takes the host from here."""
    if not meta:
        return None
    host = (meta.get("job") or {}).get("host")
    if host:
        return str(host)
    name = ((meta.get("versions") or {}).get("host") or {}).get("name")
    return str(name) if name else None


@dataclass(frozen=True, slots=True)
class FailedAttempt:
    """One failed attempt the harness set aside: its directory, status.json and meta.json
    (None where missing or unreadable)."""

    path: Path
    status: dict[str, Any] | None
    meta: dict[str, Any] | None


def failed_attempts(out: Path) -> list[FailedAttempt]:
    """Every failed attempt kept beside the run directory out, oldest first (the harness names
    them by time)."""
    kept = failed_dir(out)
    if not kept.is_dir():
        return []
    return [
        FailedAttempt(d, read_json(d / "status.json"), read_json(d / "meta.json"))
        for d in sorted(kept.iterdir())
    ]


@dataclass(frozen=True, slots=True)
class Failure:
    """Why a run failed, as a user needs it: the harness's reason, the process whose exit (or
    silence) failed the run and its exit code, how many attempts were made, and that process's
    last non-empty stderr lines (oldest first, at most CAUSE_LINES)."""

    reason: str
    process: str | None
    exit_code: int | None
    attempts: int
    stderr: tuple[str, ...]
    summary: str  # the first line of the harness's detail

    @property
    def cause(self) -> str:
        """One line: the last stderr line, else what the harness saw."""
        return self.stderr[-1] if self.stderr else self.summary

    def to_doc(self) -> dict[str, Any]:
        return {
            "reason": self.reason,
            "process": self.process,
            "exit_code": self.exit_code,
            "attempts": self.attempts,
            "stderr": list(self.stderr),
            "summary": self.summary,
        }


def last_lines(text: str, n: int = CAUSE_LINES) -> list[str]:
    """The last n non-empty lines of text, stripped; a launcher's own lines (srun's) only where
    the process wrote nothing else."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    own = [line for line in lines if not line.startswith("srun: ")]
    return (own or lines)[-n:]


def _stderr_tail(path: Path) -> str | None:
    try:
        with path.open("rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - STDERR_TAIL_BYTES))
            return f.read().decode("utf-8", errors="replace")
    except OSError:
        return None


def _stderr_in_detail(detail: str) -> str:
    """The stderr tail the harness appends to a detail ("...stderr:" then the lines), without
    the cleanup note it may add after it."""
    _, sep, rest = detail.partition("stderr:\n")
    kept = []
    for line in rest.splitlines() if sep else []:
        if line.startswith("cleanup: "):
            break
        if line != "(no output)":
            kept.append(line)
    return "\n".join(kept)


def failure_of(record: Mapping[str, Any] | None, failed: Sequence[FailedAttempt]) -> Failure | None:
    """Why the run failed, from its record and the last failed attempt the harness kept (its
    status.json, whose detail is never cut short, and the failing process's stderr log).

    A run without a record (not run yet, or between retries) gets its last failed attempt's
    cause; an ok run, or one with neither a failed record nor a failed attempt, gets None. A
    failure of the harness itself (internal_error) has no process: its stderr lines are the end
    of its traceback.
    """
    if (record is not None and record.get("status") == "ok") or (record is None and not failed):
        return None
    last = failed[-1] if failed else None
    status = (last.status if last is not None else None) or {}
    if record is not None and status.get("reason") != record.get("reason"):
        # The final attempt left no directory (the harness refused to start it: run_busy); the
        # kept one is an earlier attempt's, not the cause.
        last, status = None, {}
    source = status or record or {}
    detail = str(source.get("detail") or "")
    reason = str(source.get("reason") or "unknown")
    # The first line without the announcement of the stderr lines that follow it.
    summary = _STDERR_INTRO.sub("", detail.splitlines()[0]) if detail else ""
    # The harness names the failing process first ("client-0 exited with code 4 ..."); a
    # server that never got ready is named later in the sentence.
    named = summary.split(" ", 1)[0]
    process = named if re.fullmatch(r"server|client-\d+", named) else None
    if process is None and reason == "not_ready":
        process = "server"
    text = None
    if last is not None and process is not None:
        text = _stderr_tail(last.path / f"{process}.stderr.log")
    if text is None:
        text = _stderr_in_detail(detail)
    if not text.strip() and reason == "internal_error":
        text = detail
    exit_code = None
    exited = _EXITED.search(summary)
    if exited:
        codes = status.get("exit_codes")
        code = codes.get(process) if isinstance(codes, dict) else None
        exit_code = code if isinstance(code, int) else int(exited.group(1))
    attempts = len(failed)
    if record is not None:
        attempts = max(attempts, int(record.get("attempt") or 1))
    return Failure(reason, process, exit_code, attempts, tuple(last_lines(text)), summary)


class CellRun:
    """The ids of one run of one cell, read from its cell document (planned or found on disk)."""

    __slots__ = ()
    cell: dict[str, Any]

    @property
    def cell_id(self) -> str:
        return str(self.cell["cell_id"])

    @property
    def run_id(self) -> str:
        return str(self.cell["run_id"])

    @property
    def key(self) -> str:
        return f"{self.cell_id}/{self.run_id}"


@dataclass(frozen=True, slots=True)
class RawRun(CellRun):
    """One planned run as found on disk.

    record: the run's record, None when it has not run (yet) or was interrupted; meta: the run
    directory's meta.json, None when there is none (a run directory exists only for ok runs);
    host: host_of(meta).
    """

    campaign: str
    cell: dict[str, Any]
    block: str | None
    record: dict[str, Any] | None
    run_dir: Path
    failed: tuple[FailedAttempt, ...]
    meta: dict[str, Any] | None
    host: str | None

    @property
    def status(self) -> str:
        """The record's status (ok or failed), or not_run without a record."""
        return "not_run" if self.record is None else str(self.record.get("status"))

    @property
    def failure(self) -> Failure | None:
        """Why it failed (failure_of): for a run not run yet, its last failed attempt's."""
        return failure_of(self.record, self.failed)


def read_plan(raw_campaign: Path) -> dict[str, Any]:
    """plan.json of a raw campaign directory; a missing or damaged one is an error naming it."""
    path = raw_campaign / "plan.json"
    plan = read_json(path)
    if plan is None or not isinstance(plan.get("runs"), list):
        raise FileNotFoundError(
            f"{path}: missing or not a plan (a JSON object with a runs list); run the campaign"
        )
    return plan


def walk(raw_campaign: Path, plan: Mapping[str, Any] | None = None) -> Iterator[RawRun]:
    """Every planned run of raw_campaign in plan order, with what is on disk for it.

    plan: the plan document when the caller already holds it (the workflow walks while the
    campaign runs, before or without reading plan.json back); by default raw_campaign's
    plan.json.
    """
    doc = read_plan(raw_campaign) if plan is None else plan
    campaign = str(doc.get("campaign") or raw_campaign.name)
    for entry in doc["runs"]:
        cell = entry["cell"]
        out = raw_campaign / cell["cell_id"] / cell["run_id"]
        meta = read_json(out / "meta.json")
        yield RawRun(
            campaign=campaign,
            cell=cell,
            block=entry.get("block"),
            record=read_json(record_of(out)),
            run_dir=out,
            failed=tuple(failed_attempts(out)),
            meta=meta,
            host=host_of(meta),
        )
