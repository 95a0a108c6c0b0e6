"""From an upstream document (workflow.nightly.upstream) to a night's build inputs: the versions
each (prototype, transport, library) measures, and the module files of its new Go versions.

The module files are made by the prototype's own generator (versions/generate.py beside the
manifest, `make versions`: go.mod and go.sum with one requirement changed, tidied), into a
directory the caller names; the committed ones stay where they are. A version that the module
proxy cannot resolve, or that the prototype's source does not compile against, is a result
("does not resolve" / "does not build" with the go command's message), never an exception: the
night records it and measures the others.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import hashlib
import importlib.util
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from prototypes.contract import manifest as manifests
from prototypes.contract.follow import version_key
from prototypes.contract.library_builds import VersionBuildError
from prototypes.contract.upstream_lock import LOCK_SCHEMA, UPSTREAM_LOCK, read_lock
from workflow.files import REPO, repo_relative, write_json
from workflow.harness.builds import build_version

# Where a prototype keeps its module-file generator, relative to its manifest's directory.
GENERATOR = Path("versions") / "generate.py"

Key = tuple[str, str, str]  # (prototype, transport, library)


def versions_to_measure(
    doc: Mapping[str, Any], prototype: str | None = None
) -> dict[Key, tuple[str, ...]]:
    """(prototype, transport, library) -> the versions a night measures, oldest first: the
    pinned one, the new ones (at most max_new) and the release before each, and the head commit
    when it is new. prototype: only that prototype's libraries."""
    out: dict[Key, tuple[str, ...]] = {}
    for lib in doc["libraries"]:
        if prototype is not None and lib["prototype"] != prototype:
            continue
        versions = [lib["pinned"]]
        items = list(lib["new"][: lib["follow"]["max_new"]])
        head = lib.get("head")
        if head and head.get("new"):
            items.append(head)
        for item in items:
            versions.append(item["version"])
            if item.get("predecessor"):
                versions.append(item["predecessor"])
        unique = list(dict.fromkeys(versions))
        ordered = sorted((v for v in unique if version_key(v)), key=lambda v: version_key(v) or ())
        ordered += [v for v in unique if not version_key(v)]  # a git head: a commit SHA, last
        for transport in lib["transports"]:
            out[(lib["prototype"], transport, lib["library"])] = tuple(ordered)
    return out


@dataclass(frozen=True, slots=True)
class ModuleFile:
    """One Go version's build input: its module file (and the executable built from it), or
    why there is none."""

    library: str
    version: str
    mod: Path | None  # <out_dir>/<module>@<version>.mod, its .sum beside it
    executable: Path | None  # built from it (with build=True)
    failure: str | None  # "library L version V does not resolve: ..." / "... does not build ..."


@functools.cache
def _generator(path: Path) -> ModuleType:
    """A prototype's versions/generate.py as a module (it is a script, not a package)."""
    name = "netstick_generate_" + hashlib.sha256(str(path).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path}: cannot be loaded")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _manifest_path(doc: Mapping[str, Any], prototype: str) -> Path:
    shown = doc.get("prototypes", {}).get(prototype)
    if shown is None:
        raise ValueError(
            f"upstream document: no prototype {prototype!r}; expected one of "
            f"{', '.join(doc.get('prototypes', {})) or '(none)'}"
        )
    path = Path(shown)
    return path if path.is_absolute() else REPO / path


def module_files(
    doc: Mapping[str, Any], out_dir: Path, prototype: str = "reference", *, build: bool = True
) -> dict[tuple[str, str], ModuleFile]:
    """(library, version) -> ModuleFile for every Go version the prototype's night measures
    (versions_to_measure) but the pinned one: generated into out_dir by the prototype's
    generator and, with build, compiled with its library_builds command (the executable under
    out_dir/bin/<module>@<version>/), so that "does not build" is known before the night."""
    man = manifests.load(_manifest_path(doc, prototype))
    generator = man.directory / GENERATOR
    go_libraries = {
        lib["library"]: lib["pinned"]
        for lib in doc["libraries"]
        if lib["prototype"] == prototype and lib["source"] == "go"
    }
    out: dict[tuple[str, str], ModuleFile] = {}
    for (_, _, library), versions in versions_to_measure(doc, prototype).items():
        if library not in go_libraries:
            continue
        for version in versions:
            if version == go_libraries[library] or (library, version) in out:
                continue
            if not generator.is_file():
                failure = (
                    f"library {library} version {version}: no module-file generator {generator}"
                )
                out[(library, version)] = ModuleFile(library, version, None, None, failure)
                continue
            out[(library, version)] = _module_file(man, generator, library, version, out_dir, build)
    return out


