"""What a campaign's runs recorded, gathered once from data/raw through workflow.layout.walk: the
commits they ran at, the prototypes they started (and whether every run started the same
executable), the toolchain and hardware they name, how long they took, and what was planned and
how it ended. The facts step writes it into facts.json's runs section; the report words it.

Everything here is a count, a list of distinct values or a copy of what a run recorded; the
sentences (warnings, notes, the check-list) are the report's (report/checklist.py).
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from workflow import layout
from workflow.campaign.facts import transports
from workflow.files import repo_relative, sha256_of, write_text
from workflow.harness import netprofiles

NOT_AVAILABLE = "not available"
SOURCE = "plan.json, the run records and the runs' meta.json (workflow.layout.walk over data/raw)"


def scan(raw: Path) -> tuple[dict[str, Any] | None, list[layout.RawRun]]:
    """plan.json and every planned run as the layout walker finds it; no plan, no runs."""
    try:
        plan = layout.read_plan(raw)
    except FileNotFoundError:
        return None, []
    return plan, list(layout.walk(raw, plan))


def _distinct(values: Iterable[Any]) -> list[Any]:
    out: list[Any] = []
    for v in values:
        if v is not None and v not in out:
            out.append(v)
    return out


def _ok_metas(runs: Sequence[layout.RawRun]) -> list[dict[str, Any]]:
    return [r.meta for r in runs if r.status == "ok" and r.meta is not None]


def _versions(metas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m.get("versions") or {} for m in metas]


def _iso(unix_s: float) -> str:
    return dt.datetime.fromtimestamp(unix_s, dt.UTC).isoformat(timespec="seconds")


def _add(into: dict[str, list[Any]], key: str, value: Any) -> None:
    """Append value to into[key] unless it is there (distinct values in order of first use)."""
    if value not in into.setdefault(key, []):
        into[key].append(value)


# -- the prototypes that ran ---------------------------------------------------------------------
# Gathered from the ok runs' meta.json (versions.prototypes, written by the harness before it
# started each prototype), compared with the same records of the checkout now (checkout.py).
# Runs recorded before the harness named its prototypes (meta.json without versions.prototypes)
# are described from the manifest as it is now, and their executable hash is "not recorded".


def shown(path: Any) -> str:
    """A recorded path as facts.json shows it: outside the repository by its name only."""
    if not isinstance(path, str) or not path:
        return NOT_AVAILABLE
    return f"{Path(path).name} (outside the repository)" if path.startswith("/") else path


def _manifest_path(name: Any, repo: Path) -> str:
    """A manifest path as runs and facts record it: repo-relative when inside the repository."""
    return str(repo_relative(str(name), repo)) if name else NOT_AVAILABLE


def _legacy_entry(
    meta: dict[str, Any], cell: dict[str, Any], now: dict[str, dict[str, Any]], repo: Path
) -> dict[str, Any]:
    """A run recorded before runs named their prototype: its manifest from the cell, name,
    language and build from the checkout now, and its top-level Go keys only where that
    manifest is a Go prototype (they always described the Go reference)."""
    path = _manifest_path(meta.get("manifest") or cell.get("prototype"), repo)
    current = now.get(shown(path)) or {}
    versions = meta.get("versions") or {}
    go = str(current.get("language") or "").lower() == "go"
    return {
        "manifest": {"path": path, "sha256": None},
        "name": current.get("name"),
        "language": current.get("language"),
        "build_command": current.get("build_command"),
        "build_dir": current.get("build_dir"),
        "executable": {"path": (current.get("executable") or {}).get("path"), "sha256": None},
        "launcher": None,
        "runtime": versions.get("go_version") if go else None,
        "runtime_source": "go_version in meta.json" if go else None,
        "library_versions": current.get("library_versions") or {},
        "lock_files": [],
        **(
            {
                "go_modules": versions.get("go_modules") or {},
                "go_mod_directive": current.get("go_mod_directive"),
            }
            if go
            else {}
        ),
        "legacy": True,
    }


def _executable(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The executables the runs started: every path, the runs per sha256 (more than one sha256:
    the runs measured different builds) and the runs that recorded none."""
    runs: dict[str, int] = {}
    for e in entries:
        sha = (e.get("executable") or {}).get("sha256")
        if sha:
            runs[sha] = runs.get(sha, 0) + 1
    return {
        "path": _distinct(shown((e.get("executable") or {}).get("path")) for e in entries),
        "sha256": list(runs),
        "runs_per_sha256": runs,
        "runs_without_sha256": len(entries) - sum(runs.values()),
        "same_in_all_runs": len(runs) == 1 and sum(runs.values()) == len(entries),
    }


