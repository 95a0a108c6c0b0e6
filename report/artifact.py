"""Artifact-evaluation metadata of one campaign: what ran, on what, from which code, at what cost.

    python -m report.artifact data/results/<campaign> --raw data/raw/<campaign>
        -> data/results/<campaign>/artifact.json

Every value is measured now (git state, tool versions, disk use of this machine) or read from the
campaign's own files (plan.json, the run records and meta.json, the stats tables, lock files,
LICENSE files, CITATION.cff, .venv/netstick-setup.json); nothing is typed in. What cannot be
found is said in the field ("not available: ..."), never guessed. The report's appendix (cTuning
check-list, ACM badge self-check) and the RO-Crate (report/crate.py) are built from this file.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import importlib.metadata
import json
import os
import platform
import re
import shutil
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import yaml

from workflow.campaign import records
from workflow.harness import provenance

REPO = Path(__file__).resolve().parents[1]
ARTIFACT_SCHEMA = 1
NOT_AVAILABLE = "not available"
TOOL_TIMEOUT_S = 30
# Lock files of the environment; every go.sum that git knows is added to these.
LOCK_FILES = (
    "requirements.txt",
    "requirements-nodeps.txt",
    "prototypes/reference/go.mod",
    "prototypes/reference/go.sum",
    # Its APT_PACKAGES list is the system-level lock (names; versions are measured below).
    "workflow/setup.sh",
)
PYTHON_PACKAGES = (
    "snakemake",
    "snakemake-executor-plugin-slurm",
    "polars",
    "pyarrow",
    "numpy",
    "scipy",
    "statsmodels",
    "rocrate",
    "apache-otava",
    "typst",
    "pypandoc_binary",
)
R_PACKAGES = ("ggplot2", "knitr", "rmarkdown", "data.table", "jsonlite")
RESULT_FILES = (
    "runs.parquet",
    "runs.csv",
    "cells.csv",
    "comparisons.csv",
    "findings.json",
    "ingest.json",
)
SETUP_RECORD = ".venv/netstick-setup.json"
# The cTuning / ACM artifact check-list (ctuning.org/ae/submission_extra.html), in its order.
CTUNING_ITEMS = (
    "Algorithm",
    "Program",
    "Compilation",
    "Transformations",
    "Binary",
    "Model",
    "Data set",
    "Run-time environment",
    "Hardware",
    "Run-time state",
    "Execution",
    "Metrics",
    "Output",
    "Experiments",
    "How much disk space required (approximately)?",
    "How much time is needed to prepare workflow (approximately)?",
    "How much time is needed to complete experiments (approximately)?",
    "Publicly available?",
    "Code licenses (if publicly available)?",
    "Data licenses (if publicly available)?",
    "Workflow framework used?",
    "Archived (provide DOI)?",
)
# ACM's names, with its en dashes.
ACM_BADGES = (
    "Artifacts Available",
    "Artifacts Evaluated – Functional",  # noqa: RUF001
    "Artifacts Evaluated – Reusable",  # noqa: RUF001
    "Results Reproduced",
)
# First lines of common licence texts -> SPDX identifier (a hint; the file itself is the licence).
SPDX_HINTS = (
    (re.compile(r"^MIT License", re.I), "MIT"),
    (re.compile(r"^Apache License", re.I), "Apache-2.0"),
    (re.compile(r"^BSD 3-Clause", re.I), "BSD-3-Clause"),
    (re.compile(r"^BSD 2-Clause", re.I), "BSD-2-Clause"),
    (re.compile(r"^GNU GENERAL PUBLIC LICENSE", re.I), "GPL"),
    (re.compile(r"^Mozilla Public License Version 2\.0", re.I), "MPL-2.0"),
    (re.compile(r"^Creative Commons Attribution 4\.0", re.I), "CC-BY-4.0"),
)


# -- small readers -------------------------------------------------------------------------------


def _run(argv: Sequence[str], cwd: Path | None = None) -> str | None:
    """stdout of a command (unstripped: `git status --porcelain` lines start with a space), or
    None when it is missing, fails or exceeds TOOL_TIMEOUT_S."""
    return provenance.run_tool(argv, cwd, timeout_s=TOOL_TIMEOUT_S, strip=False)


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _rel(path: Path, repo: Path) -> str:
    """Path relative to the repository; outside it only its name (no machine paths in output)."""
    try:
        return path.resolve().relative_to(repo.resolve()).as_posix()
    except ValueError:
        return f"{path.name} (outside the repository)"


def _distinct(values: Iterable[Any]) -> list[Any]:
    out: list[Any] = []
    for v in values:
        if v is not None and v not in out:
            out.append(v)
    return out


def _iso(unix_s: float) -> str:
    return dt.datetime.fromtimestamp(unix_s, dt.UTC).isoformat(timespec="seconds")


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"  # not reached: the loop returns at GiB


def human_seconds(s: float) -> str:
    if s < 60:
        return f"{s:.1f} s"
    minutes, sec = divmod(round(s), 60)
    if minutes < 60:
        return f"{minutes} min {sec:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


# -- the campaign's runs -------------------------------------------------------------------------


def _scan_runs(raw: Path, plan: dict[str, Any] | None) -> list[dict[str, Any]]:
    """One entry per planned run: its record, its ok meta.json and its failed attempts' metas."""
    keys: list[tuple[str, str, dict[str, Any]]] = []
    if plan is not None:
        for entry in plan.get("runs") or []:
            cell = entry.get("cell") or {}
            if "cell_id" in cell and "run_id" in cell:
                keys.append((cell["cell_id"], cell["run_id"], cell))
    else:  # no plan: whatever records exist
        for rec in sorted(raw.glob("*/*.json")):
            keys.append((rec.parent.name, rec.stem, {}))
    runs = []
    for cell_id, run_id, cell in keys:
        cell_dir = raw / cell_id
        record = _read_json(cell_dir / f"{run_id}.json")
        meta = _read_json(cell_dir / run_id / "meta.json")
        failed_dir = cell_dir / f"{run_id}.failed"
        failed = [
            m
            for d in (sorted(failed_dir.iterdir()) if failed_dir.is_dir() else [])
            if (m := _read_json(d / "meta.json")) is not None
        ]
        runs.append(
            {
                "cell_id": cell_id,
                "run_id": run_id,
                "cell": cell,
                "record": record,
                "meta": meta if (record or {}).get("status") == "ok" else None,
                "failed_metas": failed,
            }
        )
    return runs


