"""What the followed libraries published since the last night (`netstick upstream check`).

For every library a prototype's manifest follows (its `follow` section, prototypes.contract.follow):
- a Go module: its versions from the Go module proxy (`go list -m -versions`, GOPROXY from the
  environment), each new one's publication time (`go list -m MOD@V`) and exact bytes (`go mod
  download`: the h1: sums of its zip and go.mod, which are its go.sum lines, and the commit the
  proxy says it came from); with `commits`, the default branch's newest commit (MOD@HEAD, else
  MOD@master) as a pseudo-version, or a note where the proxy refuses branch heads;
- a library followed by `git`: the repository's tags (`git ls-remote --tags`), each with the
  commit it names (the peeled commit of an annotated tag).

New since the last night means never measured: a version is measured when the history store
(data/history/<campaign>/*.csv, columns library_version or library_versions) has it, or when it
is the pinned one. Each new version carries its predecessor, the followed release before it,
which the night measures beside it and the pinned version (upstream_builds.versions_to_measure).

One library's failure (an unreachable proxy, a missing module) is that library's error; the
check fails only when nothing could be checked. The document (schema 1) is written atomically to
data/upstream/<campaign>.json.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from prototypes.contract import manifest as manifests
from prototypes.contract.follow import (
    Follow,
    Selection,
    is_go_module,
    newest_first,
    predecessor,
)
from stats.history import HistoryError
from stats.history.store import read_history
from workflow.campaign.executables import available_prototypes
from workflow.files import REPO, shown_path, write_json

SCHEMA: Final = 1
GO_TIMEOUT_S: Final = 300.0
GIT_TIMEOUT_S: Final = 120.0
# Libraries checked at once: each waits on the network, not on the CPU.
PARALLEL: Final = 4
# Lines of a tool's message kept in an error or a note.
_MESSAGE_LINES: Final = 6
# A pseudo-version ends in -<14-digit UTC time>-<12 hex digits of the commit>.
_PSEUDO: Final = re.compile(r"[.-](?P<time>\d{14})-(?P<rev>[0-9a-f]{12})(?:\+incompatible)?$")


class ToolError(RuntimeError):
    """A go or git command failed as a whole (its message names the command)."""


# -- what was measured before ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Measured:
    """The versions the history store has measured: per library where a night says which (a
    `library` column, or library@version), and bare versions of older nights for any library."""

    by_library: Mapping[str, frozenset[str]] = field(default_factory=dict)
    anywhere: frozenset[str] = frozenset()
    nights: int = 0
    note: str | None = None

    def of(self, library: str) -> frozenset[str]:
        return self.by_library.get(library, frozenset()) | self.anywhere


def measured_versions(history_dir: Path, campaign: str) -> Measured:
    """What the campaign's nights measured (read_history); none, with a note, without nights."""
    try:
        table = read_history(history_dir, campaign)
    except HistoryError:
        return Measured(
            note=f"no nights in {shown_path(history_dir / campaign)}: every version but the "
            "pinned one counts as not measured"
        )
    columns = [c for c in ("library", "library_version", "library_versions") if c in table.columns]
    by_library: dict[str, set[str]] = {}
    anywhere: set[str] = set()
    for row in table.select(columns).unique().iter_rows(named=True) if columns else []:
        library = row.get("library")
        values = [str(row.get("library_version") or "")]
        values += str(row.get("library_versions") or "").split(";")
        for value in (v.strip() for v in values):
            if not value or value == manifests.PINNED:
                continue
            if "@" in value:  # module@version names its library itself
                named, _, value = value.rpartition("@")
                by_library.setdefault(named, set()).add(value)
            elif library:
                by_library.setdefault(str(library), set()).add(value)
            else:
                anywhere.add(value)
    return Measured(
        by_library={k: frozenset(v) for k, v in by_library.items()},
        anywhere=frozenset(anywhere),
        nights=table["file"].n_unique() if "file" in table.columns else 0,
    )


