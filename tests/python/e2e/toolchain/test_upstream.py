"""`netstick upstream check` with the real Go toolchain and git: against a Go module proxy in a
directory the tests build (GOPROXY=file://; releases, a pre-release, a served branch head, a
module it lacks), a git repository with lightweight and annotated tags, and a history store
that measured some versions already; the module files of new versions made by the reference's
generator (one builds, one does not resolve, one does not build); and once against the real Go
module proxy for the reference's four Go libraries."""

from __future__ import annotations

import copy
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml

from stats.history.store import import_night
from workflow.nightly.upstream_builds import module_files, versions_to_measure

from support import go_proxy
from support.history_nights import night_results
from support.marks import needs_go
from support.paths import FAKE_MANIFEST, FAKE_PROTOTYPE, NETSTICK, REFERENCE_MANIFEST, REPO

pytestmark = needs_go

FAST, SLOW, GONE, TAGGED = (
    "example.test/fast",
    "example.test/slow/v2",
    "example.test/gone",
    "tagged",
)
PSEUDO = "v1.3.1-0.20260401000000-abcdefabcdef"
ORIGIN_SHA = "c0ffee" * 6 + "c0ff"


@dataclass(frozen=True)
class World:
    root: Path
    proxy: Path
    repo: Path
    manifest: Path
    history: Path
    sums: dict[str, tuple[str, str]]  # FAST@v -> (zip h1, go.mod h1)


def _git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Upstream", "GIT_AUTHOR_EMAIL": "upstream@netstick.invalid",
        "GIT_COMMITTER_NAME": "Upstream", "GIT_COMMITTER_EMAIL": "upstream@netstick.invalid",
        "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
    }  # fmt: skip
    res = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, check=True
    )
    return res.stdout.strip()


def _tagged_repo(repo: Path) -> None:
    """v1.0.0 lightweight, v1.1.0 annotated, v1.2.0-beta.1, a tag without the v, then a commit
    after the last tag (HEAD)."""
    repo.mkdir(parents=True)
    _git(repo, "init", "--quiet", "--initial-branch=main")
    for i, tags in enumerate([["v1.0.0"], ["-a v1.1.0"], ["v1.2.0-beta.1", "release-notes"], []]):
        (repo / "lib.txt").write_text(f"revision {i}\n")
        _git(repo, "add", "lib.txt")
        _git(repo, "commit", "--quiet", "-m", f"revision {i}")
        for tag in tags:
            if tag.startswith("-a "):
                _git(repo, "tag", "-a", tag[3:], "-m", f"release {tag[3:]}")
            else:
                _git(repo, "tag", tag)


