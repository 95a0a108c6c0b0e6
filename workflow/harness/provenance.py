"""Provenance of a benchmark: what code, toolchain and machine produced the numbers.

    netstick report CAMPAIGN --step facts   ->   data/results/<campaign>/facts.json

collect and collect_run record where one benchmark's or one run's numbers came from (a run
keeps it in its meta.json, with a prototype_record of every prototype it started: manifest,
executable and launcher with their sha256, runtime, library versions, lock files); write_facts
records the checkout and machine that collect a campaign's results, and the prototypes its plan
names as the checkout holds them now, for its artifact appendix (report/checklist.py).
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from prototypes.contract import manifest as manifests
from workflow.files import read_json, repo_relative, sha256_of, write_json


def run_tool(
    argv: Sequence[str], cwd: Path | None = None, timeout_s: float = 10, strip: bool = True
) -> str | None:
    """stdout of a command, or None when it is missing, fails or exceeds timeout_s (a version
    or state that cannot be read is recorded as unknown, never a crash)."""
    try:
        out = subprocess.run(
            list(argv), cwd=cwd, capture_output=True, text=True, timeout=timeout_s, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if strip else out.stdout


def git_commit(repo: Path) -> dict[str, Any]:
    """HEAD commit and whether the work tree had uncommitted changes."""
    commit = run_tool(["git", "rev-parse", "HEAD"], repo)
    status = run_tool(["git", "status", "--porcelain"], repo)
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


def go_version(binary: Path | None = None) -> str | None:
    """The Go toolchain that built binary (from its build info), else the installed `go`."""
    go = shutil.which("go")
    if go is None:
        return None
    if binary is not None and binary.is_file():
        # First line of `go version -m BIN` is "BIN: go1.x.y".
        info = run_tool([go, "version", binary.as_posix()])
        if info:
            return info.split(": ", 1)[-1].splitlines()[0]
    return run_tool([go, "version"])


def cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def collect(repo: Path, binary: Path | None = None) -> dict[str, Any]:
    """Everything a reader needs to know where a result came from."""
    return {
        "git": git_commit(repo),
        "go_version": go_version(binary),
        "python_version": platform.python_version(),
        "kernel": platform.release(),
        "os": platform.platform(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpus_allowed": sorted(os.sched_getaffinity(0)),
        "hostname": platform.node(),
        "timestamp_utc": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "netstick_argv": [Path(sys.argv[0]).name, *sys.argv[1:]],
    }


def cpu_governor() -> str | None:
    """The cpufreq governor of CPU 0 (None where the kernel exposes none, e.g. in most VMs)."""
    try:
        return Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").read_text().strip()
    except OSError:
        return None


def go_modules(go_mod: Path) -> dict[str, str]:
    """Module -> version of every requirement in a go.mod (what a prototype was built from)."""
    return manifests.go_mod_requirements(go_mod)


def collect_run(
    repo: Path,
    prototypes: Sequence[dict[str, Any]] = (),
    log_dir: Path | None = None,
) -> dict[str, Any]:
    """Provenance of one run: code, the prototypes it started and the machine.

    prototypes: a prototype_record of each prototype the run started (made before starting it);
    log_dir: the run's logs, whose <proc>.meta.json say which library versions each process
    itself reports. python_version is the harness's own interpreter.
    """
    processes = processes_recorded(log_dir) if log_dir is not None else {}
    return {
        "git": git_commit(repo),
        "prototypes": [with_processes(p, processes, only=len(prototypes) == 1) for p in prototypes],
        "python_version": platform.python_version(),
        "kernel": platform.release(),
        "os": platform.platform(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpu_governor": cpu_governor(),
        "hostname": platform.node(),
    }


# -- the facts of a campaign's artifact appendix -------------------------------------------------
# What the checkout and the machine that collects a campaign's results are now: git state,
# lock-file hashes, installed software, hardware, disk use, setup time, licence and citation.
# data/results/<campaign>/facts.json holds them; report/checklist.py reads that file (with the
# provenance each run recorded in its meta.json) and writes the check-list and badges.

FACTS_SCHEMA = 1
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


# -- the prototypes a run starts -----------------------------------------------------------------
# A run records the prototype that actually ran, from the files the harness is about to start
# (after launcher resolution, before starting them), so a report names that prototype's
# language, runtime, libraries and executable hash instead of assuming the Go reference. The
# facts record the same for the prototypes a campaign's plan names, as the checkout holds them
# now; report/checklist.py compares the two.

VERSION_TIMEOUT_S = 10  # a runtime that cannot print its version within this is "unknown"


def _where(path: Path, repo: Path) -> str:
    """A path that ran: relative to the repository when inside it, else absolute (meta.json is
    raw data; the report shows outside paths by name only)."""
    try:
        return path.relative_to(repo.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def file_record(path: Path, repo: Path) -> dict[str, Any]:
    """Where a file that runs is (symlinks resolved), its sha256 and size; None values with a
    note when it cannot be read (the run then fails to start it and says why)."""
    resolved = path.resolve()
    try:
        return {
            "path": _where(resolved, repo),
            "sha256": sha256_of(resolved),
            "bytes": resolved.stat().st_size,
        }
    except OSError as exc:
        note = f"{NOT_AVAILABLE}: {exc.strerror or exc}"
        return {"path": _where(resolved, repo), "sha256": None, "bytes": None, "note": note}


def _go_tool(repo: Path) -> str | None:
    """The go command: on PATH, else the toolchain setup.sh fetches into .tools/go."""
    found = shutil.which("go")
    fetched = repo / ".tools" / "go" / "bin" / "go"
    return found or (str(fetched) if fetched.is_file() else None)


def go_build_info(binary: Path, repo: Path) -> dict[str, Any] | None:
    """What `go version -m BINARY` says the binary was built with: the Go toolchain, every
    module compiled in (version, `=> replacement` where replaced) and the build settings; None
    without a go command or for a file that is no Go binary."""
    go = _go_tool(repo)
    out = run_tool([go, "version", "-m", binary.as_posix()]) if go else None
    if not out:
        return None
    lines = out.splitlines()
    info: dict[str, Any] = {
        "go": lines[0].rsplit(": ", 1)[-1].strip(),
        "modules": {},
        "settings": {},
    }
    last = None
    for line in lines[1:]:
        parts = line.strip().split("\t")
        if parts[0] == "dep" and len(parts) >= 3:
            last = parts[1]
            info["modules"][last] = parts[2]
        elif parts[0] == "=>" and last is not None and len(parts) >= 3:
            info["modules"][last] += f" => {parts[1]} {parts[2]}"
        elif parts[0] == "build" and len(parts) >= 2 and "=" in parts[1]:
            key, value = parts[1].split("=", 1)
            info["settings"][key] = value
    return info


def runtime_version(interpreter: Path) -> str | None:
    """First line an interpreter prints for --version (Python, Mono, Node and dotnet print it
    on stdout, older JVMs and Python 2 on stderr); None when it cannot say."""
    try:
        out = subprocess.run(
            [interpreter.as_posix(), "--version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=VERSION_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    for text in (out.stdout, out.stderr):
        line = next((ln.strip() for ln in text.splitlines() if ln.strip()), None)
        if line and out.returncode == 0:
            return line
    return None


def _shebang(path: Path) -> list[str]:
    """The interpreter line of a script (#!/usr/bin/env python3 -> [/usr/bin/env, python3])."""
    try:
        with path.open("rb") as f:
            first = f.readline(256)
    except OSError:
        return []
    return first[2:].decode(errors="replace").split() if first.startswith(b"#!") else []


def _interpreter(argv: Sequence[str]) -> str | None:
    """The program that interprets the script: env's argument for `/usr/bin/env NAME`."""
    if not argv:
        return None
    if Path(argv[0]).name == "env":
        return next((a for a in argv[1:] if not a.startswith("-") and "=" not in a), None)
    return argv[0]


def _lock_files(man: manifests.Manifest, repo: Path) -> list[Path]:
    """The manifest's lock_files; without them a Go prototype's go.mod and go.sum (in its
    directory or the nearest parent inside the repository)."""
    if man.library_build is not None and man.library_build.external is None:
        # Another library version is built against its own module file and checksums.
        return [p for p in man.library_build.inputs if p.suffix in (".mod", ".sum")]
    declared = man.raw.get("lock_files")
    if isinstance(declared, list):
        return [man.directory / str(p) for p in declared]
    if man.language.lower() != "go":
        return []
    top = repo.resolve()
    for d in (man.directory, *man.directory.parents):
        if (d / "go.mod").is_file():
            return [d / "go.mod", d / "go.sum"]
        if d == top:
            break
    return []


def prototype_record(
    man: manifests.Manifest, repo: Path, argv: Sequence[str] | None = None
) -> dict[str, Any]:
    """What runs for one prototype: its manifest (path, sha256, name, language), the executable
    (and the clients' own, if any) and, for a script, the launcher that runs it (resolved path,
    sha256), the runtime, the manifest's library versions and the lock files with their sha256;
    Go modules only for a Go prototype.

    argv: the command the harness is about to start (server_argv); by default what {binary}
    expands to. The launcher is everything before the executable in it; a script started
    directly has its #! interpreter as launcher.
    """
    argv = list(argv) if argv is not None else man.binary_argv()
    locks = _lock_files(man, repo)
    exe = str(man.executable)
    launcher_argv = argv[: argv.index(exe)] if exe in argv else []
    shebang = [] if launcher_argv else _shebang(man.executable)
    search_path = man.environment.get("PATH", os.environ.get("PATH"))
    launcher: dict[str, Any] | None = None
    runtime = runtime_source = None
    interpreter = _interpreter(launcher_argv or shebang)
    if interpreter is not None:
        found = shutil.which(interpreter, path=search_path)
        resolved = Path(found) if found else None
        launcher = {
            "argv": repo_relative(launcher_argv or shebang, repo),
            "from": "launcher" if launcher_argv else "#! line of the executable",
            **(
                file_record(resolved, repo)
                if resolved
                else {"path": None, "sha256": None, "note": f"{interpreter} not found on PATH"}
            ),
        }
        runtime = runtime_version(resolved) if resolved else None
        runtime_source = f"{Path(interpreter).name} --version" if runtime else None
    doc: dict[str, Any] = {
        "manifest": file_record(man.path, repo),
        "name": man.name,
        "language": man.language,
        "engine": man.engine,
        "build_command": list(man.build_command) if man.build_command else None,
        # Who builds it when nothing here does (build.external: e.g. GameCI in GitHub Actions).
        "build_external": man.build_external,
        "build_dir": _where(man.directory, repo),
        "executable": file_record(man.executable, repo),
        # The clients' own program (a Unity player beside the dedicated-server build), hashed
        # like the server's; None when clients run the executable too.
        "client_executable": (
            file_record(man.program("client"), repo) if len(man.executables) > 1 else None
        ),
        "launcher": launcher,
        "runtime": runtime,
        "runtime_source": runtime_source,
        "library_versions": dict(man.library_versions),
        "lock_files": [file_record(p, repo) for p in locks],
    }
    if man.language.lower() == "go":
        build = go_build_info(man.executable, repo) if launcher is None else None
        if build is not None:
            doc.update(runtime=build["go"], runtime_source="go version -m (its build info)")
        go_mod = next((p for p in locks if p.name == "go.mod"), None)
        try:
            text = go_mod.read_text(errors="replace") if go_mod is not None else ""
        except OSError:  # recorded as unknown: provenance never stops a run
            text = ""
        directive = re.search(r"^go (\S+)", text, re.M)
        doc["go_mod_directive"] = directive.group(1) if directive else None
        doc["go_modules"] = go_modules(go_mod) if go_mod is not None else {}
        doc["go_build"] = build
        # The versions really linked, from the build info, of every library the manifest names:
        # the evidence that the cell's library_version is what ran, whatever anything claimed.
        doc["linked_versions"] = linked_versions(man, build)
    vb = man.library_build
    doc["library_build"] = {"library": vb.library, "version": vb.version} if vb else None
    if doc["runtime"] is None and man.engine:
        # A game-engine build (Unity) is run by its engine, which the manifest names.
        doc.update(runtime=man.engine, runtime_source="engine in the manifest")
    return doc


def linked_versions(man: manifests.Manifest, build: Mapping[str, Any] | None) -> dict[str, str]:
    """Library -> the module version the executable was linked with (go version -m), for every
    library of the manifest's transports and library_versions that the build info lists (not
    the standard library nor a C library; none when the build info is unreadable)."""
    modules = (build or {}).get("modules", {})
    names = dict.fromkeys([*(t.library for t in man.transports), *man.library_versions])
    out: dict[str, str] = {}
    for name in names:
        if name in modules:
            out[name] = str(modules[name]).split(" ", 1)[0]
        elif name == "go" and build:
            out[name] = str(build["go"])
    return out


def processes_recorded(log_dir: Path) -> dict[str, dict[str, Any]]:
    """Per process (server, client-0, ...): the prototype name and library versions its
    <proc>.meta.json reports (CONTRACT.md 3.1)."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(log_dir.glob("*.meta.json")):
        doc = read_json(path)
        if doc is None:
            continue
        versions = doc.get("library_versions")
        out[path.name.removesuffix(".meta.json")] = {
            "prototype": doc.get("prototype"),
            "library_versions": versions if isinstance(versions, dict) else None,
        }
    return out


def with_processes(
    record: dict[str, Any], processes: dict[str, dict[str, Any]], only: bool
) -> dict[str, Any]:
    """record with the versions its processes reported: all of them when it is the run's only
    prototype, else those naming it in their meta.json."""
    mine = {k: v for k, v in processes.items() if only or v.get("prototype") == record["name"]}
    return {**record, "processes": mine}


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


def campaign_prototypes(raw: Path, repo: Path) -> list[dict[str, Any]]:
    """A prototype_record, as the checkout holds it now, of every manifest the campaign's
    plan.json names (what the runs recorded is in their meta.json); paths outside the
    repository by name only."""
    plan = read_json(raw / "plan.json") or {}
    paths: list[str] = []
    for entry in plan.get("runs") or []:
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


def facts(results: Path, raw: Path, repo: Path) -> dict[str, Any]:
    """Everything facts.json holds (see the comment above FACTS_SCHEMA)."""
    return {
        "facts_schema": FACTS_SCHEMA,
        "generated_unix_s": int(time.time()),
        "source": "the checkout and the machine that wrote this file",
        "git": git_state(repo),
        "lock_files": lock_files(repo),
        "prototypes": campaign_prototypes(raw, repo),
        "software": software(repo),
        "hardware": hardware(),
        "disk": disk(raw, results, repo),
        "time_to_prepare": time_to_prepare(repo),
        "licences": licences(repo),
        "citation": citation(repo),
        "public_remote": public_remote(repo),
    }


def write_facts(results: Path, raw: Path, repo: Path) -> Path:
    """Write results/facts.json (disk use is measured before it is written); return its path."""
    doc = facts(results, raw, repo)
    return write_json(results / "facts.json", doc, sort_keys=False, strict=True)
