"""The checkout and the machine that collect a campaign's results, as they are now: git state,
lock-file hashes, installed software, hardware, disk use, setup time, licence, citation, what
the checkout documents and tests, and the prototypes the campaign's plan names (a
prototype_record of each, as the checkout holds it now). workflow/campaign/facts/ writes them
into facts.json with what the runs recorded (runs.py).
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from prototypes.contract import manifest as manifests
from workflow.files import read_json, repo_relative, sha256_of
from workflow.harness.environment import (
    cpu_governor,
    cpu_model,
    git_commit,
    go_modules,
    go_version,
    run_tool,
)
from workflow.harness.prototype_record import file_record, prototype_record

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
SETUP_RECORD = ".venv/netstick-setup.json"
LICENCE_FILES = ("LICENSE", "LICENSE.md", "LICENSE.txt", "COPYING")
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


def _tool(argv: Sequence[str], cwd: Path | None = None) -> str | None:
    """stdout of a command, unstripped (`git status --porcelain` lines start with a space)."""
    return run_tool(argv, cwd, timeout_s=TOOL_TIMEOUT_S, strip=False)


def _first_line(argv: Sequence[str]) -> str | None:
    out = _tool(argv)
    return out.splitlines()[0].strip() if out and out.strip() else None


def _rel(path: Path, repo: Path) -> str:
    """Path relative to the repository; outside it only its name (no machine paths in output)."""
    try:
        return path.resolve().relative_to(repo.resolve()).as_posix()
    except ValueError:
        return f"{path.name} (outside the repository)"


def is_checkout(repo: Path) -> bool:
    """repo is the top of a git work tree (not merely a folder inside another checkout)."""
    top = (_tool(["git", "rev-parse", "--show-toplevel"], repo) or "").strip()
    try:
        return bool(top) and Path(top).resolve() == repo.resolve()
    except OSError:
        return False


def git_state(repo: Path) -> dict[str, Any]:
    """HEAD, whether the work tree has changes, and which paths (at most 50 named)."""
    if not is_checkout(repo):
        return {"checkout": False, "commit": None, "dirty": None, "note": "not a git checkout"}
    head = git_commit(repo)
    porcelain = _tool(["git", "status", "--porcelain"], repo)
    changed = [ln[3:] for ln in (porcelain or "").splitlines() if ln.strip()]
    return {
        "checkout": True,
        "commit": head["commit"] or None,
        "dirty": head["dirty"],
        "changed_paths": changed[:50],
        "changed_paths_total": len(changed),
    }


def lock_files(repo: Path) -> list[dict[str, Any]]:
    names = list(LOCK_FILES)
    listed = _tool(["git", "ls-files", "*go.sum"], repo) if is_checkout(repo) else None
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
    # What a run needs and what only the tests add (setup.sh --for run|test).
    names = [
        name
        for group in re.findall(r"^(?:RUN|TEST)_PACKAGES=\(([^)]*)\)", text, re.M)
        for name in group.split()
    ]
    if not names:
        return {"names": [], "installed": f"{NOT_AVAILABLE}: no RUN_PACKAGES in setup.sh"}
    out = _tool(["dpkg-query", "-W", "-f=${Package}\\t${Version}\\n", *names])
    if out is None:
        # dpkg-query exits 1 when one name is not installed; ask one by one (bounded by names).
        installed: dict[str, str] = {}
        for name in names:
            line = _tool(["dpkg-query", "-W", "-f=${Version}", name])
            installed[name] = line.strip() if line else "not installed"
        return {"names": names, "installed": installed}
    versions = dict(ln.split("\t", 1) for ln in out.splitlines() if "\t" in ln)
    return {"names": names, "installed": {n: versions.get(n, "not installed") for n in names}}


def r_versions() -> dict[str, Any]:
    if shutil.which("Rscript") is None:
        return {"version": "R not installed (no Rscript on PATH)", "packages": {}}
    pkgs = ", ".join(f'"{p}"' for p in R_PACKAGES)
    code = (
        'cat(R.version.string, "\\n", sep = ""); '
        f"for (p in c({pkgs})) cat(p, tryCatch(as.character(packageVersion(p)), "
        'error = function(e) "not installed"), "\\n", sep = "\\t")'
    )
    out = _tool(["Rscript", "-e", code])
    if out is None:
        return {"version": f"{NOT_AVAILABLE}: Rscript failed or timed out", "packages": {}}
    lines = out.splitlines()
    packages = {}
    for ln in lines[1:]:
        parts = ln.split("\t")
        if len(parts) >= 2:
            packages[parts[0]] = parts[1]
    return {"version": lines[0] if lines else NOT_AVAILABLE, "packages": packages}


def pandoc_versions() -> dict[str, str]:
    system = _first_line(["pandoc", "--version"]) if shutil.which("pandoc") else None
    try:
        import pypandoc  # type: ignore[import-untyped]

        bundled = _first_line([str(pypandoc.get_pandoc_path()), "--version"])
    except (ImportError, OSError) as exc:
        bundled = f"{NOT_AVAILABLE}: {exc}"
    return {"system": system or "not installed", "pypandoc_binary": bundled or NOT_AVAILABLE}


def software(repo: Path) -> dict[str, Any]:
    """Python (with the packages the pipeline uses), R, pandoc, Quarto, Go and the Go modules of
    go.mod, and the Debian packages of setup.sh, as installed here now."""
    packages = {}
    for name in PYTHON_PACKAGES:
        try:
            packages[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            packages[name] = "not installed"
    quarto = _first_line(["quarto", "--version"]) if shutil.which("quarto") else None
    go_mod = repo / "prototypes" / "reference" / "go.mod"
    directive = re.search(r"^go (\S+)", go_mod.read_text(), re.M) if go_mod.is_file() else None
    return {
        "python": {"version": platform.python_version(), "packages": packages},
        "r": r_versions(),
        "pandoc": pandoc_versions(),
        "quarto": quarto or "not installed",
        "go": {
            "installed": go_version(repo / "prototypes/reference/bin/netstick-ref")
            or "not installed",
            "go_mod_directive": directive.group(1) if directive else NOT_AVAILABLE,
            "go_mod_modules": go_modules(go_mod),
        },
        "apt": apt_packages(repo),
    }


def memory_total_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024  # the kernel reports kB (KiB)
    except (OSError, ValueError, IndexError):
        pass
    return None


def hardware() -> dict[str, Any]:
    return {
        "memory_total_bytes": memory_total_bytes(),
        "cpu_count": os.cpu_count(),
        "cpu_model": cpu_model(),
        "cpu_governor": cpu_governor(),
    }


def disk_use(path: Path, repo: Path) -> dict[str, Any]:
    """Bytes and files under path (symlinks not followed); None where path is no directory."""
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
    return {"path": _rel(path, repo), "bytes": total, "files": files}


def disk(raw: Path, results: Path, repo: Path) -> dict[str, Any]:
    r, s = disk_use(raw, repo), disk_use(results, repo)
    return {
        "raw": r,
        "results": s,
        "total_bytes": (r["bytes"] or 0) + (s["bytes"] or 0),
        "environment": {name: disk_use(repo / name, repo) for name in (".venv", ".tools")},
        "environment_note": (
            "the Python environment (.venv) and a fetched Go toolchain (.tools, absent when a "
            "new enough Go is on PATH); the Go module cache and Debian packages are not measured"
        ),
    }


def time_to_prepare(repo: Path) -> dict[str, Any] | str:
    """The install steps' durations that workflow/setup.sh recorded, or why there are none."""
    setup = read_json(repo / SETUP_RECORD)
    if setup is None or not isinstance(setup.get("steps"), dict):
        return (
            f"not recorded ({SETUP_RECORD} is written by workflow/setup.sh when it installs "
            "something)"
        )
    steps = {k: v for k, v in setup["steps"].items() if isinstance(v, int | float)}
    return {
        "source": SETUP_RECORD,
        "steps_s": steps,
        "total_s": round(sum(steps.values()), 1),
        "finished_unix_s": setup.get("finished_unix_s"),
        "excludes": "the Go build of `make build`, which is not recorded",
    }