def _checkout_now(
    path: str, now: dict[str, Any] | None, exe_runs: dict[str, int]
) -> dict[str, Any]:
    """The prototype as the checkout holds it now, and whether its executable is one the runs
    used (None when that cannot be told)."""
    doc: dict[str, Any] = {"source": "facts.json (the checkout that collected the results)"}
    if now is None:
        doc["note"] = f"{NOT_AVAILABLE}: facts.json does not describe {path}"
        return doc
    if now.get("error"):
        doc["note"] = f"{NOT_AVAILABLE}: {now['error']}"
        return doc
    sha_now = (now.get("executable") or {}).get("sha256")
    doc.update(
        manifest_sha256=(now.get("manifest") or {}).get("sha256"),
        executable_sha256=sha_now,
        executable_as_in_runs=(sha_now in exe_runs) if exe_runs and sha_now else None,
    )
    return doc


def _prototype(
    path: str, entries: list[dict[str, Any]], now: dict[str, Any] | None
) -> dict[str, Any]:
    """One prototype over the ok runs that started it (see the comment above shown); every
    path in it as facts.json shows it."""

    def distinct(key: str) -> list[Any]:
        return _distinct(e.get(key) for e in entries)

    where = shown(path)
    locks: dict[str, list[Any]] = {}
    declared: dict[str, list[Any]] = {}
    reported: dict[str, list[Any]] = {}
    for e in entries:
        for lf in e.get("lock_files") or []:
            _add(locks, shown(lf.get("path")), lf.get("sha256"))
        for lib, v in (e.get("library_versions") or {}).items():
            _add(declared, lib, v)
        for proc in (e.get("processes") or {}).values():
            for lib, v in (proc.get("library_versions") or {}).items():
                _add(reported, lib, v)
    launchers = [e["launcher"] for e in entries if e.get("launcher")]
    executable = _executable(entries)
    language = (distinct("language") or [None])[0]
    doc: dict[str, Any] = {
        "manifest": where,
        "name": str((distinct("name") or [where])[0]),
        "language": language,
        "runs": len(entries),
        "runs_recorded_before_prototype_records": sum(1 for e in entries if e.get("legacy")),
        "manifest_sha256": _distinct((e.get("manifest") or {}).get("sha256") for e in entries),
        "runtime": distinct("runtime"),
        "runtime_source": distinct("runtime_source"),
        "build_command": (distinct("build_command") or [None])[-1],
        "build_dir": shown((distinct("build_dir") or [None])[-1]),
        "executable": executable,
        "launcher": {
            "argv": _distinct([shown(a) for a in x.get("argv") or []] for x in launchers),
            "path": _distinct(shown(x.get("path")) for x in launchers),
            "sha256": _distinct(x.get("sha256") for x in launchers),
        }
        if launchers
        else None,
        "library_versions": declared,
        "reported_library_versions": reported,
        # More than one sha256 of a lock file: it changed during the campaign.
        "lock_files": [{"path": p, "sha256": s} for p, s in locks.items()],
        "checkout_now": _checkout_now(where, now, executable["runs_per_sha256"]),
    }
    if str(language or "").lower() == "go":
        # The last run's go.mod: a change during the campaign shows in its lock-file hashes.
        doc["go_modules"] = next(
            (e["go_modules"] for e in reversed(entries) if e.get("go_modules")), {}
        )
        doc["go_mod_directive"] = (distinct("go_mod_directive") or [None])[-1]
    return doc


def prototypes(
    now: Sequence[dict[str, Any]], runs: Sequence[layout.RawRun], repo: Path
) -> list[dict[str, Any]]:
    """Every prototype the ok runs started, in order of first use, beside its record in the
    checkout now (now: checkout.campaign_prototypes)."""
    # The checkout's records name manifests outside the repository by name only: matched as shown.
    by_path = {shown((p.get("manifest") or {}).get("path")): p for p in now if isinstance(p, dict)}
    groups: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        if run.status != "ok" or run.meta is None:
            continue
        entries = (run.meta.get("versions") or {}).get("prototypes")
        if not isinstance(entries, list):
            entries = [_legacy_entry(run.meta, run.cell, by_path, repo)]
        for e in entries:
            path = _manifest_path((e.get("manifest") or {}).get("path"), repo)
            groups.setdefault(path, []).append(e)
    measured = transports.transports(runs, repo, lambda p: shown(_manifest_path(p, repo)))
    return [
        {
            **_prototype(path, entries, by_path.get(shown(path))),
            "transports": measured.get(shown(path), []),
        }
        for path, entries in groups.items()
    ]


# -- the code, toolchain, hardware and time of the runs ------------------------------------------


