"""The raw layout of a campaign on disk, and the one walker over it.

    data/raw/<campaign>/plan.json                  the expanded campaign (seed, order, cells)
    data/raw/<campaign>/<cell-id>/<run-id>/        the harness's run directory (only when ok)
    data/raw/<campaign>/<cell-id>/<run-id>.failed/ every failed attempt, kept (harness)
    data/raw/<campaign>/<cell-id>/<run-id>.json    the run's record: Snakemake's output

The workflow writes this layout; the statistics stage and the report read it. So that both read
it alike, this module imports only the standard library and workflow.files, and every reader
walks it with walk(): every planned run, in plan order, whatever state it is in.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workflow.files import REPO, read_json

RAW = REPO / "data" / "raw"
FAILED_SUFFIX = ".failed"


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
    parts += [cell["transport"], f"p{cell['players']}", cell["workload"]]
    parts += [f"{k}={v}" for k, v in sorted(cell["params"].items())]
    parts += [f"t.{k}={v}" for k, v in sorted(cell["transport_options"].items())]
    parts += [profile, f"d{cell['duration_s']:g}"]
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
