"""follow of a prototype manifest: which of its libraries the nightly follows upstream, and how
far (`netstick upstream check`, workflow/nightly/upstream.py).

Per library: `match` (a glob a version must match), `prereleases`, `max_new` (at most this many
new versions a night, newest first), `commits` (also the default branch's newest commit) and, for
a library that is not a Go module, `git` (a repository whose tags are its versions, `tag_prefix`
cut off). Without the key a manifest follows the releases of every Go module of library_versions
that a transport uses.

This module reads the section and says what the bounds mean for a list of versions (their order,
which are filtered out and why, which are new, which release came before each); it asks no proxy
and no repository: workflow.nightly.upstream does.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

# A Go module path: a first element with a dot (a domain), then at least one more element. Unity
# package names (com.unity.netcode) have no slash, library descriptions have spaces.
_GO_MODULE = re.compile(r"^[a-z0-9][a-z0-9-]*(\.[a-z0-9-]+)+(/[A-Za-z0-9._~+-]+)+$")
# A version: numbers separated by dots, an optional pre-release after "-" (semver, also Unity's
# 1.0.0-pre.65), optional build metadata after "+" (Go's +incompatible); "v" in front optional.
_VERSION = re.compile(
    r"^v?(?P<core>\d+(?:\.\d+)*)(?:-(?P<pre>[0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$"
)
# Numeric parts compared beyond this many are rare; shorter cores are padded with zeros so that
# 1.41 and 1.41.0 are one version in the order.
_CORE_PARTS = 6

VersionKey = tuple[tuple[int, ...], int, tuple[tuple[int, int | str], ...]]


def is_go_module(library: str) -> bool:
    """Whether a library name is a Go module path (followed through the Go module proxy)."""
    return bool(_GO_MODULE.match(library))


def version_key(version: str) -> VersionKey | None:
    """The semantic-version order of a version (v1.2.3, 96.11.0, 1.0.0-pre.65), None when it is
    not a version. A pre-release sorts before its release; pre-release identifiers compare
    numerically when numeric, numbers before words (semver 2.0.0, section 11)."""
    m = _VERSION.match(version)
    if m is None:
        return None
    core = tuple(int(p) for p in m["core"].split("."))
    core = (core + (0,) * _CORE_PARTS)[: max(_CORE_PARTS, len(core))]
    pre = m["pre"]
    if pre is None:
        return core, 1, ()
    ids = tuple((0, int(p)) if p.isdigit() else (1, p) for p in pre.split("."))
    return core, 0, ids


def is_prerelease(version: str) -> bool:
    """Whether a version is a pre-release (v1.2.0-rc.1, 1.0.0-pre.65; a Go pseudo-version too)."""
    m = _VERSION.match(version)
    return m is not None and m["pre"] is not None


def newest_first(versions: Iterable[str]) -> list[str]:
    """The versions (those that are versions, each once) newest first."""
    keyed = {v: k for v in versions if (k := version_key(v)) is not None}
    return sorted(keyed, key=lambda v: keyed[v], reverse=True)


def predecessor(version: str, known: Iterable[str]) -> str | None:
    """The newest of `known` strictly before `version` in the version order, or None."""
    key = version_key(version)
    if key is None:
        return None
    before = [v for v in known if (k := version_key(v)) is not None and k < key]
    return newest_first(before)[0] if before else None


@dataclass(frozen=True, slots=True)
class Selection:
    """What a library's follow bounds make of the versions its source lists tonight."""

    followed: tuple[str, ...]  # listed versions that pass match and prereleases, newest first
    new: tuple[str, ...]  # not measured before, newest first, at most max_new
    predecessors: Mapping[str, str | None]  # new version -> the followed release before it
    skipped: tuple[tuple[str, str], ...]  # (version, why), newest first

    @property
    def newest(self) -> str | None:
        return self.followed[0] if self.followed else None


