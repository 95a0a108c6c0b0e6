"""Prototype manifests: prototypes/<name>/prototype.yaml, validated by
prototypes/contract/prototype.schema.json.

A manifest says how to build a prototype and how to start its server and client processes under
prototypes/CONTRACT.md, so adding a prototype needs no pipeline code. `load` validates a file and
reports every problem with the file, the key path and what was expected; `server_argv` and
`client_argvs` render the command templates for one cell (the cell dict of
workflow.harness.cell, or any mapping with the same keys), splitting the players over client
processes of at most `players_per_process` players each.

Templates are argument lists, so nothing passes through a shell. Placeholders that stand for
several arguments ({binary}, {params}, {extra}) must be whole list elements; the others may sit
inside an element ("-log-dir={log_dir}").
"""

from __future__ import annotations

import dataclasses
import glob
import json
import math
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from prototypes.contract import workloads
from prototypes.contract.schema_errors import schema_problem

SCHEMA_PATH = Path(__file__).with_name("prototype.schema.json")
CONTRACT_SCHEMA = 1

# Placeholders that expand to a list of arguments and so must fill a whole element.
LIST_PLACEHOLDERS = frozenset({"binary", "params", "extra"})
SERVER_PLACEHOLDERS = frozenset(
    {
        "binary", "transport", "host", "port", "workload", "params", "duration",
        "tick_rate", "log_dir", "run_id", "seed", "extra",
    }
)  # fmt: skip
CLIENT_PLACEHOLDERS = SERVER_PLACEHOLDERS | {"players", "first_player"}
# What the harness must be able to set in every process; without them a run would silently
# use the prototype's defaults (e.g. host 127.0.0.1 inside a network namespace).
REQUIRED_SERVER = ("binary", "host", "port", "workload", "params", "tick_rate", "log_dir",
                   "run_id", "seed", "extra")  # fmt: skip
REQUIRED_CLIENT = (*REQUIRED_SERVER, "players", "first_player", "duration")
LAUNCHER_PLACEHOLDERS = frozenset({"python"})

_TOKEN_RE = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")
_FLAG_RE = re.compile(r"-{1,2}([A-Za-z0-9][A-Za-z0-9-]*)(=.*)?")


class ManifestError(ValueError):
    """A manifest is invalid. problems: one "key dotted.path: what is wrong" string per problem."""

    def __init__(self, path: Path | str, problems: Sequence[str]) -> None:
        self.path = str(path)
        self.problems = list(problems)
        super().__init__("\n".join(f"{self.path}: {p}" for p in self.problems))


@dataclass(frozen=True, slots=True)
class Transport:
    """One transport a prototype offers (an entry of `transports`)."""

    name: str
    description: str
    library: str
    version: str
    native_channels: tuple[str, ...]
    options: Mapping[str, str] = field(default_factory=dict)
    server_lost_s: float = 10.0
    # Whether the reliable channel delivers in send order; None: the manifest does not say.
    reliable_ordered: bool | None = None


PINNED = "pinned"
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


class VersionBuildError(RuntimeError):
    """Building one library version failed; the message names library, version and output."""


