"""Static checks of the Unity prototypes (prototypes/unity/): what can be verified without Unity.

Unity cannot run here, so the projects are checked for what would otherwise fail only in a GameCI
build, or worse, build from something else than what the repository says:

- every `.cs` file parses as C# (tree-sitter-c-sharp) with no ERROR or MISSING node;
- conditional compilation (`#if`, `#elif`, `#else`, `#endif`) sits only at namespace or member
  level: at the top of a file, in a namespace body, or in a type body between members, never inside
  a method body, a statement or an expression. A directive that splits a statement hides code that
  one define set compiles from the parser (and from readers), so it is refused as a whole rather
  than pre-evaluated per define set; a member that differs per define set is written twice;
- every `manifest.json`, `packages-lock.json`, `package.json` and `*.asmdef` is valid JSON, and
  every package version in the first three is pinned: an exact version (`1.2.3`, `1.0.0-pre.65`),
  a git URL ending in `#<tag or commit>` (a tag holds a digit, a commit is 7 to 40 hex digits; a
  branch name such as `#main` moves and is refused), or `file:` naming a directory inside the
  repository that holds a `package.json`. No ranges, `^`, `~`, `*`, `x` or `latest`;
- every `ProjectVersion.txt` under `tracks/<track>/` names an editor version of its track's Unity
  line (TRACK_LINES) and all projects of one track agree on it;
- a file that imports Netstick.Core and a namespace defining a type of the same name (NAME_CLASHES:
  UnityEngine's Transform, Unity.Entities' World, ...) uses that name only qualified or through a
  `using Name = ...;` alias: a bare use does not compile (CS0104, ambiguous reference), and the
  core's names are not the adapters' to choose.

A track's `Packages/` and `ProjectSettings/ProjectVersion.txt` are copied into the project before
Unity opens it, so a `file:` path in `<project>/tracks/<track>/Packages/manifest.json` is resolved
from `<project>/Packages/`, where Unity reads it. Directories Unity or a build creates (Library/,
Temp/, Builds/, ...) and a library's sources copied into a project (Assets/Mirror) are not checked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import tree_sitter
import tree_sitter_c_sharp

# Unity line of each track: `current` is the Unity 6.3 LTS line, `thesis` the editor the
# original theses' prototypes were built with.
TRACK_LINES: dict[str, str] = {"current": "6000.3", "thesis": "2022.3"}

# Directories that Unity, a build or the build job's copy step create; never committed.
SKIP_DIRS = frozenset({"Library", "Temp", "Logs", "Builds", "obj", "bin", "UserSettings"})
# Library sources copied into a project before a build (relative to the project directory).
VENDORED = ("Assets/Mirror",)

PACKAGE_FILES = ("manifest.json", "packages-lock.json", "package.json")
CONDITIONAL_DIRECTIVES = frozenset({"preproc_if", "preproc_elif", "preproc_else"})
# Where a conditional directive may stand: the file, a namespace or a type body.
MEMBER_LEVEL = frozenset(
    {
        "compilation_unit",
        "declaration_list",
        "file_scoped_namespace_declaration",
        "enum_member_declaration_list",
    }
)

# Type names that namespaces the Unity projects import define too, read in their sources at the
# pinned versions (and System's). Only those Netstick.Core also defines are checked.
NAME_CLASHES: dict[str, frozenset[str]] = {
    "UnityEngine": frozenset({"Transform", "Input", "Random", "Object", "Debug", "Time"}),
    "Unity.Entities": frozenset({"World"}),
    "FishNet.Transporting": frozenset({"Channel"}),
    "System.Diagnostics": frozenset({"EventLog", "Process", "Debug", "Switch"}),
    "System.Threading": frozenset({"Timer"}),
    "System.Timers": frozenset({"Timer"}),
}
CORE_NAMESPACE = "Netstick.Core"
_TYPE_DECLARATIONS = frozenset(
    {
        "class_declaration",
        "struct_declaration",
        "enum_declaration",
        "interface_declaration",
        "delegate_declaration",
        "record_declaration",
    }
)

_EXACT_VERSION = re.compile(r"^\d+\.\d+\.\d+(?:-[0-9A-Za-z][0-9A-Za-z.-]*)?(?:\+[0-9A-Za-z.-]+)?$")
_TAG = re.compile(r"^[A-Za-z._-]*\d[0-9A-Za-z._+-]*$")
_SHA = re.compile(r"^[0-9a-f]{7,40}$")
_EDITOR_VERSION = re.compile(r"^m_EditorVersion:\s*(\S+)\s*$", re.MULTILINE)
_EDITOR_VERSION_FORM = re.compile(r"^(\d+\.\d+)\.\d+[abfpx]\d+$")


@dataclass(frozen=True)
class Violation:
    path: Path
    line: int  # 1-based; 0 when the problem concerns the whole file
    message: str

    def __str__(self) -> str:
        return (
            f"{self.path}:{self.line}: {self.message}"
            if self.line
            else f"{self.path}: {self.message}"
        )


@dataclass
class Report:
    violations: list[Violation]
    cs_files: int
    package_files: int
    project_versions: dict[Path, str]


@cache
def _parser() -> tree_sitter.Parser:
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_c_sharp.language()))


def _walk(node: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def check_csharp(path: Path, source: bytes, max_errors: int = 10) -> list[Violation]:
    """Syntax errors (ERROR/MISSING nodes) and conditional directives below member level."""
    tree = _parser().parse(source)
    out: list[Violation] = []
    errors = 0
    for node in _walk(tree.root_node):
        line = node.start_point[0] + 1
        if node.is_missing:
            errors += 1
            if errors <= max_errors:
                out.append(Violation(path, line, f"syntax error: missing {node.type!r}"))
        elif node.is_error:
            errors += 1
            if errors <= max_errors:
                text = source[node.start_byte : node.end_byte].decode("utf-8", "replace")
                snippet = " ".join(text.split())[:60]
                out.append(Violation(path, line, f"syntax error near {snippet!r}"))
        if node.type in CONDITIONAL_DIRECTIVES:
            owner = node.parent
            while owner is not None and owner.type in CONDITIONAL_DIRECTIVES:
                owner = owner.parent
            if owner is not None and owner.type not in MEMBER_LEVEL:
                directive = "#" + node.type.removeprefix("preproc_")
                out.append(
                    Violation(
                        path,
                        line,
                        f"{directive} inside a {owner.type.replace('_', ' ')}: conditional "
                        "compilation is allowed only at namespace or member level (write the "
                        "member twice instead of splitting a statement)",
                    )
                )
    if errors > max_errors:
        out.append(Violation(path, 0, f"{errors - max_errors} more syntax error(s)"))
    return out


def _text(node: tree_sitter.Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def declared_types(source: bytes) -> set[str]:
    """Names of the types a C# file declares."""
    names = set()
    for node in _walk(_parser().parse(source).root_node):
        if node.type in _TYPE_DECLARATIONS:
            name = node.child_by_field_name("name")
            if name is not None:
                names.add(_text(name))
    return names