def _module_file(
    man: manifests.Manifest, generator: Path, library: str, version: str, out_dir: Path, build: bool
) -> ModuleFile:
    try:
        mod: Path = _generator(generator).generate(library, version, out_dir)
    except RuntimeError as exc:
        # The generator copies go.mod and go.sum before it edits them: a half-made pair must not
        # look like a build input.
        for suffix in (".mod", ".sum"):
            (out_dir / f"{library}@{version}{suffix}").unlink(missing_ok=True)
        said = str(exc).removeprefix(f"library {library} version {version}: ")
        failure = repo_relative(f"library {library} version {version} does not resolve: {said}")
        return ModuleFile(library, version, None, None, failure)
    if not build or man.library_builds is None or man.library_builds.command == ():
        return ModuleFile(library, version, mod, None, None)
    vb = man.library_builds.version_build(man.directory, library, version)
    executable = out_dir / "bin" / f"{library}@{version}" / vb.executable.name
    command = tuple(
        f"-modfile={mod}"
        if a.startswith("-modfile=")
        else str(executable)
        if a == str(vb.executable)
        else a
        for a in vb.command
    )
    vb = dataclasses.replace(
        vb,
        executable=executable,
        client_executable=None,
        command=command,
        inputs=(mod, mod.with_suffix(".sum")),
        missing_inputs=(),
    )
    try:
        build_version(vb, force=True)
    except VersionBuildError as exc:
        return ModuleFile(library, version, mod, None, repo_relative(str(exc)))
    return ModuleFile(library, version, mod, executable, None)


# What the night keeps of each new version: when it was published, its exact bytes, its commit.
RESOLVED_KEYS = ("published", "predecessor", "sum", "go_mod_sum", "go_sum", "origin", "commit")


def prepare(doc: Mapping[str, Any], prototype: str = "reference") -> dict[str, Any]:
    """Make tonight's upstream versions of a prototype buildable and declared: their module
    files generated beside the committed ones (versions/, where library_builds looks), each
    built where the workflow's build rule puts it (so "does not build" is known before the
    night is planned, and the night's build finds it up to date), and versions/upstream.json
    written (prototypes.contract.upstream_lock: what to measure, what did not build and why,
    each version's exact bytes and publication time). Returns that document."""
    man = manifests.load(_manifest_path(doc, prototype))
    files = module_files(doc, man.directory / "versions", prototype, build=False)
    libraries: dict[str, Any] = {}
    for (_, transport, library), versions in versions_to_measure(doc, prototype).items():
        entry = next(e for e in doc["libraries"] if e["prototype"] == prototype
                     and e["library"] == library)  # fmt: skip
        if entry["source"] != "go":  # built elsewhere (GameCI), never here
            continue
        if library in libraries:  # another transport of the same library
            libraries[library]["transports"].append(transport)
            continue
        found = {n["version"]: n for n in entry["new"]}
        predecessors = {v: n.get("predecessor") for v, n in found.items()}
        measure, not_built = [], []
        for version in versions:
            failure = None if version == entry["pinned"] else _built(man, files, library, version)
            if failure is None:
                measure.append(version)
            else:
                not_built.append(
                    {"version": version, "predecessor": predecessors.get(version),
                     "transports": list(entry["transports"]), "build_error": failure}
                )  # fmt: skip
        libraries[library] = {
            "transports": [transport],
            "pinned": entry["pinned"],
            "measure": measure,
            "not_built": not_built,
            "resolved": {v: {k: n.get(k) for k in RESOLVED_KEYS} for v, n in found.items()},
        }
    lock = {
        "schema": LOCK_SCHEMA,
        "campaign": doc["campaign"],
        "checked_at": doc["checked_at"],
        "prepared_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "goproxy": doc.get("goproxy"),
        "libraries": libraries,
    }
    write_json(man.directory / UPSTREAM_LOCK, lock, sort_keys=False, strict=True)
    return lock


def _built(
    man: manifests.Manifest,
    files: Mapping[tuple[str, str], ModuleFile],
    library: str,
    version: str,
) -> str | None:
    """Why version cannot be measured (it does not resolve or does not build), or None once
    its executable is built where library_builds puts it."""
    made = files.get((library, version))
    if made is None or made.failure is not None or man.library_builds is None:
        return made.failure if made is not None else f"{library} {version}: no module file"
    vb = man.library_builds.version_build(
        man.directory, library, version, external=man.build_external, fetch=man.build_fetch
    )
    try:
        build_version(vb)
    except VersionBuildError as exc:
        return repo_relative(str(exc))
    return None


def night_versions(
    check: Path,
) -> tuple[dict[tuple[str, str], str], list[dict[str, str]]]:
    """What the night's decision needs of its upstream check (the document at check, when there
    is one) and of the versions prepared from it: (library, version) -> publication time, and
    the versions that did not build, one entry per transport, with the compiler's message."""
    if not check.is_file():
        return {}, []
    doc = json.loads(check.read_text())
    published: dict[tuple[str, str], str] = {}
    for lib in doc.get("libraries", []):
        for item in lib.get("new", []):
            if item.get("published"):
                published[(lib["library"], item["version"])] = item["published"]
            if item.get("predecessor") and item.get("predecessor_published"):
                published[(lib["library"], item["predecessor"])] = item["predecessor_published"]
    not_built: list[dict[str, str]] = []
    for name in doc.get("prototypes", {}):
        lock = read_lock(_manifest_path(doc, name).parent)
        for library, entry in (lock.doc["libraries"] if lock else {}).items():
            for nb in entry.get("not_built", []):
                not_built += [
                    {"library": library, "transport": t, "version": nb["version"],
                     "predecessor": nb.get("predecessor"), "build_error": nb["build_error"]}
                    for t in entry.get("transports", [])
                ]  # fmt: skip
    return published, not_built
