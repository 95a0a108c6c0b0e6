"""Prototype manifests: prototypes/<name>/prototype.yaml, validated by
prototypes/contract/prototype.schema.json.

A manifest says how to build a prototype and how to start its server and client processes under
prototypes/CONTRACT.md, so adding a prototype needs no pipeline code. `load` validates a file and
reports every problem with the file, the key path and what was expected. The command templates
are rendered for one cell by prototypes.contract.argv, the placeholders filled by
prototypes.contract.templates; the other library versions a prototype can run are described by
prototypes.contract.library_builds, the libraries the nightly follows upstream by
prototypes.contract.follow.

Templates are argument lists, so nothing passes through a shell. Placeholders that stand for
several arguments ({binary}, {params}, {extra}) must be whole list elements; the others may sit
inside an element ("-log-dir={log_dir}").
"""

from __future__ import annotations

import dataclasses
import functools
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from prototypes.contract.follow import Follow, follow_problems, parse_follow
from prototypes.contract.library_builds import (
    LibraryBuilds,
    VersionBuild,
    library_builds_problems,
    parse_library_builds,
)
from prototypes.contract.schema_errors import schema_problem
from prototypes.contract.templates import fill, placeholders
from prototypes.contract.upstream_lock import (
    UPSTREAM_LOCK,
    UpstreamLock,
    UpstreamLockError,
    read_lock,
)
from prototypes.contract.yamlfile import load_yaml

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


class ManifestError(ValueError):
    """A manifest is invalid. problems: one "key dotted.path: what is wrong" string per problem."""

    def __init__(self, path: Path | str, problems: Sequence[str]) -> None:
        self.path = str(path)
        self.problems = list(problems)
        super().__init__("\n".join(f"{self.path}: {p}" for p in self.problems))


@dataclass(frozen=True, slots=True)
class Variant:
    """A named tuning of a transport beyond the library's public API and documented options
    (an entry of a transport's `variants`): <transport>+<name> in a campaign."""

    name: str
    description: str
    options: Mapping[str, str]  # the transport options that switch it on


@dataclass(frozen=True, slots=True)
class Setting:
    """A setting the binding makes that differs from the library's own default."""

    value: str
    library_default: str
    description: str
    option: str | None = None  # the transport option that changes it


# The contract's largest message (CONTRACT.md section 5: a probe's size is at most 1 MiB).
CONTRACT_MAX_MESSAGE_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class MessageLimits:
    """The largest message a transport carries on each channel (manifest `message_limits`)."""

    reliable_bytes: int = CONTRACT_MAX_MESSAGE_BYTES
    unreliable_bytes: int = CONTRACT_MAX_MESSAGE_BYTES
    source: str = "the contract's largest message"
    # False: the manifest declares none, so the contract's limit is the least the transport
    # must carry (a library may carry more).
    declared: bool = False

    def on(self, channel: str) -> int:
        return self.reliable_bytes if channel == "reliable" else self.unreliable_bytes


@dataclass(frozen=True, slots=True)
class VersionFacts:
    """What is true of another version of a transport's library (`transports[].versions`)."""

    server_lost_s: float | None = None
    message_limits: MessageLimits | None = None
    notes: str | None = None


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
    variants: Mapping[str, Variant] = field(default_factory=dict)
    settings: Mapping[str, Setting] = field(default_factory=dict)
    message_limits: MessageLimits = field(default_factory=MessageLimits)
    versions: Mapping[str, VersionFacts] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def at_version(self, version: str) -> Transport:
        """This transport as another version of its library is: its own server_lost_s and
        message limits where `versions` gives them."""
        facts = self.versions.get(version)
        if facts is None:
            return dataclasses.replace(self, version=version)
        return dataclasses.replace(
            self,
            version=version,
            server_lost_s=facts.server_lost_s or self.server_lost_s,
            message_limits=facts.message_limits or self.message_limits,
        )


# The version a campaign names for the build `executable` is (the one `build` makes).
PINNED = "pinned"


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
    # Server flags only a plan made for a benchmark may pass (a planted regression; argv.py).
    benchmark_flags: Mapping[str, str] = field(default_factory=dict)
    # The libraries the nightly follows upstream (the follow section, or its default).
    follow: tuple[Follow, ...] = ()
    # The versions tonight found upstream and built (versions/upstream.json), declared too.
    upstream: UpstreamLock | None = None

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
        found = self.upstream_versions(transport)
        return tuple(dict.fromkeys((PINNED, t.version, *listed, *found)))

    def upstream_versions(self, transport: str) -> tuple[str, ...]:
        """The versions of the transport's library tonight found upstream and built (oldest
        first, the pinned one left out): what a campaign's `upstream` stands for."""
        if self.upstream is None or self.library_builds is None:
            return ()
        t = self.transport(transport)
        return self.upstream.versions(t.library, t.version)

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
        return self.library_builds.version_build(
            self.directory, t.library, version, external=self.build_external, fetch=self.build_fetch
        )

    def for_version(self, transport: str, version: str) -> Manifest:
        """This manifest with the executable built for `version` of the transport's library."""
        vb = self.version_build(transport, version)
        if vb is None:
            return self
        transports = tuple(
            t.at_version(vb.version) if t.library == vb.library else t for t in self.transports
        )
        return dataclasses.replace(
            self,
            executable=vb.executable,
            client_executable=vb.client_executable,
            library_build=vb,
            library_versions=vb.library_versions(self.library_versions),
            transports=transports,
        )

    def binary_argv(self, role: str = "server") -> list[str]:
        """What {binary} expands to in a process of this role: launcher, the role's executable
        (program), command_prefix."""
        launcher = [fill(a, {"python": sys.executable}) for a in self.launcher]
        return [*launcher, str(self.program(role)), *self.command_prefix]