def git(metas: list[dict[str, Any]]) -> dict[str, Any]:
    """The commits the ok runs were measured at, and how many from a work tree with changes."""
    versions = _versions(metas)
    return {
        "recorded_commits": _distinct((v.get("git") or {}).get("commit") for v in versions),
        "runs_from_dirty_tree": sum(1 for v in versions if (v.get("git") or {}).get("dirty")),
    }


def software(metas: list[dict[str, Any]]) -> dict[str, Any]:
    """The harness's Python, the kernel and the OS the ok runs recorded (distinct values)."""
    versions = _versions(metas)
    return {
        "python_in_runs": _distinct(v.get("python_version") for v in versions),
        "kernel": _distinct(v.get("kernel") for v in versions),
        "os": _distinct(v.get("os") for v in versions),
    }


def hardware(runs: Sequence[layout.RawRun]) -> dict[str, Any]:
    ok = [r for r in runs if r.status == "ok" and r.meta is not None]
    versions = _versions([r.meta for r in ok if r.meta is not None])
    return {
        "source": "meta.json of the ok runs (the machines that measured)",
        "cpu_model": _distinct(v.get("cpu_model") for v in versions),
        "cpu_count": _distinct(v.get("cpu_count") for v in versions),
        "cpu_governor": _distinct(v.get("cpu_governor") for v in versions)
        or ["not exposed by the kernel"],
        # Whether the CPU's instruction counter was there (monitors/perfcount.py); runs made
        # before it was recorded say nothing.
        "instruction_counter": _distinct(
            "available" if c.get("available") else c.get("reason")
            for c in (v.get("instruction_counter") or {} for v in versions)
            if c
        ),
        "hostnames": _distinct(r.host for r in ok),
        "placement": _distinct(((r.meta or {}).get("placement") or {}).get("kind") for r in ok),
        "isolation": _distinct((r.meta or {}).get("isolation") for r in ok),
        "network_profiles": network_profiles(ok),
    }


def network_profiles(ok: Sequence[layout.RawRun]) -> list[dict[str, Any]]:
    """Per network profile of the ok runs: how many, whether it impairs (needs the emulator),
    how the runs applied it (meta.json impairment: netemu, netem or none), their isolation and
    placement, and why a run placed auto stayed on one node; so the report can say where a
    profile was applied and where not."""
    by_name: dict[str, dict[str, Any]] = {}
    for r in ok:
        meta = r.meta or {}
        recorded = meta.get("network_profile") or {}
        name = str(recorded.get("name", NOT_AVAILABLE))
        spec = recorded.get("spec")
        entry = by_name.setdefault(
            name,
            {
                "name": name,
                "runs": 0,
                "impairs": netprofiles.needs_emulator(spec) if isinstance(spec, dict) else None,
            },
        )
        entry["runs"] += 1
        place = meta.get("placement") or {}
        _add(entry, "applied_by", meta.get("impairment", NOT_AVAILABLE))
        _add(entry, "isolation", meta.get("isolation", NOT_AVAILABLE))
        _add(entry, "placement", place.get("kind", NOT_AVAILABLE))
        if place.get("note"):
            _add(entry, "notes", place["note"])
    return list(by_name.values())


def timing(runs: Sequence[layout.RawRun]) -> dict[str, Any]:
    """The span from the first run's start to the last run's end (ok runs and failed
    attempts), and the sums of the ok runs' measurement windows and overheads."""
    spans = []  # (start, end) of every ok run and every failed attempt
    windows_s = 0.0
    overhead_s = 0.0
    for r in runs:
        meta = r.meta if r.status == "ok" else None
        for m in ([meta] if meta else []) + [a.meta for a in r.failed if a.meta]:
            if isinstance(m.get("start_unix_ns"), int) and isinstance(m.get("end_unix_ns"), int):
                spans.append((m["start_unix_ns"], m["end_unix_ns"]))
        if meta is None:
            continue
        ws, we = meta.get("window_start_unix_ns"), meta.get("window_end_unix_ns")
        if isinstance(ws, int) and isinstance(we, int):
            windows_s += (we - ws) / 1e9
        elif isinstance((meta.get("phases_s") or {}).get("measurement"), int | float):
            windows_s += float(meta["phases_s"]["measurement"])
        if isinstance(meta.get("overhead_s"), int | float):
            overhead_s += float(meta["overhead_s"])
    doc: dict[str, Any] = {"time_to_run_s": None}
    if spans:
        first = min(s for s, _ in spans)
        last = max(e for _, e in spans)
        doc.update(
            time_to_run_s=(last - first) / 1e9,
            first_start_unix_ns=first,
            last_end_unix_ns=last,
            start_time=_iso(first / 1e9),
            end_time=_iso(last / 1e9),
            attempts_counted=len(spans),
        )
    doc.update(
        measurement_windows_s=round(windows_s, 3),
        overhead_s=round(overhead_s, 3),
        definition=(
            "time_to_run_s: earliest start_unix_ns to latest end_unix_ns over the ok runs and "
            "failed attempts (meta.json); excludes Snakemake's start, the statistics and the "
            "report. measurement_windows_s and overhead_s are sums over the ok runs."
        ),
    )
    return doc