def check_name_clashes(path: Path, source: bytes, core_types: set[str]) -> list[Violation]:
    """Bare uses of a Netstick.Core type name that an imported namespace defines too."""
    root = _parser().parse(source).root_node
    imported: set[str] = set()
    aliases: set[str] = set()
    own_namespaces: set[str] = set()
    for node in _walk(root):
        if node.type == "using_directive":
            named = [c for c in node.named_children if c.type in ("identifier", "qualified_name")]
            if any(c.type == "=" for c in node.children) and named:
                aliases.add(_text(named[0]))
            elif named:
                imported.add(_text(named[-1]))
        elif node.type in ("namespace_declaration", "file_scoped_namespace_declaration"):
            name = node.child_by_field_name("name")
            if name is not None:
                own_namespaces.add(_text(name))
    # Inside Netstick.Core its own types win over imported ones.
    if CORE_NAMESPACE not in imported or CORE_NAMESPACE in own_namespaces:
        return []
    clashes: dict[str, str] = {}
    for namespace in sorted(imported):
        for name in NAME_CLASHES.get(namespace, frozenset()) & core_types - aliases:
            clashes.setdefault(name, namespace)
    out: list[Violation] = []
    for node in _walk(root):
        if node.type != "identifier" or _text(node) not in clashes:
            continue
        parent = node.parent
        if parent is None or parent.type == "using_directive":
            continue
        if parent.child_by_field_name("name") == node and parent.type != "generic_name":
            continue  # x.Name, or the name a declaration introduces
        name = _text(node)
        out.append(
            Violation(
                path,
                node.start_point[0] + 1,
                f"{name} is ambiguous here: both {CORE_NAMESPACE} and {clashes[name]} define it "
                f"(qualify it or add `using {name} = ...;`)",
            )
        )
    return out