def licence_file(path: Path, repo: Path) -> dict[str, Any]:
    """A licence file: where, its first line, the SPDX identifier that line names, its sha256."""
    try:
        lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        lines = []
    first = lines[0] if lines else ""
    spdx = next((sid for rx, sid in SPDX_HINTS if rx.search(first)), None)
    if spdx == "Apache-2.0" and not any("Version 2.0" in ln for ln in lines[:3]):
        spdx = None
    return {"file": _rel(path, repo), "first_line": first, "spdx": spdx, "sha256": sha256_of(path)}


def licences(repo: Path) -> dict[str, Any]:
    code = next((licence_file(repo / n, repo) for n in LICENCE_FILES if (repo / n).is_file()), None)
    external = []
    ext = repo / "data" / "external"
    for d in sorted(ext.iterdir()) if ext.is_dir() else []:
        for f in sorted(d.glob("LICENSE*")) if d.is_dir() else []:
            external.append({"dataset": d.name, **licence_file(f, repo)})
    return {
        "code": code or f"no licence file (no {', '.join(LICENCE_FILES)})",
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
        "license": doc.get("license"),
        "doi": doi,
        "repository_code": doc.get("repository-code"),
    }


def public_remote(repo: Path) -> str | None:
    out = _tool(["git", "remote", "-v"], repo) if is_checkout(repo) else None
    urls = list(
        dict.fromkeys(ln.split()[1] for ln in (out or "").splitlines() if len(ln.split()) > 1)
    )
    return ", ".join(urls) if urls else None