def _ok_metas(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r["meta"] for r in runs if r["meta"] is not None]


def _versions(metas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m.get("versions") or {} for m in metas]


# -- sections ------------------------------------------------------------------------------------


def is_checkout(repo: Path) -> bool:
    """repo is the top of a git work tree (not merely a folder inside another checkout)."""
    top = (_run(["git", "rev-parse", "--show-toplevel"], repo) or "").strip()
    try:
        return bool(top) and Path(top).resolve() == repo.resolve()
    except OSError:
        return False


def git_state(repo: Path, metas: list[dict[str, Any]]) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    if not is_checkout(repo):
        doc.update(checkout=False, commit=None, dirty=None, note="not a git checkout")
    else:
        commit = (_run(["git", "rev-parse", "HEAD"], repo) or "").strip() or None
        porcelain = _run(["git", "status", "--porcelain"], repo)
        changed = [ln[3:] for ln in (porcelain or "").splitlines() if ln.strip()]
        doc.update(
            checkout=True,
            commit=commit,
            dirty=bool(changed) if porcelain is not None else None,
            changed_paths=changed[:50],
            changed_paths_total=len(changed),
        )
    recorded = _distinct(((v.get("git") or {}).get("commit")) for v in _versions(metas))
    dirty_runs = sum(1 for v in _versions(metas) if (v.get("git") or {}).get("dirty"))
    doc["recorded_commits"] = recorded
    doc["runs_from_dirty_tree"] = dirty_runs
    warnings = []
    if len(recorded) > 1:
        warnings.append(f"the runs were measured at {len(recorded)} different commits")
    if doc["commit"] and recorded and any(c != doc["commit"] for c in recorded):
        warnings.append(f"the runs' commit(s) differ from HEAD {doc['commit']} at collection time")
    if dirty_runs:
        warnings.append(f"{dirty_runs} run(s) were measured from a work tree with changes")
    if not recorded:
        warnings.append("no run records a commit (no ok run with meta.json)")
    doc["warnings"] = warnings
    return doc


def lock_files(repo: Path) -> list[dict[str, Any]]:
    names = list(LOCK_FILES)
    listed = _run(["git", "ls-files", "*go.sum"], repo) if is_checkout(repo) else None
    for name in (listed or "").splitlines():
        if name.strip() and name.strip() not in names:
            names.append(name.strip())
    out = []
    for name in names:
        path = repo / name
        if path.is_file():
            out.append({"path": name, "sha256": sha256_of(path), "bytes": path.stat().st_size})
        else:
            out.append(
                {"path": name, "sha256": None, "bytes": None, "note": f"{NOT_AVAILABLE}: missing"}
            )
    return out