@dataclass(frozen=True, slots=True)
class Manifest:
    """A validated prototype manifest; paths are resolved against the manifest's directory."""

    path: Path  # the manifest file (absolute)
    name: str
    description: str
    language: str
    engine: str | None
    build_command: tuple[str, ...] | None
    build_timeout_s: float
    executable: Path  # absolute; the server's program, and the clients' without client_executable
    launcher: tuple[str, ...]
    command_prefix: tuple[str, ...]
    server_command: tuple[str, ...]
    client_command: tuple[str, ...]
    players_per_process: int
    ready_timeout_s: float
    transports: tuple[Transport, ...]
    workloads: tuple[str, ...]
    optional_flags: tuple[str, ...]
    library_versions: Mapping[str, str]
    environment: Mapping[str, str]
    raw: Mapping[str, Any]  # the document as loaded, for provenance records
    library_builds: LibraryBuilds | None = None
    # Set by for_version: the build of another library version whose executable this names.
    library_build: VersionBuild | None = None
    # The clients' program when it is not `executable` (absolute).
    client_executable: Path | None = None
    # build.external and build.fetch: who builds the executables when nothing here does.
    build_external: str | None = None
    build_fetch: tuple[str, ...] = ()
    # Flags beyond the contract it accepts (name -> what it sets), passable as extra flags.
    prototype_flags: Mapping[str, str] = field(default_factory=dict)

    @property
    def directory(self) -> Path:
        """Where relative paths start and where the build command runs."""
        return self.path.parent

    def program(self, role: str) -> Path:
        """The executable a process of this role ("server" or "client") starts."""
        if role == "client" and self.client_executable is not None:
            return self.client_executable
        return self.executable

    @property
    def executables(self) -> tuple[Path, ...]:
        """The distinct programs the prototype runs: the server's, then the client's."""
        client = self.program("client")
        return (self.executable,) if client == self.executable else (self.executable, client)

    def transport(self, name: str) -> Transport:
        for t in self.transports:
            if t.name == name:
                return t
        raise ValueError(
            f"{self.path}: transports: no transport {name!r}; expected one of "
            f"{', '.join(self.transport_names)}"
        )

    @property
    def transport_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.transports)

    def declared_versions(self, transport: str) -> tuple[str, ...]:
        """The versions a campaign may name for this transport: pinned, the transport's own
        version, and those library_builds lists for its library."""
        t = self.transport(transport)
        listed = self.library_builds.libraries.get(t.library, ()) if self.library_builds else ()
        return (PINNED, t.version, *(v for v in listed if v != t.version))

    def check_version(self, transport: str, version: str) -> None:
        """ValueError naming the library, the version and what is declared, when this
        prototype cannot build `version` of the transport's library."""
        declared = self.declared_versions(transport)
        if version not in declared:
            t = self.transport(transport)
            raise ValueError(
                f"{self.path}: library {t.library} (transport {transport}) has no version "
                f"{version!r}; declared: {', '.join(declared)} (library_builds.libraries)"
            )

    def version_build(self, transport: str, version: str) -> VersionBuild | None:
        """How to build `version` of the transport's library; None when it is the pinned build
        (`executable`, built by `build`)."""
        self.check_version(transport, version)
        t = self.transport(transport)
        if version in (PINNED, t.version) or self.library_builds is None:
            return None
        lb = self.library_builds
        values = {"library": t.library, "version": version}
        executable = (self.directory / _fill(lb.executable, values)).resolve()
        client = (
            (self.directory / _fill(lb.client_executable, values)).resolve()
            if lb.client_executable is not None
            else None
        )
        values["executable"] = str(executable)
        inputs: list[Path] = []
        missing: list[str] = []
        for pattern in lb.inputs:
            path = _fill(pattern, values)
            found = sorted(glob.glob(str(self.directory / path), recursive=True))
            if not found:
                missing.append(path)
            inputs += [Path(f) for f in found if Path(f).is_file()]
        return VersionBuild(
            library=t.library,
            version=version,
            executable=executable,
            command=tuple(_fill(a, values) for a in lb.command),
            cwd=self.directory,
            inputs=tuple(inputs),
            missing_inputs=tuple(missing),
            timeout_s=lb.timeout_s,
            client_executable=client,
            external=self.build_external,
            fetch=self.build_fetch,
        )

    def for_version(self, transport: str, version: str) -> Manifest:
        """This manifest with the executable built for `version` of the transport's library."""
        vb = self.version_build(transport, version)
        if vb is None:
            return self
        # What this build declares: the version named, and for a Go module file every other
        # listed library as that file requires it (minimal version selection may have raised
        # a shared dependency along with it).
        versions = dict(self.library_versions)
        for lock in (p for p in vb.inputs if p.suffix == ".mod"):
            required = go_mod_requirements(lock)
            versions |= {k: required[k] for k in versions if k in required}
        if vb.library in versions:
            versions[vb.library] = vb.version
        transports = tuple(
            dataclasses.replace(t, version=vb.version) if t.library == vb.library else t
            for t in self.transports
        )
        return dataclasses.replace(
            self,
            executable=vb.executable,
            client_executable=vb.client_executable,
            library_build=vb,
            library_versions=versions,
            transports=transports,
        )

    def binary_argv(self, role: str = "server") -> list[str]:
        """What {binary} expands to in a process of this role: launcher, the role's executable
        (program), command_prefix."""
        launcher = [_fill(a, {"python": sys.executable}) for a in self.launcher]
        return [*launcher, str(self.program(role)), *self.command_prefix]