def _is_git_url(version: str) -> bool:
    return (
        "://" in version
        or version.startswith(("git@", "git+"))
        or version.split("#", 1)[0].endswith(".git")
    )


def _build_time_dir(manifest_path: Path) -> Path:
    """Where Unity reads this manifest from: a track's copy sits in <project>/Packages/."""
    parts = manifest_path.parts
    if len(parts) >= 4 and parts[-2] == "Packages" and parts[-4] == "tracks":
        return manifest_path.parents[3] / "Packages"
    return manifest_path.parent


def version_problem(
    version: object, *, base: Path | None = None, repo_root: Path | None = None
) -> str | None:
    """Why a package version is not pinned (None when it is). base: where `file:` starts from."""
    if not isinstance(version, str):
        return f"expected a version string, got {json.dumps(version)}"
    if version.startswith("file:"):
        if base is None or repo_root is None:
            return f"{version!r}: a local package is allowed only in a project manifest"
        target = (base / version.removeprefix("file:")).resolve()
        root = repo_root.resolve()
        if target != root and root not in target.parents:
            return f"{version!r}: expected a directory inside the repository, got {target}"
        if not (target / "package.json").is_file():
            return f"{version!r}: expected a package directory (with package.json) at {target}"
        return None
    if _is_git_url(version):
        ref = version.partition("#")[2]
        if not ref:
            return f"{version!r}: a git URL must end in #<tag> or #<commit>"
        if not (_TAG.match(ref) or _SHA.match(ref)):
            return (
                f"{version!r}: #{ref} looks like a branch; expected a tag (holding a digit) or a "
                "commit (7-40 hex digits)"
            )
        return None
    if not _EXACT_VERSION.match(version):
        return f"{version!r}: expected an exact version like 1.2.3 (no range, ^, ~, *, x, latest)"
    return None


def _json_file(path: Path) -> tuple[Any, Violation | None]:
    try:
        return json.loads(path.read_text(encoding="utf-8")), None
    except (OSError, UnicodeDecodeError) as exc:
        return None, Violation(path, 0, f"cannot read: {exc}")
    except json.JSONDecodeError as exc:
        return None, Violation(path, exc.lineno, f"invalid JSON: {exc.msg}")


def _key_line(text: str, key: str) -> int:
    """Line of the first occurrence of a JSON key, for messages (0 if not found)."""
    needle = json.dumps(key) + ":"
    compact = re.compile(re.escape(json.dumps(key)) + r"\s*:")
    for i, line in enumerate(text.splitlines(), 1):
        if needle in line or compact.search(line):
            return i
    return 0


def check_package_file(path: Path, repo_root: Path) -> list[Violation]:
    """manifest.json, packages-lock.json or package.json: valid JSON with pinned versions."""
    doc, bad = _json_file(path)
    if bad is not None:
        return [bad]
    if not isinstance(doc, Mapping):
        return [Violation(path, 1, "expected a JSON object")]
    text = path.read_text(encoding="utf-8")
    out: list[Violation] = []

    def pinned(name: str, version: object, base: Path | None) -> None:
        problem = version_problem(version, base=base, repo_root=repo_root)
        if problem is not None:
            out.append(Violation(path, _key_line(text, name), f"dependency {name}: {problem}"))

    deps = doc.get("dependencies", {})
    if not isinstance(deps, Mapping):
        return [
            Violation(path, _key_line(text, "dependencies"), "dependencies: expected an object")
        ]
    if path.name == "manifest.json":
        for name, version in deps.items():
            pinned(name, version, _build_time_dir(path))
    elif path.name == "packages-lock.json":
        for name, entry in deps.items():
            if not isinstance(entry, Mapping) or "version" not in entry:
                out.append(
                    Violation(
                        path, _key_line(text, name), f"{name}: expected an object with version"
                    )
                )
                continue
            source = entry.get("source")
            if source in ("local", "embedded"):
                pinned(name, entry["version"], _build_time_dir(path.with_name("manifest.json")))
            else:
                pinned(name, entry["version"], None)
                if source == "git" and not entry.get("hash"):
                    out.append(
                        Violation(
                            path, _key_line(text, name), f"{name}: a git package needs its hash"
                        )
                    )
            for dep, version in (entry.get("dependencies") or {}).items():
                pinned(f"{name} -> {dep}", version, None)
    else:  # package.json of a local package
        version = doc.get("version")
        if not isinstance(version, str) or not _EXACT_VERSION.match(version):
            out.append(
                Violation(
                    path,
                    _key_line(text, "version"),
                    f"version: expected an exact version, got {version!r}",
                )
            )
        for name, version in deps.items():
            pinned(name, version, None)
    return out