def apt_packages(repo: Path) -> dict[str, Any]:
    """The names setup.sh installs, and the versions installed on this machine now."""
    try:
        text = (repo / "workflow" / "setup.sh").read_text()
    except OSError:
        return {"names": [], "installed": f"{NOT_AVAILABLE}: workflow/setup.sh missing"}
    match = re.search(r"^APT_PACKAGES=\(([^)]*)\)", text, re.M)
    names = match.group(1).split() if match else []
    if not names:
        return {"names": [], "installed": f"{NOT_AVAILABLE}: no APT_PACKAGES in setup.sh"}
    out = _run(["dpkg-query", "-W", "-f=${Package}\\t${Version}\\n", *names])
    if out is None:
        # dpkg-query exits 1 when one name is not installed; ask one by one (bounded by names).
        installed: dict[str, str] = {}
        for name in names:
            line = _run(["dpkg-query", "-W", "-f=${Version}", name])
            installed[name] = line.strip() if line else "not installed"
        return {"names": names, "installed": installed}
    versions = dict(ln.split("\t", 1) for ln in out.splitlines() if "\t" in ln)
    return {"names": names, "installed": {n: versions.get(n, "not installed") for n in names}}


def _r_versions() -> dict[str, Any]:
    if shutil.which("Rscript") is None:
        return {"version": "R not installed (no Rscript on PATH)", "packages": {}}
    pkgs = ", ".join(f'"{p}"' for p in R_PACKAGES)
    code = (
        'cat(R.version.string, "\\n", sep = ""); '
        f"for (p in c({pkgs})) cat(p, tryCatch(as.character(packageVersion(p)), "
        'error = function(e) "not installed"), "\\n", sep = "\\t")'
    )
    out = _run(["Rscript", "-e", code])
    if out is None:
        return {"version": f"{NOT_AVAILABLE}: Rscript failed or timed out", "packages": {}}
    lines = out.splitlines()
    packages = {}
    for ln in lines[1:]:
        parts = ln.split("\t")
        if len(parts) >= 2:
            packages[parts[0]] = parts[1]
    return {"version": lines[0] if lines else NOT_AVAILABLE, "packages": packages}


def _first_line(argv: Sequence[str]) -> str | None:
    out = _run(argv)
    return out.splitlines()[0].strip() if out and out.strip() else None


def _pandoc_versions() -> dict[str, str]:
    system = _first_line(["pandoc", "--version"]) if shutil.which("pandoc") else None
    try:
        import pypandoc  # type: ignore[import-untyped]

        bundled = _first_line([str(pypandoc.get_pandoc_path()), "--version"])
    except (ImportError, OSError) as exc:
        bundled = f"{NOT_AVAILABLE}: {exc}"
    return {
        "system": system or "not installed",
        "pypandoc_binary": bundled or NOT_AVAILABLE,
    }