# -- loading ---------------------------------------------------------------------------------


def _schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return schema


def contract_workloads() -> tuple[str, ...]:
    """The workloads of CONTRACT.md section 5, as the manifest schema lists them."""
    return tuple(_schema()["properties"]["workloads"]["items"]["enum"])


def _placeholders(text: str) -> list[str] | None:
    """Placeholder names in one template element; None if its braces are malformed."""
    names = []
    for m in _TOKEN_RE.finditer(text):
        tok = m.group(0)
        if tok in ("{{", "}}"):
            continue
        if m.group(1) is None:
            return None  # a lone brace
        names.append(m.group(1))
    return names


def _check_template(
    key: str, template: Sequence[str], allowed: frozenset[str], required: Sequence[str]
) -> list[str]:
    problems = []
    seen: dict[str, int] = {}
    for i, element in enumerate(template):
        names = _placeholders(element)
        if names is None:
            problems.append(
                f"key {key}.{i}: {element!r} has an unmatched brace; expected {{name}} "
                "placeholders, {{ or }} for a literal brace"
            )
            continue
        for name in names:
            seen[name] = seen.get(name, 0) + 1
            if name not in allowed:
                problems.append(
                    f"key {key}.{i}: unknown placeholder {{{name}}}; expected one of "
                    + " ".join(f"{{{n}}}" for n in sorted(allowed))
                )
            elif name in LIST_PLACEHOLDERS and element != f"{{{name}}}":
                problems.append(
                    f"key {key}.{i}: {{{name}}} stands for several arguments and must be a "
                    f"whole element, found {element!r}"
                )
    for name in required:
        if name not in seen:
            problems.append(f"key {key}: missing placeholder {{{name}}}; the harness must set it")
    if seen.get("binary", 0) > 1:
        problems.append(f"key {key}: {{binary}} appears {seen['binary']} times; expected once")
    return problems


def _semantic_problems(doc: Mapping[str, Any]) -> list[str]:
    """What the schema cannot say: unique names, template placeholders."""
    problems = []
    names = [t["name"] for t in doc["transports"]]
    for i, name in enumerate(names):
        if name in names[:i]:
            problems.append(f"key transports.{i}.name: {name!r} repeats an earlier transport")
    required_server: tuple[str, ...] = REQUIRED_SERVER
    required_client: tuple[str, ...] = REQUIRED_CLIENT
    if len(names) > 1:  # with one transport the prototype's default may be the only one
        required_server += ("transport",)
        required_client += ("transport",)
    problems += _check_template(
        "server_command", doc["server_command"], SERVER_PLACEHOLDERS, required_server
    )
    problems += _check_template(
        "client_command", doc["client_command"], CLIENT_PLACEHOLDERS, required_client
    )
    build = doc.get("build")
    external = build is not None and "external" in build
    if build is not None:
        if ("command" in build) == external:
            problems.append(
                "key build: expected exactly one of command (a build run here) and external "
                "(built elsewhere)"
            )
        for key in ("timeout_s",) if external else ("fetch",):
            if key in build:
                other = "command" if key == "timeout_s" else "external"
                problems.append(f"key build.{key}: only allowed with build.{other}")
    lb = doc.get("library_builds")
    if lb is not None:
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
                for name in _placeholders(element) or []:
                    if name not in allowed:
                        problems.append(
                            f"key library_builds.{key}: unknown placeholder {{{name}}} in "
                            f"{element!r}; expected {expected}"
                        )
        for key in ("executable", "client_executable"):
            if key in lb:
                problems += _version_paths_problems(doc, lb, key, external)
    for i, element in enumerate(doc.get("launcher", [])):
        for name in _placeholders(element) or []:
            if name not in LAUNCHER_PLACEHOLDERS:
                problems.append(
                    f"key launcher.{i}: unknown placeholder {{{name}}}; expected only {{python}}"
                )
    return problems


