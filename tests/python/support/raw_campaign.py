"""A campaign's raw directory (data/raw/<campaign>/) as the workflow leaves it, written through
workflow.layout: plan.json, then each planned run in the state a test needs (ok with its run
directory and record, failed for good with its kept attempts, or not run: nothing on disk).

The readers under test (ingest, the runs table, the walker, the facts step, status) find these
files where the harness would have put them because the names come from workflow.layout, not
from here. The fixture `raw_campaign` (tests/python/conftest.py) is one of these under tmp_path.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workflow import layout

Doc = Mapping[str, Any] | Sequence[Any] | str  # JSON, or a file's text as it is


def cell(cell_id: str, run_id: str, **over: Any) -> dict[str, Any]:
    """A cell of plan.json, trimmed to what the readers use (workflow/campaign/expand.py writes
    every key of a validated cell); over replaces or adds keys."""
    return {
        "cell_id": cell_id,
        "run_id": run_id,
        "prototype": "prototypes/reference/prototype.yaml",
        "transport": "tcp",
        "players": 2,
        "workload": "idle",
        "params": {},
        "transport_options": {},
        "network_profile": "lan",
        "duration_s": 1.0,
    } | over


def plan_doc(
    name: str, cells: Sequence[Mapping[str, Any]], block: str = "b", **fields: Any
) -> dict[str, Any]:
    """plan.json's document: the campaign, its fields (seed, order, ...) and one planned run per
    cell, in the order given (the seeded run order)."""
    runs = [
        {"key": f"{c['cell_id']}/{c['run_id']}", "block": block, "cell": dict(c)} for c in cells
    ]
    return {"campaign": name, **fields, "runs": runs}


@dataclass
class RawCampaign:
    """data/raw/<name> under raw; written records every file it wrote with its size in bytes."""

    raw: Path
    name: str = "t"
    written: dict[Path, int] = field(default_factory=dict)

    @property
    def dir(self) -> Path:
        return layout.campaign_dir(self.name, self.raw)

    @property
    def bytes(self) -> int:
        return sum(self.written.values())

    def write(self, path: Path, doc: Doc) -> Path:
        """path holding doc: JSON, or doc itself when it is text."""
        data = (doc if isinstance(doc, str) else json.dumps(doc, indent=2)).encode()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        self.written[path] = len(data)
        return path

    def plan(self, cells: Sequence[Mapping[str, Any]], **fields: Any) -> dict[str, Any]:
        """Write plan.json with one run per cell (plan_doc) and return it."""
        doc = plan_doc(self.name, cells, **fields)
        self.write(self.dir / "plan.json", doc)
        return doc

    def run_dir(self, cell: Mapping[str, Any]) -> Path:
        return layout.run_dir(self.name, cell["cell_id"], cell["run_id"], self.raw)

    def ok(
        self,
        cell: Mapping[str, Any],
        meta: Mapping[str, Any] | None = None,
        files: Mapping[str, Doc] | None = None,
        record: Mapping[str, Any] | None = None,
    ) -> Path:
        """A finished run: its run directory (meta.json and files, by path relative to it) and
        its record (status ok unless record says otherwise); returns the run directory."""
        out = self.run_dir(cell)
        out.mkdir(parents=True, exist_ok=True)
        if meta is not None:
            self.write(out / "meta.json", meta)
        for rel, doc in (files or {}).items():
            self.write(out / rel, doc)
        self.write(layout.record_of(out), record if record is not None else {"status": "ok"})
        return out

    def failed(
        self,
        cell: Mapping[str, Any],
        record: Mapping[str, Any] | None,
        attempts: Mapping[str, Mapping[str, Doc]] | None = None,
    ) -> Path:
        """A run that failed: the attempts the harness kept (directory name -> its files) and
        its record (None: between two attempts, no record yet); returns the run directory, which
        a failed run does not have."""
        out = self.run_dir(cell)
        for name, files in (attempts or {}).items():
            kept = layout.failed_dir(out) / name
            kept.mkdir(parents=True, exist_ok=True)
            for rel, doc in files.items():
                self.write(kept / rel, doc)
        if record is not None:
            self.write(layout.record_of(out), record)
        return out

    def copy_run(
        self, cell: Mapping[str, Any], source: Path, record: Mapping[str, Any] | None = None
    ) -> Path:
        """A run the harness really finished elsewhere (source), copied in with its record."""
        out = self.run_dir(cell)
        shutil.copytree(source, out)
        self.written.update({p: p.stat().st_size for p in out.rglob("*") if p.is_file()})
        ok = {"status": "ok", "run_id": cell["run_id"]}
        self.write(layout.record_of(out), record if record is not None else ok)
        return out