def documentation(repo: Path) -> dict[str, Any]:
    """What the checkout gives a user to run and check it with (the ACM badges' documented,
    exercisable and reusable): what README.md names, the Makefile's targets, the test files and
    the configuration schemas."""
    try:
        readme = (repo / "README.md").read_text()
    except OSError:
        readme = None
    try:
        makefile = (repo / "Makefile").read_text()
    except OSError:
        makefile = ""
    text = readme or ""
    return {
        "readme": {
            "file": "README.md",
            "exists": readme is not None,
            "names_make_run": "make run" in text,
            "names_make_test": "make test" in text,
            "documents_adding_a_prototype": "## Adding a prototype" in text,
        },
        "makefile_targets": re.findall(r"^([A-Za-z][\w-]*):", makefile, re.M),
        "test_files": len(list((repo / "tests" / "python").rglob("test_*.py"))),
        "schemas": sorted(p.name for p in (repo / "workflow" / "schemas").glob("*.json")),
    }


def _by_name_outside(path: Any) -> Any:
    """An absolute path (outside the repository) by its name only, as _rel writes it."""
    if isinstance(path, str) and path.startswith("/"):
        return f"{Path(path).name} (outside the repository)"
    return path


def _public(record: dict[str, Any]) -> dict[str, Any]:
    """A prototype_record for facts.json: paths outside the repository by name only (facts
    describe the checkout; the machine's layout is no fact about it)."""
    out = dict(record)
    for key in ("manifest", "executable", "client_executable", "launcher"):
        if isinstance(out.get(key), dict):
            out[key] = {**out[key], "path": _by_name_outside(out[key].get("path"))}
    if isinstance(out.get("launcher"), dict):
        out["launcher"]["argv"] = [_by_name_outside(a) for a in out["launcher"].get("argv") or []]
    out["lock_files"] = [
        {**lf, "path": _by_name_outside(lf.get("path"))} for lf in out.get("lock_files") or []
    ]
    out["build_dir"] = _by_name_outside(out.get("build_dir"))
    return out


def campaign_prototypes(plan: Mapping[str, Any] | None, repo: Path) -> list[dict[str, Any]]:
    """A prototype_record, as the checkout holds it now, of every manifest the campaign's plan
    names (what the runs recorded is in their meta.json: runs.py); paths outside the
    repository by name only."""
    paths: list[str] = []
    for entry in (plan or {}).get("runs") or []:
        name = ((entry or {}).get("cell") or {}).get("prototype")
        if isinstance(name, str) and name not in paths:
            paths.append(name)
    out = []
    for name in paths:
        path = Path(name) if Path(name).is_absolute() else repo / name
        try:
            out.append(_public(prototype_record(manifests.load(path), repo)))
        except manifests.ManifestError as exc:
            error = repo_relative(str(exc), repo).replace(str(path.resolve()), _rel(path, repo))
            out.append(_public({"manifest": file_record(path, repo), "error": error}))
    return out