def _version_paths_problems(
    doc: Mapping[str, Any], lb: Mapping[str, Any], key: str, external: bool
) -> list[str]:
    """Every library version needs its own executable: a template naming {library} and
    {version}; a build made elsewhere has its layout fixed there (e.g. one directory per Unity
    track), so any paths do, one per listed version and none the pinned build's."""
    template = lb[key]
    names = _placeholders(template)
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
            path = _fill(template, {"library": library, "version": version})
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


def parse(doc: object, path: Path | str) -> Manifest:
    """Validate a loaded manifest document; path is the file it came from (for paths, errors)."""
    path = Path(path).resolve()
    schema = _schema()
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(
        validator.iter_errors(doc), key=lambda e: ([str(p) for p in e.absolute_path], e.validator)
    )
    if errors:
        raise ManifestError(path, [schema_problem(e) for e in errors])
    assert isinstance(doc, dict)
    problems = _semantic_problems(doc)
    if problems:
        raise ManifestError(path, problems)
    props = schema["properties"]
    build = doc.get("build")
    lost_default = props["transports"]["items"]["properties"]["server_lost_s"]["default"]
    return Manifest(
        path=path,
        name=doc["name"],
        description=doc["description"],
        language=doc["language"],
        engine=doc.get("engine"),
        build_command=tuple(build["command"]) if build and "command" in build else None,
        build_timeout_s=float(
            (build or {}).get("timeout_s", props["build"]["properties"]["timeout_s"]["default"])
        ),
        executable=(path.parent / doc["executable"]).resolve(),
        client_executable=(
            (path.parent / doc["client_executable"]).resolve()
            if "client_executable" in doc
            else None
        ),
        build_external=(build or {}).get("external"),
        build_fetch=tuple((build or {}).get("fetch", ())),
        launcher=tuple(doc.get("launcher", [])),
        command_prefix=tuple(doc.get("command_prefix", [])),
        server_command=tuple(doc["server_command"]),
        client_command=tuple(doc["client_command"]),
        players_per_process=doc["players_per_process"],
        ready_timeout_s=float(doc["ready_timeout_s"]),
        transports=tuple(
            Transport(
                name=t["name"],
                description=t["description"],
                library=t["library"],
                version=t["version"],
                native_channels=tuple(t["native_channels"]),
                options=dict(t.get("options", {})),
                server_lost_s=float(t.get("server_lost_s", lost_default)),
                reliable_ordered=t.get("reliable_ordered"),
            )
            for t in doc["transports"]
        ),
        workloads=tuple(doc["workloads"]),
        optional_flags=tuple(doc["optional_flags"]),
        prototype_flags=dict(doc.get("prototype_flags", {})),
        library_versions=dict(doc["library_versions"]),
        environment=dict(doc.get("environment", {})),
        raw=doc,
        library_builds=_library_builds(doc.get("library_builds"), props),
    )


def _library_builds(lb: Mapping[str, Any] | None, props: Mapping[str, Any]) -> LibraryBuilds | None:
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