def _manifest(path: Path, repo: Path, libraries: list[tuple[str, str, dict[str, Any]]]) -> Path:
    """The fake prototype's manifest with one transport per (library, pinned, follow entry)."""
    doc = yaml.safe_load(FAKE_MANIFEST.read_text())
    doc["name"] = "upstream-fixture"
    doc["executable"] = str(FAKE_PROTOTYPE)
    template = doc["transports"][0]
    doc["transports"] = []
    doc["follow"] = {}
    for i, (library, pinned, entry) in enumerate(libraries):
        t = copy.deepcopy(template)
        t |= {"name": f"t{i}", "library": library, "version": pinned}
        doc["transports"].append(t)
        doc["library_versions"][library] = pinned
        doc["follow"][library] = entry | ({"git": str(repo)} if library == TAGGED else {})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _night(root: Path, history: Path, name: str, version: str, library: str | None) -> None:
    """A night measuring `version` imported into the store: with library (and library_release)
    as the nightly records them now, or, library None, as an older night with only the bare
    version (library_versions). Names of different lengths make different nights (a night's
    id is a hash of its values) at different times."""
    rows = [
        {"campaign": "nightly", "cell_id": f"c{k}", "run_id": "r1", "status": "ok",
         "library_version": version, "rtt_net_p50_us": 1000.0 + 10 * len(name) + k}
        | ({"library": library, "library_release": version} if library else {})
        for k in range(2)
    ]  # fmt: skip
    results = night_results(root, name, pl.DataFrame(rows))
    import_night(results, history, time_utc=f"2026-11-0{len(name)}T01:00:00+00:00")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    root = tmp_path_factory.mktemp("upstream")
    proxy = root / "proxy"
    sums = {}
    for v, day in [("v1.0.0", 1), ("v1.1.0-rc.1", 2), ("v1.1.0", 3), ("v1.2.0", 4), ("v1.3.0", 5)]:
        origin = {"VCS": "git", "URL": "https://example.test/fast", "Hash": ORIGIN_SHA,
                  "Ref": f"refs/tags/{v}"} if v == "v1.2.0" else None  # fmt: skip
        sums[v] = go_proxy.add_version(proxy, FAST, v, f"2026-10-0{day}T12:00:00Z", origin)
    sums[PSEUDO] = go_proxy.add_version(proxy, FAST, PSEUDO, "2026-10-06T00:00:00Z", listed=False)
    go_proxy.serve_branch(proxy, FAST, "HEAD", PSEUDO, "2026-10-06T00:00:00Z")
    for v in ("v2.0.0", "v2.1.0", "v2.2.0", "v2.3.0", "v2.4.0-beta.1"):
        go_proxy.add_version(proxy, SLOW, v, "2026-09-01T00:00:00Z")
    repo = root / "tagged"
    _tagged_repo(repo)
    manifest = _manifest(
        root / "proto" / "prototype.yaml",
        repo,
        [
            (FAST, "v1.0.0", {"commits": True}),
            (SLOW, "v2.0.0", {"match": "v2.[0-3].*", "max_new": 1, "commits": True}),
            (GONE, "v0.1.0", {}),
            (TAGGED, "1.0.0", {"tag_prefix": "v", "commits": True}),
        ],
    )
    history = root / "history"
    _night(root, history, "n1", "v1.1.0", None)  # an older night: the bare version only
    _night(root, history, "n22", "v2.2.0", SLOW)
    return World(root, proxy, repo, manifest, history, sums)


def go_env(world: World, proxy: str | None = None) -> dict[str, str]:
    """The proxy directory and nothing else: no checksum database (these modules are in none),
    a module cache of the test's own (writable, so that it can be removed)."""
    return {
        **os.environ,
        "GOPROXY": proxy or f"file://{world.proxy}",
        "GOSUMDB": "off",
        "GOMODCACHE": str(world.root / "modcache"),
        "GOFLAGS": "-modcacherw",
        "GONOPROXY": "", "GONOSUMDB": "", "GOPRIVATE": "",
    }  # fmt: skip


def run_check(
    world: World, out: Path, *extra: str, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    argv = [str(NETSTICK), "upstream", "check", "--history-dir", str(world.history), "--out",
            str(out), *extra]  # fmt: skip
    res = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120, check=False)
    doc = json.loads(out.read_text()) if out.is_file() else {}
    return res, doc


