"""library_builds of a prototype manifest: which other versions of which libraries a prototype
can run, and how one version is built (the command, the executable it leaves, its inputs).

This module only describes builds; workflow.harness.builds runs them.
"""

from __future__ import annotations

import glob
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prototypes.contract.templates import fill, placeholders

# Placeholders of library_builds' templates.
BUILD_PLACEHOLDERS = frozenset({"library", "version", "executable"})


@dataclass(frozen=True, slots=True)
class LibraryBuilds:
    """library_builds of a manifest: which other versions of which libraries exist, how to build
    one."""

    libraries: Mapping[str, tuple[str, ...]]
    command: tuple[str, ...]  # empty when the versions are built elsewhere (build.external)
    executable: str  # template, relative to the manifest's directory
    inputs: tuple[str, ...]  # glob templates, relative to the manifest's directory
    timeout_s: float
    client_executable: str | None = None  # template; None: clients run `executable`

    def version_build(
        self,
        directory: Path,
        library: str,
        version: str,
        *,
        external: str | None = None,
        fetch: tuple[str, ...] = (),
    ) -> VersionBuild:
        """The build of `version` of `library`, its templates filled and its input patterns
        globbed under the manifest's directory; external and fetch: the manifest's build.external
        and build.fetch (who builds it when nothing here does)."""
        values = {"library": library, "version": version}
        executable = (directory / fill(self.executable, values)).resolve()
        client = (
            (directory / fill(self.client_executable, values)).resolve()
            if self.client_executable is not None
            else None
        )
        values["executable"] = str(executable)
        inputs: list[Path] = []
        missing: list[str] = []
        for pattern in self.inputs:
            path = fill(pattern, values)
            found = sorted(glob.glob(str(directory / path), recursive=True))
            if not found:
                missing.append(path)
            inputs += [Path(f) for f in found if Path(f).is_file()]
        return VersionBuild(
            library=library,
            version=version,
            executable=executable,
            command=tuple(fill(a, values) for a in self.command),
            cwd=directory,
            inputs=tuple(inputs),
            missing_inputs=tuple(missing),
            timeout_s=self.timeout_s,
            client_executable=client,
            external=external,
            fetch=fetch,
        )


@dataclass(frozen=True, slots=True)
class VersionBuild:
    """One (library, version) build of a prototype: what to run and what it leaves."""

    library: str
    version: str
    executable: Path  # absolute
    command: tuple[str, ...]
    cwd: Path
    inputs: tuple[Path, ...]  # existing files it depends on
    missing_inputs: tuple[str, ...]  # patterns that matched nothing
    timeout_s: float
    client_executable: Path | None = None  # absolute; None: clients run `executable`
    # Who builds this version when nothing here does (the manifest's build.external).
    external: str | None = None
    fetch: tuple[str, ...] = ()

    @property
    def executables(self) -> tuple[Path, ...]:
        """The programs this build leaves: the server's, then the client's if it differs."""
        client = self.client_executable
        if client is None or client == self.executable:
            return (self.executable,)
        return (self.executable, client)

    def missing_executables(self) -> tuple[Path, ...]:
        return tuple(p for p in self.executables if not p.exists())

    def stale(self) -> bool:
        """Whether an executable is missing or older than one of its inputs (a build made
        elsewhere is only ever missing: it is downloaded, so its time says nothing)."""
        if self.missing_executables():
            return True
        if self.external is not None:
            return False
        built = min(p.stat().st_mtime for p in self.executables)
        return any(p.stat().st_mtime > built for p in self.inputs)

    def library_versions(self, pinned: Mapping[str, str]) -> dict[str, str]:
        """The library versions this build runs with, from the pinned build's: the version
        named, and for a Go module file every other listed library as that file requires it
        (minimal version selection may have raised a shared dependency along with it)."""
        versions = dict(pinned)
        for lock in (p for p in self.inputs if p.suffix == ".mod"):
            required = go_mod_requirements(lock)
            versions |= {k: required[k] for k in versions if k in required}
        if self.library in versions:
            versions[self.library] = self.version
        return versions


class VersionBuildError(RuntimeError):
    """Building one library version failed; the message names library, version and output."""