@dataclass(frozen=True, slots=True)
class Follow:
    """One followed library of a manifest: its bounds, the transports that use it, its pinned
    version and the versions library_builds already declares."""

    library: str
    transports: tuple[str, ...]
    pinned: str
    match: str = "*"
    prereleases: bool = False
    max_new: int = 3
    commits: bool = False
    git: str | None = None
    tag_prefix: str = ""
    declared: tuple[str, ...] = field(default=())

    @property
    def source(self) -> Literal["go", "git"]:
        """Where its versions are listed: the Go module proxy, or a git repository's tags."""
        return "git" if self.git is not None else "go"

    def bounds(self) -> dict[str, Any]:
        """The bounds as a document records them."""
        return {
            "match": self.match,
            "prereleases": self.prereleases,
            "max_new": self.max_new,
            "commits": self.commits,
            "git": self.git,
            "tag_prefix": self.tag_prefix,
        }

    def version_of_tag(self, tag: str) -> str | None:
        """The version a git tag names (the tag without tag_prefix), None for a tag without the
        prefix."""
        if not tag.startswith(self.tag_prefix):
            return None
        return tag[len(self.tag_prefix) :] or None

    def filtered_out(self, version: str) -> str | None:
        """Why the bounds leave a version out ("not a version", the pattern, "pre-release"),
        or None when it is followed."""
        if version_key(version) is None:
            return "not a version"
        if not fnmatch.fnmatchcase(version, self.match):
            return f"does not match {self.match}"
        if is_prerelease(version) and not self.prereleases:
            return "pre-release (prereleases: false)"
        return None

    def select(self, listed: Iterable[str], measured: Collection[str]) -> Selection:
        """New since the last night: the listed versions the bounds follow that are newer than
        the pinned one and were never measured, newest first, at most max_new; the rest of the
        unmeasured ones are skipped as beyond max_new. Each new version's predecessor is the
        newest followed version before it among those listed, the pinned one and those
        library_builds declares (a proxy's list may lack an older release)."""
        skipped: list[tuple[str, str]] = []
        followed: list[str] = []
        unique = list(dict.fromkeys(listed))
        for version in unique:
            why = self.filtered_out(version)
            if why is None:
                followed.append(version)
            else:
                skipped.append((version, why))
        followed = newest_first(followed)
        # Published since: newer than the pinned version. An older release never measured is
        # history, not news (measure it by naming it in library_builds).
        floor = version_key(self.pinned) if self.pinned else None
        older = [v for v in followed if floor is not None and (version_key(v) or floor) <= floor]
        skipped += [(v, "not newer than the pinned version") for v in older if v != self.pinned]
        unmeasured = [v for v in followed if v not in measured and v not in older]
        new = unmeasured[: self.max_new]
        skipped += [(v, f"beyond max_new {self.max_new}") for v in unmeasured[self.max_new :]]
        known = self.known(followed)
        order = {v: i for i, v in enumerate(newest_first(v for v, _ in skipped))}
        return Selection(
            followed=tuple(followed),
            new=tuple(new),
            predecessors={v: predecessor(v, known) for v in new},
            skipped=tuple(sorted(skipped, key=lambda s: (order.get(s[0], len(order)), s[0]))),
        )

    def known(self, followed: Iterable[str]) -> list[str]:
        """The versions a predecessor may be: those followed, the pinned one and the declared
        ones, when the bounds follow them."""
        extra = (v for v in (self.pinned, *self.declared) if self.filtered_out(v) is None)
        return list(dict.fromkeys([*followed, *extra]))


def parse_follow(doc: Mapping[str, Any], props: Mapping[str, Any]) -> tuple[Follow, ...]:
    """The followed libraries of a valid manifest document, in the order of its transports;
    props: the schema's properties, for the defaults."""
    defaults = {
        k: v.get("default")
        for k, v in props["follow"]["additionalProperties"]["properties"].items()
    }
    users = _library_users(doc)
    lv: Mapping[str, str] = doc.get("library_versions", {})
    declared = doc.get("library_builds", {}).get("libraries", {})
    section: Mapping[str, Any] | None = doc.get("follow")
    if section is None:
        section = {lib: {} for lib in users if lib in lv and is_go_module(lib)}
    out = []
    for lib in sorted(section, key=lambda lib: list(users).index(lib) if lib in users else 0):
        entry = {**defaults, **(section[lib] or {})}
        transports, version = users[lib]
        out.append(
            Follow(
                library=lib,
                transports=transports,
                pinned=str(lv.get(lib, version)),
                match=str(entry["match"]),
                prereleases=bool(entry["prereleases"]),
                max_new=int(entry["max_new"]),
                commits=bool(entry["commits"]),
                git=entry.get("git"),
                tag_prefix=str(entry["tag_prefix"]),
                declared=tuple(declared.get(lib, ())),
            )
        )
    return tuple(out)


def _library_users(doc: Mapping[str, Any]) -> dict[str, tuple[tuple[str, ...], str]]:
    """Library -> (the transports that use it, the first one's version), in transport order."""
    users: dict[str, tuple[tuple[str, ...], str]] = {}
    for t in doc["transports"]:
        names, version = users.get(t["library"], ((), t["version"]))
        users[t["library"]] = ((*names, t["name"]), version)
    return users


def follow_problems(doc: Mapping[str, Any]) -> list[str]:
    """What the schema cannot say about follow: each library is one a transport uses, a library
    that is not a Go module needs git (its versions are tags), tag_prefix only with git."""
    section = doc.get("follow")
    if not section:
        return []
    users = _library_users(doc)
    problems = []
    for lib, entry in section.items():
        entry = entry or {}
        if lib not in users:
            problems.append(
                f"key follow.{lib}: no transport uses this library; expected one of "
                f"{', '.join(sorted(users))}"
            )
        if "git" not in entry and not is_go_module(lib):
            problems.append(
                f"key follow.{lib}: not a Go module path, so the module proxy cannot list its "
                "versions; expected git: the URL of a repository whose tags are its versions"
            )
        if "tag_prefix" in entry and "git" not in entry:
            problems.append(f"key follow.{lib}.tag_prefix: only allowed with git (tags)")
    return problems