def software(repo: Path, metas: list[dict[str, Any]]) -> dict[str, Any]:
    packages = {}
    for name in PYTHON_PACKAGES:
        try:
            packages[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            packages[name] = "not installed"
    versions = _versions(metas)
    first = versions[0] if versions else {}
    quarto = _first_line(["quarto", "--version"]) if shutil.which("quarto") else None
    go_mod = repo / "prototypes" / "reference" / "go.mod"
    go_directive = None
    if go_mod.is_file():
        m = re.search(r"^go (\S+)", go_mod.read_text(), re.M)
        go_directive = m.group(1) if m else None
    return {
        "python": {"version": platform.python_version(), "packages": packages},
        "r": _r_versions(),
        "pandoc": _pandoc_versions(),
        "quarto": quarto or "not installed",
        "go": {
            "version_in_runs": _distinct(v.get("go_version") for v in versions)
            or [f"{NOT_AVAILABLE}: no ok run"],
            "go_mod_directive": go_directive or NOT_AVAILABLE,
            "modules": first.get("go_modules") or NOT_AVAILABLE,
            "modules_from": "the first ok run's meta.json" if first else NOT_AVAILABLE,
        },
        "python_in_runs": _distinct(v.get("python_version") for v in versions),
        "kernel": _distinct(v.get("kernel") for v in versions),
        "os": _distinct(v.get("os") for v in versions),
        "apt": apt_packages(repo),
        "note": (
            "python, r, pandoc, quarto and apt are measured on the machine that collected this "
            "file; go, python_in_runs, kernel and os are recorded by the runs (meta.json)"
        ),
    }


def _meminfo_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024  # the kernel reports kB (KiB)
    except (OSError, ValueError, IndexError):
        pass
    return None


def hardware(metas: list[dict[str, Any]]) -> dict[str, Any]:
    versions = _versions(metas)
    hosts = _distinct(
        (m.get("job") or {}).get("host") or (m.get("versions") or {}).get("hostname") for m in metas
    )
    return {
        "runs": {
            "source": "meta.json of the ok runs (the machines that measured)",
            "cpu_model": _distinct(v.get("cpu_model") for v in versions),
            "cpu_count": _distinct(v.get("cpu_count") for v in versions),
            "cpu_governor": _distinct(v.get("cpu_governor") for v in versions)
            or ["not exposed by the kernel"],
            "hostnames": hosts,
            "placement": _distinct((m.get("placement") or {}).get("kind") for m in metas),
            "isolation": _distinct(m.get("isolation") for m in metas),
        },
        "collection_machine": {
            "source": "this machine, when artifact.json was written",
            "memory_total_bytes": _meminfo_bytes(),
            "cpu_count": os.cpu_count(),
        },
    }


def _du(path: Path, repo: Path) -> dict[str, Any]:
    if not path.is_dir():
        return {"path": _rel(path, repo), "bytes": None, "files": None, "note": NOT_AVAILABLE}
    total = files = 0
    for root, _dirs, names in os.walk(path):  # a finite tree; symlinks are not followed
        for name in names:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:  # removed while walking (a campaign still running)
                continue
            files += 1
    return {"path": _rel(path, repo), "bytes": total, "files": files, "human": human_bytes(total)}


def disk(raw: Path, results: Path, repo: Path) -> dict[str, Any]:
    r, s = _du(raw, repo), _du(results, repo)
    total = (r["bytes"] or 0) + (s["bytes"] or 0)
    env = {name: _du(repo / name, repo) for name in (".venv", ".tools")}
    return {
        "raw": r,
        "results": s,
        "total_bytes": total,
        "total_human": human_bytes(total),
        "environment": env,
        "environment_note": (
            "the Python environment (.venv) and a fetched Go toolchain (.tools, absent when a "
            "new enough Go is on PATH); the Go module cache and Debian packages are not measured"
        ),
    }


def timing(runs: list[dict[str, Any]], repo: Path) -> dict[str, Any]:
    spans = []  # (start, end) of every ok run and every failed attempt
    windows_s = 0.0
    overhead_s = 0.0
    for r in runs:
        for m in ([r["meta"]] if r["meta"] else []) + r["failed_metas"]:
            if isinstance(m.get("start_unix_ns"), int) and isinstance(m.get("end_unix_ns"), int):
                spans.append((m["start_unix_ns"], m["end_unix_ns"]))
        m = r["meta"]
        if m is None:
            continue
        ws, we = m.get("window_start_unix_ns"), m.get("window_end_unix_ns")
        if isinstance(ws, int) and isinstance(we, int):
            windows_s += (we - ws) / 1e9
        elif isinstance((m.get("phases_s") or {}).get("measurement"), int | float):
            windows_s += float(m["phases_s"]["measurement"])
        if isinstance(m.get("overhead_s"), int | float):
            overhead_s += float(m["overhead_s"])
    doc: dict[str, Any] = {}
    if spans:
        first = min(s for s, _ in spans)
        last = max(e for _, e in spans)
        run_s = (last - first) / 1e9
        doc.update(
            time_to_run_s=run_s,
            time_to_run_human=human_seconds(run_s),
            first_start_unix_ns=first,
            last_end_unix_ns=last,
            start_time=_iso(first / 1e9),
            end_time=_iso(last / 1e9),
            attempts_counted=len(spans),
        )
    else:
        doc.update(time_to_run_s=None, time_to_run_human=f"{NOT_AVAILABLE}: no run has finished")
    doc.update(
        measurement_windows_s=round(windows_s, 3),
        overhead_s=round(overhead_s, 3),
        definition=(
            "time_to_run_s: earliest start_unix_ns to latest end_unix_ns over the ok runs and "
            "failed attempts (meta.json); excludes Snakemake's start, the statistics and the "
            "report. measurement_windows_s and overhead_s are sums over the ok runs."
        ),
    )
    setup = _read_json(repo / SETUP_RECORD)
    if setup is not None and isinstance(setup.get("steps"), dict):
        steps = {k: v for k, v in setup["steps"].items() if isinstance(v, int | float)}
        total = sum(steps.values())
        doc["time_to_prepare"] = {
            "source": SETUP_RECORD,
            "steps_s": steps,
            "total_s": round(total, 1),
            "human": human_seconds(total),
            "finished_unix_s": setup.get("finished_unix_s"),
            "excludes": "the Go build of `make build`, which is not recorded",
        }
    else:
        doc["time_to_prepare"] = (
            f"not recorded ({SETUP_RECORD} is written by workflow/setup.sh when it installs "
            "something)"
        )
    return doc


def experiments(plan: dict[str, Any] | None, runs: list[dict[str, Any]]) -> dict[str, Any]:
    status: dict[str, int] = {"ok": 0, "failed": 0, "not_run": 0}
    per_cell: dict[str, int] = {}
    durations: list[Any] = []
    for r in runs:
        s = (r["record"] or {}).get("status") or "not_run"
        status[s] = status.get(s, 0) + 1
        per_cell[r["cell_id"]] = per_cell.get(r["cell_id"], 0) + 1
        d = r["cell"].get("duration_s")
        if d is not None and d not in durations:
            durations.append(d)
    doc: dict[str, Any] = {
        "source": "plan.json and the run records" if plan else "run records (plan.json missing)",
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
        "transports": sorted({str(r["cell"].get("transport")) for r in runs if r["cell"]}),
        "players": sorted({int(r["cell"]["players"]) for r in runs if "players" in r["cell"]}),
        "workloads": sorted({str(r["cell"].get("workload")) for r in runs if r["cell"]}),
        "network_profiles": sorted(
            {json.dumps(r["cell"].get("network_profile")).strip('"') for r in runs if r["cell"]}
        ),
        "prototypes": sorted({str(r["cell"].get("prototype")) for r in runs if r["cell"]}),
        "not_runnable_here": [
            {k: u.get(k) for k in ("prototype", "reason", "runs")}
            for u in (plan or {}).get("unavailable") or []
        ],
    }
    if status:  # any other status a record may carry
        doc["runs_other_status"] = status
    return doc


def results_files(results: Path) -> dict[str, Any]:
    files: dict[str, Any] = {}
    for name in RESULT_FILES:
        path = results / name
        if path.is_file():
            files[name] = {"bytes": path.stat().st_size, "sha256": sha256_of(path)}
        else:
            files[name] = f"{NOT_AVAILABLE}: {name} not found"
    doc: dict[str, Any] = {"files": files}
    findings = _read_json(results / "findings.json")
    doc["findings"] = (
        len(findings.get("findings") or [])
        if findings is not None
        else f"{NOT_AVAILABLE}: findings.json missing or not JSON"
    )
    ingest = _read_json(results / "ingest.json")
    doc["ingest"] = (
        {k: ingest.get(k) for k in ("runs", "runs_ok", "samples")}
        | {
            "bad_rows": sum((ingest.get("bad_rows") or {}).values()),
            "bad_files": len(ingest.get("bad_files") or []),
        }
        if ingest is not None
        else f"{NOT_AVAILABLE}: ingest.json missing or not JSON"
    )
    try:
        import pyarrow.parquet as pq

        statuses = pq.read_table(results / "runs.parquet", columns=["status"]).column(0)
        counts: dict[str, int] = {}
        for s in statuses.to_pylist():
            counts[str(s)] = counts.get(str(s), 0) + 1
        doc["runs_table_status"] = counts
    except Exception as exc:  # missing, unreadable or without a status column: say so
        doc["runs_table_status"] = f"{NOT_AVAILABLE}: runs.parquet ({type(exc).__name__})"
    return doc


def metrics() -> dict[str, Any]:
    from stats.analyse import METRICS

    return {
        "source": "stats/analyse.py METRICS",
        "list": [{"name": n, "label": label, "unit": u} for n, label, u in METRICS],
        "rtt_definition": (
            "RTT is the uniform `net` probe of the prototype contract (prototypes/CONTRACT.md): "
            "players send timestamped probes that the server echoes in its receive path, "
            "immediately, the same way for every library, so transports are compared on one "
            "measure; rtt_net_p50/p95/p99_us are percentiles over each run's measurement window, "
            "and the report gives their median across runs."
        ),
    }


def _licence(path: Path, repo: Path) -> dict[str, Any]:
    try:
        lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        lines = []
    first = lines[0] if lines else ""
    spdx = next((sid for rx, sid in SPDX_HINTS if rx.search(first)), None)
    if spdx == "Apache-2.0" and not any("Version 2.0" in ln for ln in lines[:3]):
        spdx = None
    return {"file": _rel(path, repo), "first_line": first, "spdx": spdx}


def licences(repo: Path) -> dict[str, Any]:
    code = next(
        (
            _licence(repo / n, repo)
            for n in ("LICENSE", "LICENSE.md", "LICENSE.txt", "COPYING")
            if (repo / n).is_file()
        ),
        None,
    )
    external = []
    ext = repo / "data" / "external"
    for d in sorted(ext.iterdir()) if ext.is_dir() else []:
        for f in sorted(d.glob("LICENSE*")) if d.is_dir() else []:
            external.append({"dataset": d.name, **_licence(f, repo)})
    return {
        "code": code or "no licence file (no LICENSE, LICENSE.md, LICENSE.txt or COPYING)",
        "campaign_data": (
            f"as the code ({code['first_line']})"
            if code
            else "no licence file: the measured data carry no licence"
        ),
        "external_data": external,
    }


def citation(repo: Path) -> dict[str, Any]:
    path = repo / "CITATION.cff"
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        return {"file": NOT_AVAILABLE, "doi": None, "note": f"CITATION.cff: {type(exc).__name__}"}
    doc = doc if isinstance(doc, dict) else {}
    doi = doc.get("doi")
    for ident in doc.get("identifiers") or []:
        if doi is None and isinstance(ident, dict) and ident.get("type") == "doi":
            doi = ident.get("value")
    return {
        "file": "CITATION.cff",
        "title": doc.get("title"),
        "doi": doi,
        "repository_code": doc.get("repository-code"),
    }


def _public_remote(repo: Path) -> str | None:
    out = _run(["git", "remote", "-v"], repo) if is_checkout(repo) else None
    urls = _distinct(ln.split()[1] for ln in (out or "").splitlines() if len(ln.split()) > 1)
    return ", ".join(urls) if urls else None


# -- badges, check-list, commands ----------------------------------------------------------------


def _makefile_targets(repo: Path) -> list[str]:
    try:
        text = (repo / "Makefile").read_text()
    except OSError:
        return []
    return re.findall(r"^([A-Za-z][\w-]*):", text, re.M)


def acm_badges(doc: dict[str, Any], repo: Path) -> list[dict[str, Any]]:
    cit = doc["citation"]
    remote = doc["public_remote"]
    lic = doc["licences"]["code"]
    available_missing = []
    if not cit.get("doi"):
        available_missing.append("a permanent archive (e.g. Zenodo) with a DOI in CITATION.cff")
    if not remote:
        available_missing.append("a public repository (this checkout has no git remote)")
    if not isinstance(lic, dict):
        # Not required by the badge, but an archive without a licence cannot be reused.
        available_missing.append("a licence file (LICENSE), needed for reuse")
    available = {
        "badge": ACM_BADGES[0],
        "met": bool(cit.get("doi")),
        "evidence": (
            f"CITATION.cff doi: {cit['doi']}"
            if cit.get("doi")
            else f"CITATION.cff: {cit.get('file')}, no doi"
        )
        + (f"; git remote: {remote}" if remote else "; no git remote"),
        "missing": "; ".join(available_missing) or "nothing",
    }

    targets = _makefile_targets(repo)
    readme = repo / "README.md"
    readme_text = readme.read_text() if readme.is_file() else ""
    tests = sorted((repo / "tests" / "python").glob("test_*.py"))
    exp = doc["experiments"]
    git = doc["git"]
    res = doc["results"]["files"]
    checks = {
        "documented: README.md exists and names `make run` and `make test`": bool(readme_text)
        and "make run" in readme_text
        and "make test" in readme_text,
        "exercisable: Makefile has the targets run and test": {"run", "test"} <= set(targets),
        "exercisable: tests/python has test files": bool(tests),
        "complete: every planned run finished ok": exp["runs_planned"] > 0
        and exp["runs_ok"] == exp["runs_planned"],
        "complete: the stats tables exist (runs.parquet, cells.csv, findings.json)": all(
            isinstance(res.get(n), dict) for n in ("runs.parquet", "cells.csv", "findings.json")
        ),
        "consistent: all runs at one commit, equal to HEAD, from a clean tree": not git["warnings"],
    }
    functional_met = all(checks.values())
    functional = {
        "badge": ACM_BADGES[1],
        "met": functional_met,
        "evidence": "self-check (evaluators decide): "
        + "; ".join(f"{k}: {'yes' if v else 'no'}" for k, v in checks.items()),
        "missing": "; ".join(k for k, v in checks.items() if not v)
        or "nothing the self-check sees",
    }

    schemas = sorted(p.name for p in (repo / "workflow" / "schemas").glob("*.json"))
    reusable_checks = {
        "Functional self-check passes": functional_met,
        f"configuration schemas in workflow/schemas ({', '.join(schemas) or 'none'})": bool(
            schemas
        ),
        f"tests ({len(tests)} files in tests/python)": bool(tests),
        "README documents adding a prototype": "## Adding a prototype" in readme_text,
    }
    reusable = {
        "badge": ACM_BADGES[2],
        "met": all(reusable_checks.values()),
        "evidence": "self-check (evaluators decide): "
        + "; ".join(f"{k}: {'yes' if v else 'no'}" for k, v in reusable_checks.items()),
        "missing": "; ".join(k for k, v in reusable_checks.items() if not v)
        or "nothing the self-check sees",
    }
    reproduced = {
        "badge": ACM_BADGES[3],
        "met": False,
        "evidence": "awarded only after an independent team obtains the main results with this "
        "artifact; the authors cannot claim it",
        "missing": "an independent reproduction",
    }
    return [available, functional, reusable, reproduced]


def commands(campaign: str, commit: str | None) -> list[dict[str, str]]:
    c = campaign
    return [
        {"what": "the code of this campaign", "command": f"git checkout {commit or 'HEAD'}"},
        {"what": "install, build, run and report (local)", "command": f"make run CAMPAIGN={c}"},
        {
            "what": "the workflow alone (local)",
            "command": f".venv/bin/snakemake --config campaign={c}",
        },
        {
            "what": "on the DAS-6 cluster (SLURM), from the repo root",
            "command": f".venv/bin/snakemake --profile das6 --config campaign={c}",
        },
        {
            "what": "the report alone",
            "command": f".venv/bin/python -m report.render data/results/{c} --raw data/raw/{c} "
            f"--out report/_output/{c}/index.html",
        },
        {
            "what": "this metadata",
            "command": f".venv/bin/python -m report.artifact data/results/{c} --raw data/raw/{c}",
        },
    ]


def _join(values: Sequence[Any]) -> str:
    return ", ".join(str(v) for v in values) if values else NOT_AVAILABLE


def ctuning_checklist(doc: dict[str, Any]) -> list[dict[str, str]]:
    exp, sw, hw, t = doc["experiments"], doc["software"], doc["hardware"], doc["time"]
    disk_doc, lic = doc["disk"], doc["licences"]
    runs_hw = hw["runs"]
    go = sw["go"]
    code_lic = lic["code"]
    prep = t["time_to_prepare"]
    cmd = {c["what"]: c["command"] for c in doc["commands"]}
    c = doc["campaign"]
    n_modules = len(go["modules"]) if isinstance(go["modules"], dict) else 0
    raw_disk = disk_doc["raw"]
    env_disk = disk_doc["environment"]
    values = {
        "Algorithm": (
            f"prototype servers and player emulators ({_join(exp['prototypes'])}) exchange game "
            f"traffic over {_join(exp['transports'])} for a fixed window; per-run RTT percentiles "
            "from the uniform net probe, CPU and RSS sampling, wire counters; medians across "
            "runs with intervals (stats/analyse.py)"
        ),
        "Program": (
            f"Netstick reference prototype netstick-ref (Go, prototypes/reference) with the "
            f"transport libraries pinned in go.mod ({n_modules} modules recorded by the runs); "
            "Python harness and statistics (workflow/, stats/); R report"
        ),
        "Compilation": (
            f"Go reference prototype built with `make build` "
            f"(go {_join([str(v).removeprefix('go') for v in go['version_in_runs']])} "
            f"recorded by the runs; go.mod requires go {go['go_mod_directive']})"
        ),
        "Transformations": "none",
        "Binary": "built from source by `make build` (prototypes/reference/bin/netstick-ref); "
        "no binaries are distributed",
        "Model": "none",
        "Data set": (
            f"generated by the experiments: {raw_disk['path']} ({raw_disk.get('files')} files, "
            f"{raw_disk.get('human', NOT_AVAILABLE)}); no input data set"
        ),
        "Run-time environment": (
            f"{_join(sw['os'])}; kernel {_join(sw['kernel'])}; "
            f"Python {_join(sw['python_in_runs'])} (runs); {sw['r']['version']}; "
            f"{sw['pandoc']['system']} and "
            f"{sw['pandoc']['pypandoc_binary']} (pypandoc-binary); quarto {sw['quarto']}"
        ),
        "Hardware": (
            f"{_join(runs_hw['cpu_model'])}, {_join(runs_hw['cpu_count'])} CPUs, hosts "
            f"{_join(runs_hw['hostnames'])} (runs); collection machine: "
            f"{human_bytes(hw['collection_machine']['memory_total_bytes'] or 0)} memory, "
            f"{hw['collection_machine']['cpu_count']} CPUs"
        ),
        "Run-time state": (
            f"isolation {_join(runs_hw['isolation'])}, placement {_join(runs_hw['placement'])}, "
            f"CPU governor {_join(runs_hw['cpu_governor'])}; run order: {exp['order']}"
        ),
        "Execution": (
            f"`{cmd['install, build, run and report (local)']}`; on a SLURM cluster "
            f"`{cmd['on the DAS-6 cluster (SLURM), from the repo root']}`"
        ),
        "Metrics": _join([f"{m['name']} ({m['unit']})" for m in doc["metrics"]["list"]]),
        "Output": (
            f"data/raw/{c} (logs, monitor CSVs, meta.json, run records), data/results/{c} ("
            + _join([n for n, v in doc["results"]["files"].items() if isinstance(v, dict)])
            + f"), report/_output/{c}/index.html and its RO-Crate (ro-crate-metadata.json)"
        ),
        "Experiments": (
            f"{exp['cells']} cells, {_join(exp['repetitions_per_cell'])} repetitions each, "
            f"{exp['runs_planned']} runs planned: {exp['runs_ok']} ok, {exp['runs_failed']} "
            f"failed, {exp['runs_not_run']} not run; windows {_join(exp['durations_s'])} s; "
            f"seed {exp['seed']}"
        ),
        "How much disk space required (approximately)?": (
            f"{disk_doc['total_human']} for this campaign (raw "
            f"{disk_doc['raw'].get('human', NOT_AVAILABLE)}, results "
            f"{disk_doc['results'].get('human', NOT_AVAILABLE)}), measured; plus the "
            f"environment: .venv {env_disk['.venv'].get('human', NOT_AVAILABLE)}, .tools "
            f"{env_disk['.tools'].get('human', 'absent')} (Go module cache and Debian packages "
            "not measured)"
        ),
        "How much time is needed to prepare workflow (approximately)?": (
            f"{prep['human']} ({SETUP_RECORD}; the Go build is not included)"
            if isinstance(prep, dict)
            else prep
        ),
        "How much time is needed to complete experiments (approximately)?": (
            f"{t['time_to_run_human']} measured from the first run's start to the last run's end"
            + (
                f" ({t['measurement_windows_s']:.0f} s in measurement windows)"
                if t["time_to_run_s"] is not None
                else ""
            )
        ),
        "Publicly available?": (
            f"git remote {doc['public_remote']}"
            if doc["public_remote"]
            else "not yet: this checkout has no public remote"
        )
        + (f"; DOI {doc['citation']['doi']}" if doc["citation"].get("doi") else "; no DOI"),
        "Code licenses (if publicly available)?": (
            f"{code_lic['first_line']} ({code_lic['file']})"
            if isinstance(code_lic, dict)
            else code_lic
        ),
        "Data licenses (if publicly available)?": (
            f"campaign data: {lic['campaign_data']}"
            + "".join(
                f"; {e['dataset']} (data/external): {e['first_line']}" for e in lic["external_data"]
            )
        ),
        "Workflow framework used?": (
            f"Snakemake {sw['python']['packages'].get('snakemake')} (Snakefile) with "
            f"snakemake-executor-plugin-slurm "
            f"{sw['python']['packages'].get('snakemake-executor-plugin-slurm')} for SLURM"
        ),
        "Archived (provide DOI)?": doc["citation"].get("doi") or "no: not archived, no DOI yet",
    }
    return [{"item": item, "value": values[item]} for item in CTUNING_ITEMS]


# -- the whole file ------------------------------------------------------------------------------


def collect(results: Path, raw: Path, repo: Path) -> dict[str, Any]:
    """Everything artifact.json holds (see the module docstring)."""
    plan = _read_json(raw / "plan.json")
    runs = _scan_runs(raw, plan)
    metas = _ok_metas(runs)
    campaign = str((plan or {}).get("campaign") or raw.name)
    doc: dict[str, Any] = {
        "artifact_schema": ARTIFACT_SCHEMA,
        "campaign": campaign,
        "generated_unix_s": int(time.time()),
        "plan": "plan.json" if plan is not None else f"{NOT_AVAILABLE}: plan.json missing",
        "git": git_state(repo, metas),
        "lock_files": lock_files(repo),
        "software": software(repo, metas),
        "hardware": hardware(metas),
        "disk": disk(raw, results, repo),
        "time": timing(runs, repo),
        "experiments": experiments(plan, runs),
        "results": results_files(results),
        "metrics": metrics(),
        "licences": licences(repo),
        "citation": citation(repo),
        "public_remote": _public_remote(repo),
    }
    recorded = doc["git"]["recorded_commits"]
    commit = recorded[0] if len(recorded) == 1 else doc["git"]["commit"]
    doc["commands"] = commands(campaign, commit)
    doc["acm_badges"] = acm_badges(doc, repo)
    doc["ctuning_checklist"] = ctuning_checklist(doc)
    return doc


def write(doc: dict[str, Any], out: Path) -> None:
    records.write_text(out, json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m report.artifact", description=__doc__)
    ap.add_argument("results", type=Path, help="data/results/<campaign> (artifact.json goes here)")
    ap.add_argument("--raw", type=Path, required=True, help="data/raw/<campaign> (plan.json)")
    ap.add_argument("--repo", type=Path, default=REPO, help="the Netstick checkout (default: this)")
    args = ap.parse_args(argv)
    if not args.raw.is_dir():
        ap.error(f"--raw: {args.raw} is not a directory; expected data/raw/<campaign>")
    doc = collect(args.results, args.raw, args.repo)
    out = args.results / "artifact.json"
    write(doc, out)
    warnings = doc["git"]["warnings"]
    print(f"artifact: {out}" + (f" (git: {'; '.join(warnings)})" if warnings else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