def build_version(vb: VersionBuild, *, force: bool = False) -> bool:
    """Build one library version unless its executable is up to date; True if it built.

    Raises VersionBuildError naming the library, the version and the builder's message (the
    compiler's, for a version whose API the source does not match)."""
    if vb.external is not None:
        # Nothing here builds it: present, or an error saying who builds it and how to fetch it.
        missing = vb.missing_executables()
        if missing:
            raise VersionBuildError(
                f"library {vb.library} version {vb.version}: missing "
                f"{', '.join(map(str, missing))}; built by {vb.external}"
                + (f"; fetch it: {' '.join(vb.fetch)} (in {vb.cwd})" if vb.fetch else "")
            )
        return False
    if vb.missing_inputs:
        raise VersionBuildError(
            f"library {vb.library} version {vb.version}: cannot build, missing "
            f"{', '.join(vb.missing_inputs)} in {vb.cwd} (generate them first)"
        )
    if not force and not vb.stale():
        return False
    vb.executable.parent.mkdir(parents=True, exist_ok=True)
    try:
        res = subprocess.run(
            vb.command, cwd=vb.cwd, capture_output=True, text=True, timeout=vb.timeout_s,
            check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise VersionBuildError(
            f"library {vb.library} version {vb.version}: build did not finish within "
            f"{vb.timeout_s:g} s: {' '.join(vb.command)}"
        ) from None
    if res.returncode != 0:
        raise VersionBuildError(
            f"library {vb.library} version {vb.version} does not build (exit {res.returncode}): "
            f"{' '.join(vb.command)}\n" + (res.stderr or res.stdout)[-3000:]
        )
    return True


def load(path: Path | str) -> Manifest:
    """Read and validate a prototype.yaml; raises ManifestError naming file, key and expectation."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ManifestError(path, [f"cannot read the manifest: {exc.strerror or exc}"]) from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1} column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ManifestError(path, [f"{where}not valid YAML: {problem}"]) from None
    return parse(doc, path)


# -- rendering -------------------------------------------------------------------------------


def _fill(element: str, values: Mapping[str, str]) -> str:
    def sub(m: re.Match[str]) -> str:
        tok = m.group(0)
        if tok == "{{":
            return "{"
        if tok == "}}":
            return "}"
        return values[m.group(1)]

    return _TOKEN_RE.sub(sub, element)


def _render(
    template: Sequence[str], scalars: Mapping[str, str], lists: Mapping[str, list[str]]
) -> list[str]:
    out: list[str] = []
    for element in template:
        name = element[1:-1] if element.startswith("{") and element.endswith("}") else ""
        if name in lists and element == f"{{{name}}}":
            out += lists[name]
        else:
            out.append(_fill(element, scalars))
    return out


def _text(value: object) -> str:
    """A cell value as the prototype sees it: booleans lower case, numbers without '.0'."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def param_args(cell: Mapping[str, Any]) -> list[str]:
    """-param key=value per workload parameter, then -param t.key=value per transport option."""
    out: list[str] = []
    for key, value in cell.get("params", {}).items():
        out += ["-param", f"{key}={_text(value)}"]
    for key, value in cell.get("transport_options", {}).items():
        out += ["-param", f"t.{key}={_text(value)}"]
    return out


def _check_extra(man: Manifest, key: str, extra: Sequence[str]) -> None:
    """Extra flags may only be optional contract flags or prototype flags the manifest declares."""
    i = 0
    while i < len(extra):
        m = _FLAG_RE.fullmatch(extra[i])
        if m is None or (
            m.group(1) not in man.optional_flags and m.group(1) not in man.prototype_flags
        ):
            declared = ", ".join(f"-{f}" for f in man.optional_flags) or "none"
            own = ", ".join(f"-{f}" for f in man.prototype_flags) or "none"
            raise ValueError(
                f"{key}: {extra[i]!r} is not an optional flag that {man.path} declares "
                f"(optional_flags: {declared}; prototype_flags: {own})"
            )
        i += 1 if m.group(2) else 2


def _check_cell(man: Manifest, cell: Mapping[str, Any]) -> None:
    if cell["transport"] not in man.transport_names:
        raise ValueError(
            f"cell transport {cell['transport']!r} is not offered by {man.path} "
            f"(transports: {', '.join(man.transport_names)})"
        )
    workload = cell.get("workload", "idle")
    if workload not in man.workloads:
        raise ValueError(
            f"cell workload {workload!r} is not supported by {man.path} "
            f"(workloads: {', '.join(man.workloads)})"
        )


def check_cell(man: Manifest, cell: Mapping[str, Any]) -> None:
    """Raise ValueError (naming the key and what the manifest or the contract allows) when a cell
    asks this prototype for a transport, workload or extra flag it does not have, or gives its
    workload a parameter or value the contract does not allow: bad input, found before anything
    runs."""
    _check_cell(man, cell)
    _check_extra(man, "extra_server_flags", list(cell.get("extra_server_flags", [])))
    _check_extra(man, "extra_client_flags", list(cell.get("extra_client_flags", [])))
    # The contract's parameters and values: the same for every prototype.
    workloads.check(str(cell.get("workload", "idle")), cell.get("params", {}))


def _scalars(
    man: Manifest, cell: Mapping[str, Any], host: str, port: int, log_dir: Path | str
) -> dict[str, str]:
    return {
        "transport": str(cell["transport"]),
        "host": host,
        "port": str(port),
        "workload": str(cell.get("workload", "idle")),
        "tick_rate": _text(float(cell.get("tick_rate_hz", 60))),
        "log_dir": str(log_dir),
        "run_id": str(cell.get("run_id", "local")),
        "seed": str(cell.get("seed", 1)),
    }


def server_argv(
    man: Manifest,
    cell: Mapping[str, Any],
    *,
    host: str,
    port: int,
    log_dir: Path | str,
    check: bool = True,
) -> list[str]:
    """The server's argument list for one cell.

    cell: the keys of workflow/schemas/cell.schema.json that matter here (transport, workload,
    params, transport_options, tick_rate_hz, run_id, seed, extra_server_flags); the server runs
    until SIGTERM unless cell has server_duration_s. check=False skips the checks of transport,
    workload and extra flags against the manifest (the conformance checker's bad inputs).
    """
    extra = list(cell.get("extra_server_flags", []))
    if check:
        _check_cell(man, cell)
        _check_extra(man, "extra_server_flags", extra)
    scalars = _scalars(man, cell, host, port, log_dir)
    scalars["duration"] = _text(float(cell.get("server_duration_s", 0)))
    lists = {"binary": man.binary_argv(), "params": param_args(cell), "extra": extra}
    return _render(man.server_command, scalars, lists)


def client_split(players: int, per_process: int) -> list[tuple[int, int]]:
    """(first_player, players) of each client process: full processes, then the remainder."""
    if players < 1 or per_process < 1:
        raise ValueError(
            f"players ({players}) and players_per_process ({per_process}) must be >= 1"
        )
    n = math.ceil(players / per_process)
    return [(k * per_process, min(per_process, players - k * per_process)) for k in range(n)]


def client_argvs(
    man: Manifest,
    cell: Mapping[str, Any],
    *,
    host: str,
    port: int,
    log_dir: Path | str,
    players_per_process: int | None = None,
    check: bool = True,
) -> list[list[str]]:
    """One argument list per client process: ceil(players / players_per_process) processes.

    players_per_process defaults to the manifest's (a smaller value is always allowed, e.g. to
    test the split); the logs of process k are client-<first player>.*.
    """
    per = players_per_process or man.players_per_process
    if per > man.players_per_process:
        raise ValueError(
            f"players_per_process {per} exceeds the {man.players_per_process} that {man.path} "
            "allows"
        )
    extra = list(cell.get("extra_client_flags", []))
    if check:
        _check_cell(man, cell)
        _check_extra(man, "extra_client_flags", extra)
    out = []
    for first, count in client_split(int(cell.get("players", 1)), per):
        scalars = _scalars(man, cell, host, port, log_dir)
        scalars |= {
            "players": str(count),
            "first_player": str(first),
            "duration": _text(float(cell.get("duration_s", 0))),
        }
        lists = {"binary": man.binary_argv("client"), "params": param_args(cell), "extra": extra}
        out.append(_render(man.client_command, scalars, lists))
    return out


def optional_flag_args(man: Manifest, values: Mapping[str, object]) -> list[str]:
    """-flag value for those of values (flag name without dash -> value) the manifest declares."""
    out: list[str] = []
    for flag, value in values.items():
        if flag in man.optional_flags:
            out += [f"-{flag}", _text(value)]
    return out


def process_env(man: Manifest, base: Mapping[str, str]) -> dict[str, str]:
    """The environment of a prototype process: base plus the manifest's `environment`."""
    return {**base, **man.environment}
