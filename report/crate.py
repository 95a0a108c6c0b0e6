"""The RO-Crate of one campaign: the report, the small stats tables and a manifest of the raw data.

    netstick report CAMPAIGN --step crate   (after --step render)

CRATE_DIR (report/_output/<campaign>/) holds the rendered index.html; this adds

    CRATE_DIR/data/           copies of the stats tables, artifact.json and plan.json
    CRATE_DIR/data/raw-manifest.tsv   every file of the raw campaign: path, bytes, sha256
    CRATE_DIR/ro-crate-metadata.json

Everything comes from RESULTS: the facts step (`netstick campaign facts`) wrote plan.json and
raw-manifest.tsv there beside facts.json, so the crate reads nothing under data/raw. The raw data
are not copied (a long campaign has gigabytes of logs); the manifest lets anyone check a copy of
them. Every File entity carries its size and sha256. Each prototype that ran is a
SoftwareApplication (part of #netstick) with its programmingLanguage, runtimePlatform, the sha256
of its executable and the libraries it ran with as softwareRequirements. Metadata come from
RESULTS/artifact.json (report/checklist.py), so the crate says nothing the artifact does not.
The root dataset's licence is the code's (LICENSE) by its SPDX URL.
Running it again gives the same set of files: copies are replaced, never accumulated.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import quote

from rocrate.model.contextentity import ContextEntity
from rocrate.model.file import File
from rocrate.rocrate import ROCrate

from workflow.files import replace_atomically, sha256_of

REPORT = "index.html"
MANIFEST = "raw-manifest.tsv"
METADATA = "ro-crate-metadata.json"
# Small files copied from RESULTS (the Parquet files are left out: samples.parquet can be GBs);
# plan.json and raw-manifest.tsv are the facts step's.
RESULT_TABLES = (
    "runs.csv",
    "cells.csv",
    "comparisons.csv",
    "changepoints.csv",
    "findings.json",
    "metrics.json",
    "ingest.json",
    "artifact.json",
    "plan.json",
)
# Checksums use the Workflow Run Crate term, as the RO-Crate context has none of its own.
SHA256_TERM = {"sha256": "https://w3id.org/ro/terms/workflow-run#sha256"}
FORMATS = {
    ".csv": "text/csv",
    ".json": "application/json",
    ".tsv": "text/tab-separated-values",
    ".html": "text/html",
}
DESCRIPTIONS = {
    "runs.csv": "one row per planned run (ok, failed, not run) with its per-run metrics",
    "cells.csv": "per cell and metric: median over runs with its 95 % interval",
    "comparisons.csv": "transports compared in the same context: ratios, effect sizes, p-values",
    "changepoints.csv": "per-version medians of the cells run with several library versions, "
    "with the change points found in them",
    "findings.json": "the findings as records (kind, context, estimate, interval, unit) "
    "including what cannot be concluded",
    "metrics.json": "every metric's name, label and unit",
    "ingest.json": "rows read and rows left out per file by the ingest",
    "artifact.json": "artifact-evaluation metadata: code, environment, hardware, disk, time",
    "plan.json": "the expanded campaign: seed, seeded run order, every run's cell",
}


def _warn(msg: str) -> None:
    print(f"crate: warning: {msg}", file=sys.stderr)


def _description(name: str, copy: Path, campaign: str) -> str:
    if name != MANIFEST:
        return DESCRIPTIONS[name]
    with copy.open("rb") as f:
        files = sum(1 for _ in f) - 1  # a header line, then one line per file
    return (
        f"every file of data/raw/{campaign} ({files} files, not included in this crate): "
        "relative path, bytes, sha256"
    )


def _file_props(path: Path, description: str) -> dict[str, Any]:
    return {
        "name": path.name,
        "description": description,
        "encodingFormat": FORMATS.get(path.suffix, "application/octet-stream"),
        "contentSize": str(path.stat().st_size),
        "sha256": sha256_of(path),
    }


def _licence_entity(crate: ROCrate, artifact: dict[str, Any]) -> ContextEntity:
    code = (artifact.get("licences") or {}).get("code")
    if isinstance(code, dict) and code.get("spdx"):
        return crate.add(
            ContextEntity(
                crate,
                f"https://spdx.org/licenses/{code['spdx']}",
                properties={
                    "@type": "CreativeWork",
                    "name": code.get("first_line"),
                    "identifier": code["spdx"],
                    "description": f"the licence file {code.get('file')} of the code, "
                    f"sha256 {code.get('sha256')}",
                },
            )
        )
    # No licence file: say so rather than leave the required property empty or invent one.
    text = code if isinstance(code, str) else "no licence information in artifact.json"
    if isinstance(code, dict):
        text = f"{code.get('first_line')} ({code.get('file')})"
    return crate.add(
        ContextEntity(
            crate,
            "#licence",
            properties={"@type": "CreativeWork", "name": "licence", "description": text},
        )
    )


# Display names of the languages manifests name most (a manifest's own word is kept otherwise).
LANGUAGES = {"go": "Go", "python": "Python", "csharp": "C#", "c#": "C#", "c": "C", "cpp": "C++"}


def _id(kind: str, name: str) -> str:
    return f"#{kind}-{quote(name, safe='/@.')}"


def _library(crate: ROCrate, name: str, version: str, description: str) -> ContextEntity:
    """One library a prototype ran with, as a SoftwareApplication (one entity per version)."""
    entity_id = _id("library", f"{name}@{version}")
    found = crate.get(entity_id)
    if found is not None:
        return found  # type: ignore[no-any-return]
    props = {
        "@type": "SoftwareApplication",
        "name": name,
        "softwareVersion": version,
        "description": description,
    }
    return crate.add(ContextEntity(crate, entity_id, properties=props))


def _prototype_entity(crate: ROCrate, proto: dict[str, Any], commit: str | None) -> ContextEntity:
    """A prototype that ran (artifact.json's prototypes): its language, runtime, executable
    sha256 and the libraries it ran with as softwareRequirements."""
    reported = proto.get("reported_library_versions") or {}
    declared = proto.get("library_versions") or {}
    libraries = []
    for name in [*reported, *(n for n in declared if n not in reported)]:
        source = "as the processes reported it" if name in reported else "as the manifest names it"
        for version in reported.get(name) or declared.get(name) or []:
            libraries.append(_library(crate, name, str(version), f"{source} ({proto['name']})"))
    for name, version in (proto.get("go_modules") or {}).items():
        libraries.append(_library(crate, name, str(version), "Go module required by go.mod"))
    exe = proto.get("executable") or {}
    hashes = list(exe.get("sha256") or [])
    language = str(proto.get("language") or "not recorded")
    lang = crate.add(
        ContextEntity(
            crate,
            _id("language", language.lower()),
            properties={
                "@type": "ComputerLanguage",
                "name": LANGUAGES.get(language.lower(), language),
            },
        )
    )
    words = [
        f"prototype {proto['name']} as it ran in {proto.get('runs')} ok runs of the campaign",
        f"manifest {proto.get('manifest')}",
        *(f"{r['item']}: {r['value']}" for r in proto.get("rows") or [] if r["item"] != "manifest"),
        *(f"WARNING: {w}" for w in proto.get("warnings") or []),
    ]
    props: dict[str, Any] = {
        "@type": "SoftwareApplication",
        "name": f"{proto['name']} prototype",
        "identifier": proto.get("manifest"),
        "description": "; ".join(words),
        "programmingLanguage": lang,
        "softwareVersion": commit or "unknown (not a git checkout)",
        "softwareRequirements": list({e.id: e for e in libraries}.values()),
    }
    if proto.get("runtime"):
        props["runtimePlatform"] = " / ".join(map(str, proto["runtime"]))
    if hashes:
        # One hash when every run used the same executable; all of them (and the warning in
        # the description) when it changed during the campaign.
        props["sha256"] = hashes[0] if len(hashes) == 1 else hashes
    # By name (the manifest is the identifier); two manifests of one name get -2, -3, ...
    entity_id = _id("prototype", str(proto["name"]))
    for k in range(2, 100):
        if crate.get(entity_id) is None:
            break
        entity_id = _id("prototype", f"{proto['name']}-{k}")
    return crate.add(ContextEntity(crate, entity_id, properties=props))


def _iso_from_unix_s(unix_s: Any) -> str | None:
    if not isinstance(unix_s, int | float):
        return None
    return dt.datetime.fromtimestamp(unix_s, dt.UTC).isoformat(timespec="seconds")


def write_crate(crate_dir: Path, results: Path, artifact: dict[str, Any]) -> Path:
    """Write the campaign's RO-Crate into crate_dir; return the path of ro-crate-metadata.json."""
    campaign = str(artifact.get("campaign") or results.name)
    data = crate_dir / "data"
    data.mkdir(parents=True, exist_ok=True)

    copied: list[tuple[Path, str]] = []  # (copy in data/, description)
    for name in (*RESULT_TABLES, MANIFEST):
        src, dest = results / name, data / name
        if src.is_file():
            replace_atomically(dest, lambda tmp, src=src: shutil.copyfile(src, tmp))
            copied.append((dest, _description(name, dest, campaign)))
        else:
            # A copy left by an earlier run would describe other results: remove it.
            dest.unlink(missing_ok=True)
            _warn(f"{src.name} not found in {src.parent.name}/; not in the crate")

    crate = ROCrate()
    crate.metadata.extra_terms.update(SHA256_TERM)
    git = artifact.get("git") or {}
    recorded = git.get("recorded_commits") or []
    commit = recorded[0] if len(recorded) == 1 else git.get("commit")
    exp = artifact.get("experiments") or {}
    timing = artifact.get("time") or {}

    root = crate.root_dataset
    root["name"] = f"Netstick campaign {campaign}"
    root["description"] = (
        f"Results of the Netstick benchmark campaign {campaign}: {exp.get('cells')} cells, "
        f"{exp.get('runs_planned')} runs planned ({exp.get('runs_ok')} ok, "
        f"{exp.get('runs_failed')} failed, {exp.get('runs_not_run')} not run) of game-networking "
        f"transports ({', '.join(exp.get('transports') or [])}); the rendered report, the "
        "statistics tables, artifact-evaluation metadata and a checksum manifest of the raw data."
    )
    published = _iso_from_unix_s(artifact.get("generated_unix_s"))
    if published:
        root["datePublished"] = published
    root["keywords"] = [
        "benchmark",
        "game networking",
        "netcode",
        "round-trip time",
        "reproducibility",
        *(exp.get("transports") or []),
    ]
    root["license"] = _licence_entity(crate, artifact)

    entities: list[File] = []
    report = crate_dir / REPORT
    if report.is_file():
        props = _file_props(report, f"the campaign report of {campaign}, self-contained HTML")
        entities.append(crate.add_file(report, dest_path=REPORT, properties=props))
    else:
        _warn(f"{REPORT} not found in {crate_dir.name}/ (render the report first); not listed")
    for path, description in copied:
        props = _file_props(path, description)
        entities.append(crate.add_file(path, dest_path=f"data/{path.name}", properties=props))

    prototypes = [_prototype_entity(crate, p, commit) for p in artifact.get("prototypes") or []]
    software = crate.add(
        ContextEntity(
            crate,
            "#netstick",
            properties={
                "@type": "SoftwareApplication",
                "name": "Netstick",
                "description": "reproducible benchmarking pipeline for game-networking "
                "libraries, with the prototypes that ran in this campaign as its parts",
                "version": commit or "unknown (not a git checkout)",
                "hasPart": prototypes,
            },
        )
    )
    plan = [e for e in entities if e.id == "data/plan.json"]
    action_props: dict[str, Any] = {
        "name": f"campaign {campaign}",
        "description": "the runs of the campaign, from the first run's start to the last run's end",
    }
    if timing.get("start_time"):
        action_props["startTime"] = timing["start_time"]
    if timing.get("end_time"):
        action_props["endTime"] = timing["end_time"]
    action = crate.add_action(
        software,
        identifier=f"#campaign-{campaign}",
        object=plan or None,
        result=[e for e in entities if e.id != "data/plan.json"],
        properties=action_props,
    )
    root["mentions"] = action  # how the Process Run Crate profile links the run to the crate

    # Written next to the target, then moved: a reader sees the old metadata or the new one.
    out = crate_dir / METADATA
    with tempfile.TemporaryDirectory(dir=crate_dir, prefix=".crate-") as tmp:
        crate.metadata.write(Path(tmp))
        os.replace(Path(tmp) / METADATA, out)
    return out