def _track_of(path: Path) -> str | None:
    parts = path.parts
    if len(parts) >= 4 and parts[-2] == "ProjectSettings" and parts[-4] == "tracks":
        return parts[-3]
    return None


def check_project_version(path: Path) -> tuple[str | None, list[Violation]]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return None, [Violation(path, 0, f"cannot read: {exc}")]
    m = _EDITOR_VERSION.search(text)
    if m is None:
        return None, [Violation(path, 1, "expected a line 'm_EditorVersion: <version>'")]
    version = m.group(1)
    line = text[: m.start()].count("\n") + 1
    form = _EDITOR_VERSION_FORM.match(version)
    if form is None:
        return None, [
            Violation(
                path, line, f"m_EditorVersion {version!r}: expected a version like 6000.3.18f1"
            )
        ]
    track = _track_of(path)
    if track is not None:
        expected = TRACK_LINES.get(track)
        if expected is None:
            known = ", ".join(sorted(TRACK_LINES))
            return version, [
                Violation(path, 0, f"unknown track {track!r}: expected one of {known}")
            ]
        if form.group(1) != expected:
            return version, [
                Violation(
                    path, line, f"m_EditorVersion {version}: track {track} uses Unity {expected}.*"
                )
            ]
    return version, []


def _files(root: Path) -> Iterator[Path]:
    vendored = {Path(v).parts for v in VENDORED}
    stack = [root]
    while stack:
        d = stack.pop()
        try:
            entries = sorted(d.iterdir())
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir():
                if entry.name in SKIP_DIRS or entry.name.startswith("."):
                    continue
                if any(entry.parts[-len(v) :] == v for v in vendored):
                    continue
                stack.append(entry)
            elif entry.is_file():
                yield entry


def repo_root_of(path: Path) -> Path:
    """The repository holding path: the nearest ancestor with .git (else the path itself)."""
    path = path.resolve()
    for candidate in (path, *path.parents):
        if (candidate / ".git").exists():
            return candidate
    return path


def check_tree(root: Path, repo_root: Path | None = None) -> Report:
    """Every check above on every file under root (e.g. prototypes/unity)."""
    repo = repo_root if repo_root is not None else repo_root_of(root)
    violations: list[Violation] = []
    cs_files = package_files = 0
    versions: dict[Path, str] = {}
    files = list(_files(root))
    core_types: set[str] = set()
    for path in files:
        if path.suffix == ".cs" and CORE_NAMESPACE in path.parent.name:
            core_types |= declared_types(path.read_bytes())
    for path in files:
        if path.suffix == ".cs":
            cs_files += 1
            source = path.read_bytes()
            violations += check_csharp(path, source)
            violations += check_name_clashes(path, source, core_types)
        elif path.name in PACKAGE_FILES:
            package_files += 1
            violations += check_package_file(path, repo)
        elif path.suffix == ".asmdef":
            _, bad = _json_file(path)
            if bad is not None:
                violations.append(bad)
        elif path.name == "ProjectVersion.txt":
            version, problems = check_project_version(path)
            violations += problems
            if version is not None:
                versions[path] = version
    by_track: dict[str, dict[str, list[Path]]] = {}
    for path, version in versions.items():
        track = _track_of(path)
        if track is not None:
            by_track.setdefault(track, {}).setdefault(version, []).append(path)
    for track, seen in sorted(by_track.items()):
        if len(seen) > 1:
            listing = "; ".join(
                f"{v}: {', '.join(str(p) for p in ps)}" for v, ps in sorted(seen.items())
            )
            for ps in seen.values():
                for p in ps:
                    violations.append(
                        Violation(
                            p, 0, f"track {track}: projects disagree on the editor ({listing})"
                        )
                    )
    return Report(violations, cs_files, package_files, versions)