def parse_library_builds(
    lb: Mapping[str, Any] | None, props: Mapping[str, Any]
) -> LibraryBuilds | None:
    """The library_builds section of a valid manifest document; props: the schema's
    properties, for the defaults."""
    if lb is None:
        return None
    default_s = props["library_builds"]["properties"]["timeout_s"]["default"]
    return LibraryBuilds(
        libraries={k: tuple(v) for k, v in lb["libraries"].items()},
        command=tuple(lb.get("command", ())),
        executable=lb["executable"],
        inputs=tuple(lb.get("inputs", ())),
        timeout_s=float(lb.get("timeout_s", default_s)),
        client_executable=lb.get("client_executable"),
    )


def library_builds_problems(doc: Mapping[str, Any], external: bool) -> list[str]:
    """What the schema cannot say about library_builds: the keys a build run here needs, the
    libraries the transports use, the placeholders, one executable per version. external: the
    versions are built elsewhere (build.external)."""
    lb = doc.get("library_builds")
    if lb is None:
        return []
    problems = []
    if not external:
        for key in ("command", "inputs"):
            if key not in lb:
                problems.append(
                    f"key library_builds.{key}: missing; required unless build.external "
                    "(the versions are built here)"
                )
    libraries = {t["library"] for t in doc["transports"]}
    for lib in lb["libraries"]:
        if lib not in libraries:
            problems.append(
                f"key library_builds.libraries.{lib}: no transport uses this library; "
                f"expected one of {', '.join(sorted(libraries))}"
            )
    for key in ("command", "executable", "client_executable", "inputs"):
        if key not in lb:
            continue
        elements = lb[key] if isinstance(lb[key], list) else [lb[key]]
        allowed = BUILD_PLACEHOLDERS if key == "command" else {"library", "version"}
        expected = " ".join(f"{{{n}}}" for n in sorted(allowed))
        for element in elements:
            for name in placeholders(element) or []:
                if name not in allowed:
                    problems.append(
                        f"key library_builds.{key}: unknown placeholder {{{name}}} in "
                        f"{element!r}; expected {expected}"
                    )
    for key in ("executable", "client_executable"):
        if key in lb:
            problems += _version_paths_problems(doc, lb, key, external)
    return problems


def _version_paths_problems(
    doc: Mapping[str, Any], lb: Mapping[str, Any], key: str, external: bool
) -> list[str]:
    """Every library version needs its own executable: a template naming {library} and
    {version}; a build made elsewhere has its layout fixed there (e.g. one directory per Unity
    track), so any paths do, one per listed version and none the pinned build's."""
    template = lb[key]
    names = placeholders(template)
    if names is None or not set(names) <= {"library", "version"}:
        return []  # reported as an unknown placeholder
    if not external:
        if not {"library", "version"} <= set(names):
            return [
                f"key library_builds.{key}: must contain {{library}} and {{version}} so that "
                "every version has its own executable"
            ]
        return []
    pinned = {doc["executable"], doc.get("client_executable", doc["executable"])}
    seen: dict[str, str] = {}
    problems = []
    for library, versions in lb["libraries"].items():
        for version in versions:
            path = fill(template, {"library": library, "version": version})
            if path in pinned:
                problems.append(
                    f"key library_builds.{key}: {library} {version} would run {path}, the "
                    "pinned build's executable; expected a path of its own"
                )
            elif path in seen:
                problems.append(
                    f"key library_builds.{key}: {library} {version} and {seen[path]} would share "
                    f"{path}; expected one path per version (use {{library}} and {{version}})"
                )
            seen.setdefault(path, f"{library} {version}")
    return problems


def go_mod_requirements(go_mod: Path) -> dict[str, str]:
    """Module -> version of every requirement in a go.mod (or an alternate module file); empty
    when the file cannot be read."""
    out: dict[str, str] = {}
    try:
        text = go_mod.read_text()
    except OSError:
        return out
    in_block = False
    for raw in text.splitlines():
        line = raw.split("//", 1)[0].strip()
        if line.startswith("require ("):
            in_block = True
            continue
        if in_block and line == ")":
            in_block = False
            continue
        if line.startswith("require "):
            line = line[len("require ") :]
        elif not in_block:
            continue
        parts = line.split()
        if len(parts) >= 2:
            out[parts[0]] = parts[1]
    return out