def experiments(
    plan: Mapping[str, Any] | None, runs: Sequence[layout.RawRun], repo: Path
) -> dict[str, Any]:
    """What was planned (cells, runs, seed, order, the campaign file) and how the runs ended."""
    status: dict[str, int] = {"ok": 0, "failed": 0, "not_run": 0}
    per_cell: dict[str, int] = {}
    durations: list[Any] = []
    for r in runs:
        status[r.status] = status.get(r.status, 0) + 1
        per_cell[r.cell_id] = per_cell.get(r.cell_id, 0) + 1
        d = r.cell.get("duration_s")
        if d is not None and d not in durations:
            durations.append(d)
    cells = [r.cell for r in runs]
    doc: dict[str, Any] = {
        "source": "plan.json and the run records" if plan else f"{NOT_AVAILABLE}: no plan.json",
        "cells": (plan or {}).get("cells_total", len(per_cell)),
        "runs_planned": (plan or {}).get("runs_total", len(runs)),
        "runs_ok": status.pop("ok"),
        "runs_failed": status.pop("failed"),
        "runs_not_run": status.pop("not_run"),
        "repetitions_per_cell": sorted(set(per_cell.values())),
        "durations_s": sorted(durations),
        "seed": (plan or {}).get("seed", NOT_AVAILABLE),
        "order": (plan or {}).get("order", NOT_AVAILABLE),
        "estimate_s": (plan or {}).get("estimate_s", NOT_AVAILABLE),
        "campaign_file": (plan or {}).get("campaign_file", NOT_AVAILABLE),
        "campaign_sha256": (plan or {}).get("campaign_sha256", NOT_AVAILABLE),
        "transports": sorted({str(c.get("transport")) for c in cells}),
        "players": sorted({int(c["players"]) for c in cells if "players" in c}),
        "workloads": sorted({str(c.get("workload")) for c in cells}),
        "network_profiles": sorted(
            {json.dumps(c.get("network_profile")).strip('"') for c in cells}
        ),
        "prototypes": sorted({shown(_manifest_path(c.get("prototype"), repo)) for c in cells}),
        "not_runnable_here": [
            {k: u.get(k) for k in ("prototype", "reason", "runs")}
            for u in (plan or {}).get("unavailable") or []
        ],
    }
    if status:  # any other status a record may carry
        doc["runs_other_status"] = status
    return doc


def recorded(
    raw: Path,
    plan: Mapping[str, Any] | None,
    runs: Sequence[layout.RawRun],
    now: Sequence[dict[str, Any]],
    repo: Path,
) -> dict[str, Any]:
    """facts.json's runs section: what the runs of raw recorded (plan and runs: scan(raw);
    now: the checkout's records of the plan's prototypes)."""
    metas = _ok_metas(runs)
    return {
        "source": SOURCE,
        "campaign": str((plan or {}).get("campaign") or raw.name),
        "plan": "plan.json" if plan is not None else f"{NOT_AVAILABLE}: plan.json missing",
        "git": git(metas),
        "prototypes": prototypes(now, runs, repo),
        "software": software(metas),
        "hardware": hardware(runs),
        "timing": timing(runs),
        "experiments": experiments(plan, runs, repo),
    }


# -- the raw data ---------------------------------------------------------------------------------


def raw_manifest(raw: Path, out: Path) -> int:
    """Write out (TSV: path, bytes, sha256 of every file under raw, sorted): what lets anyone
    check a copy of the raw data, which the RO-Crate does not include; return the count."""
    rows = []
    for root, dirs, names in os.walk(raw):  # finite; symlinks are not followed
        # Hidden entries are work in flight and locks (.<run>.tmp-<pid>/, .<run>.lock), not data.
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(n for n in names if not n.startswith(".")):
            path = Path(root) / name
            try:
                if path.is_symlink() or not path.is_file():
                    continue
                rows.append(
                    (path.relative_to(raw).as_posix(), path.stat().st_size, sha256_of(path))
                )
            except OSError:  # removed while walking (a campaign still running writes here)
                continue
    rows.sort()
    text = "path\tbytes\tsha256\n" + "".join(f"{p}\t{n}\t{h}\n" for p, n, h in rows)
    write_text(out, text)
    return len(rows)