def by_library(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {lib["library"]: lib for lib in doc["libraries"]}


def test_new_versions_since_the_last_night_resolved_to_exact_bytes(world: World) -> None:
    out = world.root / "upstream.json"
    res, doc = run_check(world, out, "--prototype", str(world.manifest), env=go_env(world))
    assert res.returncode == 0, res.stderr
    libs = by_library(doc)
    assert doc["schema"] == 1 and doc["history"]["nights"] == 2

    fast = libs[FAST]
    assert fast["listed"] == ["v1.0.0", "v1.1.0-rc.1", "v1.1.0", "v1.2.0", "v1.3.0"]
    assert fast["newest"] == "v1.3.0"
    # v1.1.0 was measured (an older night names it bare), v1.0.0 is the pinned one.
    assert [(n["version"], n["predecessor"]) for n in fast["new"]] == [
        ("v1.3.0", "v1.2.0"),
        ("v1.2.0", "v1.1.0"),
    ]
    assert fast["skipped"] == [
        {"version": "v1.1.0-rc.1", "why": "pre-release (prereleases: false)"}
    ]
    for item in fast["new"]:
        zip_h1, mod_h1 = world.sums[item["version"]]
        assert item["go_sum"] == [
            f"{FAST} {item['version']} {zip_h1}",
            f"{FAST} {item['version']}/go.mod {mod_h1}",
        ]
    v120 = fast["new"][1]
    assert v120["published"] == "2026-10-04T12:00:00Z"
    assert v120["commit"] == ORIGIN_SHA and v120["origin"]["Ref"] == "refs/tags/v1.2.0"
    assert fast["new"][0]["commit"] is None  # the proxy gave no origin for v1.3.0
    head = fast["head"]
    assert head["version"] == PSEUDO and head["query"] == "HEAD" and head["new"]
    assert head["revision"] == "abcdefabcdef" and head["predecessor"] == "v1.3.0"
    assert head["go_sum"][0] == f"{FAST} {PSEUDO} {world.sums[PSEUDO][0]}"

    slow = libs[SLOW]
    assert [(n["version"], n["predecessor"]) for n in slow["new"]] == [("v2.3.0", "v2.2.0")]
    assert slow["skipped"] == [
        {"version": "v2.4.0-beta.1", "why": "does not match v2.[0-3].*"},
        {"version": "v2.1.0", "why": "beyond max_new 1"},
    ]
    assert slow["head"] is None
    assert "does not serve the default branch" in slow["head_note"]
    assert slow["measured"] == ["v2.0.0", "v2.2.0"]

    # A module the proxy lacks is that library's error; the others were checked.
    assert not libs[GONE]["checked"] and GONE in libs[GONE]["errors"][0]

    tagged = libs[TAGGED]
    assert [n["version"] for n in tagged["new"]] == ["1.1.0"]
    peeled = _git(world.repo, "rev-parse", "v1.1.0^{commit}")
    assert peeled != _git(world.repo, "rev-parse", "v1.1.0")  # an annotated tag's own object
    assert tagged["new"][0]["commit"] == peeled and tagged["new"][0]["tag"] == "v1.1.0"
    assert tagged["new"][0]["predecessor"] == "1.0.0"
    assert {(s["version"], s["why"]) for s in tagged["skipped"]} == {
        ("1.2.0-beta.1", "pre-release (prereleases: false)"),
        ("release-notes", "tag without the prefix v"),
    }
    assert tagged["head"]["commit"] == _git(world.repo, "rev-parse", "HEAD")
    assert tagged["pinned_commit"] == _git(world.repo, "rev-parse", "v1.0.0")

    text = res.stdout
    assert "new      v1.3.0 published 2026-10-05, after v1.2.0" in text
    assert "skipped  does not match v2.[0-3].*: v2.4.0-beta.1" in text
    assert "head     none: the module proxy does not serve the default branch" in text
    assert f"error    go list -m -versions {GONE}" in text

    # A prototype outside prototypes/ is named by its directory.
    proto = str(world.manifest.parent)
    plan = versions_to_measure(doc)
    assert plan[(proto, "t0", FAST)] == ("v1.0.0", "v1.1.0", "v1.2.0", "v1.3.0", PSEUDO)
    assert plan[(proto, "t1", SLOW)] == ("v2.0.0", "v2.2.0", "v2.3.0")
    assert plan[(proto, "t3", TAGGED)] == ("1.0.0", "1.1.0", tagged["head"]["commit"])


def test_the_next_night_finds_nothing_new_once_measured(world: World, tmp_path: Path) -> None:
    history = tmp_path / "history"
    for name, version in (("a", "v1.2.0"), ("bb", "v1.3.0"), ("ccc", PSEUDO)):
        _night(tmp_path, history, name, version, FAST)
    later = World(world.root, world.proxy, world.repo, world.manifest, history, world.sums)
    res, doc = run_check(later, tmp_path / "u.json", "--prototype", str(world.manifest),
                         env=go_env(world))  # fmt: skip
    assert res.returncode == 0, res.stderr
    fast = by_library(doc)[FAST]
    # v1.1.0 was never measured in this store: now the only new one.
    assert [n["version"] for n in fast["new"]] == ["v1.1.0"]
    assert fast["head"]["new"] is False and "measured before" in res.stdout


def test_nothing_checked_is_a_failure(world: World, tmp_path: Path) -> None:
    manifest = _manifest(tmp_path / "p" / "prototype.yaml", world.repo, [(FAST, "v1.0.0", {})])
    empty = tmp_path / "empty-proxy"
    empty.mkdir()
    out = tmp_path / "u.json"
    res, doc = run_check(
        world, out, "--prototype", str(manifest), env=go_env(world, f"file://{empty}")
    )
    assert res.returncode == 1
    assert "no library could be checked" in res.stderr
    assert doc["libraries"][0]["checked"] is False and doc["libraries"][0]["errors"]


def test_module_files_of_new_versions(module_cache_proxy: Path, tmp_path: Path) -> None:
    """The reference's generator makes the module file of each new version into the caller's
    directory and builds it: a real release builds, an unknown version does not resolve, a
    version without the API the prototype uses does not build (with the compiler's message)."""
    ws = "github.com/coder/websocket"
    empty = "v0.0.0-20000101000000-000000000000"  # a module with no declarations at all
    go_proxy.add_version(module_cache_proxy, ws, empty, "2000-01-01T00:00:00Z", listed=False)
    doc = {
        "prototypes": {"reference": str(REFERENCE_MANIFEST.relative_to(REPO))},
        "libraries": [
            {"prototype": "reference", "library": ws, "source": "go", "transports": ["ws"],
             "pinned": "v1.8.15", "follow": {"max_new": 3}, "head": None,
             "new": [{"version": v, "predecessor": None} for v in ("v1.8.12", "v1.8.99", empty)]}
        ],
    }  # fmt: skip
    out = tmp_path / "versions"
    files = module_files(doc, out)
    assert set(files) == {(ws, "v1.8.12"), (ws, "v1.8.99"), (ws, empty)}
    good = files[(ws, "v1.8.12")]
    assert good.failure is None and good.executable is not None and good.executable.is_file()
    committed = REFERENCE_MANIFEST.parent / "versions" / f"{ws}@v1.8.12.mod"
    assert good.mod == out / f"{ws}@v1.8.12.mod"
    assert good.mod.read_text() == committed.read_text()  # the committed files stay as they are
    missing = files[(ws, "v1.8.99")]
    assert missing.mod is None and missing.failure is not None
    assert missing.failure.startswith(f"library {ws} version v1.8.99 does not resolve: go mod tidy")
    assert not (out / f"{ws}@v1.8.99.mod").exists()
    broken = files[(ws, empty)]
    assert broken.failure is not None and broken.executable is None
    assert f"library {ws} version {empty} does not build" in broken.failure
    assert "undefined: websocket." in broken.failure


REFERENCE_GO = {
    "github.com/xtaci/kcp-go/v5": "v5.*",
    "github.com/quic-go/quic-go": "*",
    "github.com/coder/websocket": "*",
    "github.com/pion/webrtc/v4": "*",
}


def _proxy_unreachable() -> str | None:
    """Why the configured Go module proxy cannot be asked, or None when it answers."""
    res = subprocess.run(
        ["go", "list", "-m", "-versions", "github.com/coder/websocket"],
        capture_output=True, text=True, timeout=60, check=False, cwd=REPO / "data",
        env={**os.environ, "GOTOOLCHAIN": "local"},
    )  # fmt: skip
    return None if res.returncode == 0 else (res.stderr.strip().splitlines() or ["?"])[0]


def test_real_module_proxy_lists_the_reference_libraries(tmp_path: Path) -> None:
    """The Go module proxy as `go env GOPROXY` configures it: the newest release of each of the
    reference's four Go libraries, as `go list -m MOD@latest` names it."""
    why = _proxy_unreachable()
    if why is not None:
        pytest.skip(f"the Go module proxy is unreachable: {why}")
    out = tmp_path / "upstream.json"
    argv = [str(NETSTICK), "upstream", "check", "--prototype", "reference", "--history-dir",
            str(tmp_path / "no-history"), "--out", str(out)]  # fmt: skip
    res = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    libs = by_library(json.loads(out.read_text()))
    assert set(libs) == set(REFERENCE_GO)
    for module, match in REFERENCE_GO.items():
        lib = libs[module]
        assert lib["checked"] and lib["errors"] == [], lib["errors"]
        assert lib["follow"]["match"] == match
        latest = subprocess.run(
            ["go", "list", "-m", "-f", "{{.Version}}", f"{module}@latest"],
            capture_output=True, text=True, check=True, cwd=REPO / "data",
        ).stdout.strip()  # fmt: skip
        assert lib["newest"] == latest, module
        assert f"newest   {latest}" in res.stdout
        for item in lib["new"]:  # every new version resolved to its go.sum lines
            assert item["error"] is None and len(item["go_sum"]) == 2
            assert item["published"] and item["version"] != lib["pinned"]