# -- the tools ---------------------------------------------------------------------------------


def tool_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of every go and git command: the caller's (GOPROXY, GOSUMDB, GOMODCACHE
    as configured), a local Go toolchain only (a module's go line must not fetch another), and
    no git prompt (an unreachable repository fails instead of waiting for a password)."""
    return {**(os.environ if env is None else env), "GOTOOLCHAIN": "local",
            "GIT_TERMINAL_PROMPT": "0"}  # fmt: skip


def _short(text: str) -> str:
    lines = [line.rstrip() for line in text.strip().splitlines() if line.strip()]
    return "\n".join(lines[:_MESSAGE_LINES]) or "(no message)"


def _run(argv: Sequence[str], env: Mapping[str, str], timeout_s: float) -> tuple[int, str, str]:
    """Run a command outside any Go module (a temporary directory), so that no go.mod of the
    working directory shapes its answers."""
    with tempfile.TemporaryDirectory(prefix="netstick-upstream-") as cwd:
        try:
            res = subprocess.run(
                list(argv), cwd=cwd, env=dict(env), capture_output=True, text=True,
                timeout=timeout_s, check=False,
            )  # fmt: skip
        except FileNotFoundError:
            raise ToolError(f"{argv[0]}: not found on PATH") from None
        except subprocess.TimeoutExpired:
            raise ToolError(f"{' '.join(argv)}: no answer within {timeout_s:g} s") from None
    return res.returncode, res.stdout, res.stderr


def go_json(args: Sequence[str], env: Mapping[str, str]) -> list[dict[str, Any]]:
    """The JSON objects a go command prints (one per module); ToolError when it prints none and
    fails."""
    code, out, err = _run(["go", *args], env, GO_TIMEOUT_S)
    decoder = json.JSONDecoder()
    docs: list[dict[str, Any]] = []
    pos = 0
    while (pos := _skip_space(out, pos)) < len(out):
        try:
            doc, pos = decoder.raw_decode(out, pos)
        except json.JSONDecodeError:
            break
        if isinstance(doc, dict):
            docs.append(doc)
    if not docs and code != 0:
        raise ToolError(f"go {' '.join(args)} failed (exit {code}): {_short(err or out)}")
    return docs


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos


def _error_of(doc: Mapping[str, Any]) -> str | None:
    """A go -json object's error: {"Err": text} from go list -e, text from go mod download."""
    error = doc.get("Error")
    if isinstance(error, Mapping):
        error = error.get("Err")
    return _short(str(error)) if error else None


def goproxy(env: Mapping[str, str]) -> str | None:
    """GOPROXY as the go command sees it (the environment, else go env's default)."""
    try:
        code, out, _ = _run(["go", "env", "GOPROXY"], env, GO_TIMEOUT_S)
    except ToolError:
        return None
    return out.strip() if code == 0 else None


# -- one Go module -----------------------------------------------------------------------------


def _go_resolved(module: str, doc: Mapping[str, Any]) -> dict[str, Any]:
    """The exact bytes of one downloaded version: its go.sum lines and where it came from."""
    version = str(doc.get("Version"))
    origin = doc.get("Origin") if isinstance(doc.get("Origin"), Mapping) else None
    sums = {"sum": doc.get("Sum"), "go_mod_sum": doc.get("GoModSum")}
    return {
        **sums,
        "go_sum": [
            line
            for line, s in (
                (f"{module} {version} {sums['sum']}", sums["sum"]),
                (f"{module} {version}/go.mod {sums['go_mod_sum']}", sums["go_mod_sum"]),
            )
            if s
        ],
        "origin": dict(origin) if origin else None,
        "commit": origin.get("Hash") if origin else None,
    }


def _download(module: str, versions: Sequence[str], env: Mapping[str, str]) -> dict[str, Any]:
    """version -> its resolution (_go_resolved, or {"error": ...}) via go mod download."""
    if not versions:
        return {}
    try:
        docs = go_json(["mod", "download", "-json", *(f"{module}@{v}" for v in versions)], env)
    except ToolError as exc:
        return {v: {"error": str(exc)} for v in versions}
    out: dict[str, Any] = {}
    for doc in docs:
        error = _error_of(doc)
        out[str(doc.get("Version"))] = {"error": error} if error else _go_resolved(module, doc)
    return {v: out.get(v, {"error": f"go mod download gave nothing for {module}@{v}"})
            for v in versions}  # fmt: skip


def _head(
    module: str, infos: Mapping[str, Mapping[str, Any]], listed: Sequence[str]
) -> tuple[dict[str, Any] | None, str | None]:
    """The default branch's newest commit from the MOD@HEAD and MOD@master answers: (head,
    None) where the proxy serves one, else (None, why not)."""
    refused = []
    for query in ("HEAD", "master"):
        doc = infos.get(query, {})
        error = _error_of(doc) or (None if doc.get("Version") else "no answer")
        if error:
            refused.append(f"{module}@{query}: {error.splitlines()[0]}")
            continue
        version = str(doc["Version"])
        pseudo = _PSEUDO.search(version)
        origin = doc.get("Origin") if isinstance(doc.get("Origin"), Mapping) else {}
        return {
            "version": version,
            "query": query,
            "published": doc.get("Time"),
            "commit": origin.get("Hash"),
            "revision": pseudo["rev"] if pseudo else None,
            "release": version if version in listed else None,
        }, None
    return None, "the module proxy does not serve the default branch: " + "; ".join(refused)


def check_go(follow: Follow, measured: frozenset[str], env: Mapping[str, str]) -> dict[str, Any]:
    """One Go module: its versions, the new ones resolved, the head commit (see the module)."""
    entry = _entry(follow, "go")
    docs = go_json(["list", "-m", "-e", "-versions", "-json", follow.library], env)
    listing = docs[0] if docs else {}
    error = _error_of(listing)
    if error:
        raise ToolError(f"go list -m -versions {follow.library}: {error}")
    listed = [str(v) for v in listing.get("Versions") or []]
    selection = follow.select(listed, measured)
    entry |= _selection_fields(selection, listed)
    wanted = [*selection.new, *(p for p in selection.predecessors.values() if p)]
    if selection.newest:
        wanted.append(selection.newest)
    queries = list(dict.fromkeys(wanted)) + (["HEAD", "master"] if follow.commits else [])
    infos: dict[str, dict[str, Any]] = {}
    if queries:
        args = ["list", "-m", "-e", "-json", *(f"{follow.library}@{q}" for q in queries)]
        # A branch query answers with Query set; a version, and any failed query, with Version.
        infos = {str(d.get("Query") or d.get("Version")): d for d in go_json(args, env)}
    published = {q: infos.get(q, {}).get("Time") for q in queries}
    head, note = _head(follow.library, infos, listed) if follow.commits else (None, None)
    if head is not None:
        head["new"] = head["version"] not in measured and head["version"] != follow.pinned
        head["predecessor"] = predecessor(head["version"], follow.known(selection.followed))
    fetch = [*selection.new, *([head["version"]] if head and head["new"] else [])]
    resolved = _download(follow.library, list(dict.fromkeys(fetch)), env)
    entry["new"] = [
        {
            "version": v,
            "published": published.get(v),
            "predecessor": selection.predecessors[v],
            "predecessor_published": published.get(selection.predecessors[v] or ""),
            "error": resolved[v].get("error"),
            **_without_error(resolved[v]),
        }
        for v in selection.new
    ]
    entry["newest_published"] = published.get(selection.newest or "")
    if head is not None and head["new"]:
        head |= {"error": resolved[head["version"]].get("error")}
        head |= _without_error(resolved[head["version"]])
    entry["head"], entry["head_note"] = head, note
    entry["errors"] = [f"{n['version']}: {n['error']}" for n in entry["new"] if n["error"]]
    return entry


def _without_error(resolved: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in resolved.items() if k != "error"}


# -- one library followed by git ---------------------------------------------------------------


def ls_remote(url: str, env: Mapping[str, str], head: bool = False) -> dict[str, str]:
    """ref -> commit SHA of a repository's tags (refs/tags/NAME, an annotated tag's peeled
    commit in place of the tag object), and HEAD when asked."""
    argv = ["git", "ls-remote", url, "refs/tags/*", *(["HEAD"] if head else [])]
    code, out, err = _run(argv, env, GIT_TIMEOUT_S)
    if code != 0:
        raise ToolError(f"git ls-remote {url} failed (exit {code}): {_short(err or out)}")
    refs: dict[str, str] = {}
    peeled: dict[str, str] = {}
    for line in out.splitlines():
        sha, _, ref = line.partition("\t")
        if ref.endswith("^{}"):
            peeled[ref[:-3]] = sha
        elif ref:
            refs[ref] = sha
    return refs | peeled


def check_git(follow: Follow, measured: frozenset[str], env: Mapping[str, str]) -> dict[str, Any]:
    """One library followed by its repository's tags: each new version with its tag's commit
    (the build happens where the library's builds are made, and dates are that repository's)."""
    assert follow.git is not None
    entry = _entry(follow, "git")
    refs = ls_remote(follow.git, env, head=follow.commits)
    tags: dict[str, tuple[str, str]] = {}  # version -> (tag, commit)
    strays: list[tuple[str, str]] = []
    for ref, sha in refs.items():
        if not ref.startswith("refs/tags/"):
            continue
        tag = ref.removeprefix("refs/tags/")
        version = follow.version_of_tag(tag)
        if version is None:
            strays.append((tag, f"tag without the prefix {follow.tag_prefix}"))
        else:
            tags.setdefault(version, (tag, sha))
    ordered = newest_first(tags)
    listed = ordered[::-1] + sorted(set(tags) - set(ordered))  # oldest first, then non-versions
    selection = follow.select(listed, measured)
    entry |= _selection_fields(selection, listed)
    entry["skipped"] += [{"version": t, "why": why} for t, why in sorted(strays)]
    entry["new"] = [
        {
            "version": v,
            "tag": tags[v][0],
            "commit": tags[v][1],
            "published": None,
            "predecessor": selection.predecessors[v],
            "predecessor_commit": tags.get(selection.predecessors[v] or "", ("", None))[1],
            "error": None,
        }
        for v in selection.new
    ]
    entry["newest_published"] = None
    entry["pinned_commit"] = tags.get(follow.pinned, ("", None))[1]
    head_sha = refs.get("HEAD")
    entry["head"] = (
        {
            "version": head_sha,
            "query": "HEAD",
            "published": None,
            "commit": head_sha,
            "release": next((v for v, (_, sha) in tags.items() if sha == head_sha), None),
            "new": head_sha not in measured,
            "predecessor": selection.newest,
            "error": None,
        }
        if head_sha
        else None
    )
    entry["head_note"] = None if head_sha or not follow.commits else "the repository has no HEAD"
    return entry


# -- the document ------------------------------------------------------------------------------


def _entry(follow: Follow, source: str) -> dict[str, Any]:
    return {
        "library": follow.library,
        "source": source,
        "transports": list(follow.transports),
        "pinned": follow.pinned,
        "follow": follow.bounds(),
        "checked": True,
        "head": None,
        "head_note": None,
        "errors": [],
    }


def _selection_fields(selection: Selection, listed: Sequence[str]) -> dict[str, Any]:
    return {
        "listed": list(listed),
        "newest": selection.newest,
        "skipped": [{"version": v, "why": why} for v, why in selection.skipped],
    }


def check_library(
    prototype: str, follow: Follow, measured: Measured, env: Mapping[str, str]
) -> dict[str, Any]:
    """One followed library's entry; a failure is the entry's error, never the check's."""
    known = measured.of(follow.library)
    try:
        if follow.source == "git":
            entry = check_git(follow, known, env)
        else:
            entry = check_go(follow, known, env)
    except ToolError as exc:
        entry = _entry(follow, follow.source) | {
            "checked": False, "listed": [], "newest": None, "newest_published": None,
            "new": [], "skipped": [], "errors": [str(exc)],
        }  # fmt: skip
    entry["measured"] = sorted(known & set(entry["listed"]) | {follow.pinned})
    return {"prototype": prototype, **entry}


def not_followed(prototype: str, man: manifests.Manifest) -> list[dict[str, Any]]:
    """The libraries the prototype's transports use that nothing follows, and why."""
    followed = {f.library for f in man.follow}
    out: dict[str, dict[str, Any]] = {}
    for t in man.transports:
        if t.library in followed:
            continue
        if "follow" in man.raw:
            why = "not in follow"
        elif is_go_module(t.library):
            why = "not in library_versions"
        else:
            why = f"not a Go module; follow it with follow: {{{t.library}: {{git: URL}}}}"
        item = out.setdefault(
            t.library, {"prototype": prototype, "library": t.library, "transports": [], "why": why}
        )
        item["transports"].append(t.name)
    return list(out.values())


def prototype_manifests(names: Iterable[str] = ()) -> dict[str, Path]:
    """Prototype name (its directory under prototypes/) -> manifest, for the names given or every
    prototype of the checkout; a name may also be a manifest path. ValueError for an unknown
    name, naming the known ones."""
    known = available_prototypes()
    wanted = list(names) or known
    out: dict[str, Path] = {}
    for name in wanted:
        path = Path(name)
        if path.suffix in (".yaml", ".yml") and path.is_file():
            out[shown_path(path.parent).removeprefix("prototypes/")] = path.resolve()
        elif name in known:
            out[name] = REPO / "prototypes" / name / "prototype.yaml"
        else:
            raise ValueError(
                f"--prototype: no prototype {name!r}; expected one of {', '.join(known)} or a "
                "prototype.yaml"
            )
    return out


def check(
    prototypes: Mapping[str, Path],
    history_dir: Path,
    campaign: str,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The upstream document (schema 1) of the prototypes' followed libraries."""
    env = tool_env(env)
    measured = measured_versions(history_dir, campaign)
    errors: list[str] = []
    jobs: list[tuple[str, Follow]] = []
    unfollowed: list[dict[str, Any]] = []
    for name, path in prototypes.items():
        try:
            man = manifests.load(path)
        except manifests.ManifestError as exc:
            errors.append(str(exc))
            continue
        jobs += [(name, f) for f in man.follow]
        unfollowed += not_followed(name, man)
    with ThreadPoolExecutor(max_workers=PARALLEL) as pool:
        libraries = list(pool.map(lambda job: check_library(*job, measured, env), jobs))
    return {
        "schema": SCHEMA,
        "campaign": campaign,
        "checked_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "goproxy": goproxy(env) if any(f.source == "go" for _, f in jobs) else None,
        "history": {
            "dir": shown_path(history_dir),
            "nights": measured.nights,
            "note": measured.note,
        },
        "prototypes": {name: shown_path(path) for name, path in prototypes.items()},
        "libraries": libraries,
        "not_followed": unfollowed,
        "errors": errors,
    }


def anything_checked(doc: Mapping[str, Any]) -> bool:
    """Whether at least one library's versions were listed (the check's exit status)."""
    return any(lib["checked"] for lib in doc["libraries"])


def default_out(campaign: str) -> Path:
    return REPO / "data" / "upstream" / f"{campaign}.json"


def write(doc: Mapping[str, Any], out: Path) -> Path:
    """The document, atomically (a reader sees the previous check or this one)."""
    return write_json(out, doc, sort_keys=False, strict=True)


# -- the summary -------------------------------------------------------------------------------

# Versions shown per skip reason before "and N more".
_SHOWN_SKIPPED: Final = 6


def _date(time: str | None) -> str:
    return time[:10] if time else "date unknown"


def _bounds_words(lib: Mapping[str, Any]) -> str:
    f = lib["follow"]
    where = f"tags of {f['git']}" if lib["source"] == "git" else "Go module proxy"
    what = "with pre-releases" if f["prereleases"] else "releases only"
    match = f", match {f['match']}" if f["match"] != "*" else ""
    return f"{where}{match}, {what}, at most {f['max_new']} new a night"


def _new_line(item: Mapping[str, Any]) -> str:
    after = f"after {item['predecessor']}" if item.get("predecessor") else "first followed"
    exact = item.get("commit") or (item.get("sum") or "")
    exact = f"commit {exact[:12]}" if item.get("commit") else exact
    text = f"{item['version']} published {_date(item.get('published'))}, {after}"
    text += f" ({exact})" if exact else ""
    return text + (f"; {item['error'].splitlines()[0]}" if item.get("error") else "")


def _head_line(lib: Mapping[str, Any]) -> str:
    head = lib.get("head")
    if head is None:
        if not lib["follow"]["commits"]:
            return "not followed (commits: false)"
        return f"none: {lib['head_note'] or 'not checked'}"
    what = f"release {head['release']}" if head.get("release") else "unreleased"
    commit = head.get("commit") or head.get("revision") or ""
    state = "new" if head.get("new") else "measured before"
    return (
        f"{head['version']} ({what}, commit {commit[:12]}, {_date(head.get('published'))}), {state}"
    )


def summary(doc: Mapping[str, Any]) -> str:
    """What the check found, per library, for a person: pinned, newest, the new versions with
    their dates and predecessors, what was skipped and why, the head commit, the errors."""
    hist = doc["history"]
    lines = [
        f"upstream check, campaign {doc['campaign']}: history {hist['dir']} "
        f"({hist['nights']} night(s))" + (f"; {hist['note']}" if hist["note"] else ""),
    ]
    if doc.get("goproxy"):
        lines.append(f"GOPROXY {doc['goproxy']}")
    for lib in doc["libraries"]:
        transports = ", ".join(lib["transports"])
        lines.append("")
        lines.append(f"{lib['prototype']}: {lib['library']} ({transports}; {_bounds_words(lib)})")
        row = "  {:<9}{}".format
        lines.append(row("pinned", lib["pinned"]))
        if lib["checked"]:
            newest = lib["newest"] or "none followed"
            if lib.get("newest_published"):
                newest += f" (published {_date(lib['newest_published'])})"
            lines.append(row("newest", newest))
            news = [_new_line(n) for n in lib["new"]] or ["none: every followed version measured"]
            lines += [row("new" if i == 0 else "", n) for i, n in enumerate(news)]
            lines += [row("skipped" if i == 0 else "", s) for i, s in enumerate(_skipped(lib))]
            lines.append(row("head", _head_line(lib)))
        lines += [
            row("error" if i == 0 else "", e.replace("\n", " | "))
            for i, e in enumerate(lib["errors"])
        ]
    for item in doc["not_followed"]:
        lines.append("")
        lines.append(
            f"{item['prototype']}: {item['library']} ({', '.join(item['transports'])}) "
            f"not followed: {item['why']}"
        )
    lines += [f"error: {e}" for e in doc["errors"]]
    return "\n".join(lines)


def _skipped(lib: Mapping[str, Any]) -> list[str]:
    by_why: dict[str, list[str]] = {}
    for item in lib["skipped"]:
        by_why.setdefault(item["why"], []).append(item["version"])
    out = []
    for why, versions in by_why.items():
        shown = ", ".join(versions[:_SHOWN_SKIPPED])
        more = len(versions) - _SHOWN_SKIPPED
        out.append(f"{why}: {shown}" + (f" and {more} more" if more > 0 else ""))
    return out
