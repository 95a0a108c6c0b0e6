"""The record of what one run started: each prototype as the harness is about to start it.

A run keeps in its meta.json (versions) a prototype_record of every prototype it started:
manifest, executable and launcher with their sha256, runtime, library versions, lock files, and
for a Go prototype its build info and modules; collect_run adds the commit and this machine
(workflow/harness/environment.py) and what each process reported in its own <proc>.meta.json.
A campaign's facts record the same of the prototypes its plan names as the checkout holds them
now (workflow/campaign/facts/), so the report compares the two.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from monitors import perfcount
from prototypes.contract import manifest as manifests
from workflow.files import read_json, repo_relative, sha256_of
from workflow.harness.environment import cpu_governor, cpu_model, git_commit, go_modules, run_tool

NOT_AVAILABLE = "not available"
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


def go_tool(repo: Path) -> str | None:
    """The go command: on PATH, else the toolchain setup.sh fetches into .tools/go."""
    found = shutil.which("go")
    fetched = repo / ".tools" / "go" / "bin" / "go"
    return found or (str(fetched) if fetched.is_file() else None)


def go_build_info(binary: Path, repo: Path) -> dict[str, Any] | None:
    """What `go version -m BINARY` says the binary was built with: the Go toolchain, every
    module compiled in (version, `=> replacement` where replaced) and the build settings; None
    without a go command or for a file that is no Go binary."""
    go = go_tool(repo)
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
    if vb is not None and man.upstream is not None:
        # A version the night found upstream: its exact bytes (go.sum lines, commit) and when
        # it was published, as `netstick upstream prepare` resolved them.
        entry = man.upstream.doc["libraries"].get(vb.library, {})
        doc["library_build"]["upstream"] = {
            "prepared_at": man.upstream.doc.get("prepared_at"),
            "goproxy": man.upstream.doc.get("goproxy"),
            **(entry.get("resolved", {}).get(vb.version) or {}),
        }
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
    """Per process (server, client-0, ...): the prototype name, library versions and transport
    settings its <proc>.meta.json reports (CONTRACT.md 3.1)."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(log_dir.glob("*.meta.json")):
        doc = read_json(path)
        if doc is None:
            continue
        versions = doc.get("library_versions")
        settings = doc.get("transport_settings")
        out[path.name.removesuffix(".meta.json")] = {
            "prototype": doc.get("prototype"),
            "library_versions": versions if isinstance(versions, dict) else None,
            "transport_settings": settings if isinstance(settings, dict) else None,
        }
    return out


def with_processes(
    record: dict[str, Any], processes: dict[str, dict[str, Any]], only: bool
) -> dict[str, Any]:
    """record with the versions its processes reported: all of them when it is the run's only
    prototype, else those naming it in their meta.json."""
    mine = {k: v for k, v in processes.items() if only or v.get("prototype") == record["name"]}
    return {**record, "processes": mine}


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
        # Whether instructions could be counted by the CPU here (monitors/perfcount.py).
        "instruction_counter": perfcount.status(),
        "hostname": platform.node(),
    }