# -- loading ---------------------------------------------------------------------------------


def _limits(doc: Mapping[str, Any] | None) -> MessageLimits | None:
    if doc is None:
        return None
    return MessageLimits(
        int(doc["reliable_bytes"]),
        int(doc["unreliable_bytes"]),
        str(doc.get("source", "the manifest's message_limits")),
        declared=True,
    )


def _schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return schema


def contract_workloads() -> tuple[str, ...]:
    """The workloads of CONTRACT.md section 5, as the manifest schema lists them."""
    return tuple(_schema()["properties"]["workloads"]["items"]["enum"])


def _check_template(
    key: str, template: Sequence[str], allowed: frozenset[str], required: Sequence[str]
) -> list[str]:
    problems = []
    seen: dict[str, int] = {}
    for i, element in enumerate(template):
        names = placeholders(element)
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


def _variant_problems(key: str, t: Mapping[str, Any]) -> list[str]:
    """A transport's variants have unique names, and a setting's option is one the transport or
    one of its variants takes."""
    problems = []
    names = [v["name"] for v in t.get("variants", [])]
    for j, name in enumerate(names):
        if name in names[:j]:
            problems.append(f"key {key}.variants.{j}.name: {name!r} repeats an earlier variant")
    takes = set(t.get("options", {}))
    takes |= {k for v in t.get("variants", []) for k in v["options"]}
    for name, setting in t.get("settings", {}).items():
        if "option" in setting and setting["option"] not in takes:
            problems.append(
                f"key {key}.settings.{name}.option: {setting['option']!r} is neither an option "
                f"nor a variant's option of {t['name']}; expected one of "
                f"{', '.join(sorted(takes)) or '(none)'}"
            )
    return problems


def _semantic_problems(doc: Mapping[str, Any]) -> list[str]:
    """What the schema cannot say: unique names, template placeholders."""
    problems = []
    names = [t["name"] for t in doc["transports"]]
    for i, name in enumerate(names):
        if name in names[:i]:
            problems.append(f"key transports.{i}.name: {name!r} repeats an earlier transport")
    for i, t in enumerate(doc["transports"]):
        problems += _variant_problems(f"transports.{i}", t)
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
    problems += library_builds_problems(doc, external)
    for flag in doc.get("benchmark_flags", {}):  # else any campaign could set it
        if flag in doc["optional_flags"] or flag in doc.get("prototype_flags", {}):
            problems.append(f"key benchmark_flags.{flag}: also an optional or prototype flag")
    problems += follow_problems(doc)
    for i, element in enumerate(doc.get("launcher", [])):
        for name in placeholders(element) or []:
            if name not in LAUNCHER_PLACEHOLDERS:
                problems.append(
                    f"key launcher.{i}: unknown placeholder {{{name}}}; expected only {{python}}"
                )
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
                variants={
                    v["name"]: Variant(v["name"], v["description"], dict(v["options"]))
                    for v in t.get("variants", [])
                },
                settings={
                    k: Setting(v["value"], v["library_default"], v["description"], v.get("option"))
                    for k, v in t.get("settings", {}).items()
                },
                message_limits=_limits(t.get("message_limits")) or MessageLimits(),
                notes=tuple(t.get("notes", ())),
                versions={
                    version: VersionFacts(
                        f.get("server_lost_s"), _limits(f.get("message_limits")), f.get("notes")
                    )
                    for version, f in t.get("versions", {}).items()
                },
            )
            for t in doc["transports"]
        ),
        workloads=tuple(doc["workloads"]),
        optional_flags=tuple(doc["optional_flags"]),
        prototype_flags=dict(doc.get("prototype_flags", {})),
        benchmark_flags=dict(doc.get("benchmark_flags", {})),
        library_versions=dict(doc["library_versions"]),
        environment=dict(doc.get("environment", {})),
        raw=doc,
        library_builds=parse_library_builds(doc.get("library_builds"), props),
        follow=parse_follow(doc, props),
    )


def load(path: Path | str) -> Manifest:
    """Read and validate a prototype.yaml; raises ManifestError naming file, key and expectation."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ManifestError(path, [f"cannot read the manifest: {exc.strerror or exc}"]) from None
    try:
        doc = load_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1} column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ManifestError(path, [f"{where}not valid YAML: {problem}"]) from None
    man = parse(doc, path)
    try:
        lock = read_lock(man.directory)
    except UpstreamLockError as exc:
        where = man.directory / UPSTREAM_LOCK
        raise ManifestError(where, [str(exc).removeprefix(f"{where}: ")]) from None
    return dataclasses.replace(man, upstream=lock) if lock is not None else man


@functools.cache
def load_once(path: Path) -> Manifest:
    """load, once per process and resolved path: for readers that ask for the same manifest
    many times (planning asks per cell, the runs table per transport; a YAML parse is about
    95 ms). A manifest edited while the process runs is not seen again."""
    return load(path)
