"""A campaign's facts: the one producer of data/results/<campaign>/facts.json.

    netstick campaign facts CAMPAIGN   ->   data/results/<campaign>/facts.json,
                                            plan.json (the plan the results came from),
                                            raw-manifest.tsv (every raw file with its sha256)

facts.json holds what the checkout and the machine that collect the results are now (checkout.py:
git state, lock files, software, hardware, disk use, setup time, licence, citation, what the
checkout documents, the plan's prototypes as the checkout holds them) and, in its runs section,
what the runs recorded (runs.py: commits, the prototypes they started, toolchain, hardware,
timing, what was planned and how it ended), read once from data/raw through workflow.layout.
The report words these files (report/checklist.py, report/crate.py, report/campaign.qmd) and
reads nothing under data/raw. The workflow writes them once every run has finished and the
statistics are written, so that the disk use counts the tables.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

from workflow import layout
from workflow.campaign.facts import checkout, runs
from workflow.files import replace_atomically, write_json

# 2: the runs section (what the runs recorded) and documentation.
FACTS_SCHEMA = 2
FACTS = "facts.json"
PLAN = "plan.json"
RAW_MANIFEST = "raw-manifest.tsv"


def collect(results: Path, raw: Path, repo: Path) -> dict[str, Any]:
    """Everything facts.json holds (see the module docstring); disk use as it is now."""
    return _facts(results, raw, repo, *runs.scan(raw))


def _facts(
    results: Path,
    raw: Path,
    repo: Path,
    plan: dict[str, Any] | None,
    found: list[layout.RawRun],
) -> dict[str, Any]:
    now = checkout.campaign_prototypes(plan, repo)
    return {
        "facts_schema": FACTS_SCHEMA,
        "generated_unix_s": int(time.time()),
        "source": "the checkout and the machine that wrote this file; runs: what the runs recorded",
        "git": checkout.git_state(repo),
        "lock_files": checkout.lock_files(repo),
        "prototypes": now,
        "software": checkout.software(repo),
        "hardware": checkout.hardware(),
        "disk": checkout.disk(raw, results, repo),
        "time_to_prepare": checkout.time_to_prepare(repo),
        "licences": checkout.licences(repo),
        "citation": checkout.citation(repo),
        "public_remote": checkout.public_remote(repo),
        "documentation": checkout.documentation(repo),
        "runs": runs.recorded(raw, plan, found, now, repo),
    }


def write(results: Path, raw: Path, repo: Path) -> Path:
    """Write facts.json, plan.json and raw-manifest.tsv into results (disk use is measured
    before any of them is written); return the path of facts.json.

    plan.json is a copy of the plan the facts read, so the report and the RO-Crate take it from
    the results; without a plan or a raw directory the older copies are removed, not kept to
    describe other runs."""
    plan, found = runs.scan(raw)
    doc = _facts(results, raw, repo, plan, found)
    if plan is not None:
        # Byte for byte: its sha256 is the one raw-manifest.tsv lists.
        replace_atomically(results / PLAN, lambda tmp: shutil.copyfile(raw / PLAN, tmp))
    else:
        (results / PLAN).unlink(missing_ok=True)
    if raw.is_dir():
        runs.raw_manifest(raw, results / RAW_MANIFEST)
    else:
        (results / RAW_MANIFEST).unlink(missing_ok=True)
    return write_json(results / FACTS, doc, sort_keys=False, strict=True)
