"""The follow section of a prototype manifest (prototypes/contract/follow.py): the version order,
what the bounds filter out and why, which versions are new since the last night, the release
before each, the default without the key, and validation errors that name file and key."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from prototypes.contract import manifest as mf
from prototypes.contract.follow import (
    Follow,
    is_go_module,
    is_prerelease,
    newest_first,
    predecessor,
    version_key,
)

from support.manifest_variants import Doc, load_variant
from support.paths import REPO

REFERENCE_MANIFEST = REPO / "prototypes" / "reference" / "prototype.yaml"
KCP = "github.com/xtaci/kcp-go/v5"


# -- the version order ------------------------------------------------------------------------


def test_semantic_version_order() -> None:
    ordered = [
        "v0.9.0", "v1.0.0-alpha", "v1.0.0-alpha.1", "v1.0.0-alpha.beta", "v1.0.0-beta.2",
        "v1.0.0-beta.11", "v1.0.0-rc.1", "v1.0.0", "v1.2.0", "v1.9.0", "v1.10.0", "v2.0.0",
    ]  # fmt: skip
    shuffled = ordered[:]
    random.Random(7).shuffle(shuffled)
    assert newest_first(shuffled) == ordered[::-1]


def test_versions_without_v_and_with_fewer_parts() -> None:
    """Unity and Mirror versions: 96.11.0, 1.41 (kcp2k), 1.0.0-pre.65."""
    assert newest_first(["1.41", "1.9", "1.41.1", "1.0.0-pre.65", "1.0.0"]) == [
        "1.41.1", "1.41", "1.9", "1.0.0", "1.0.0-pre.65",
    ]  # fmt: skip
    assert version_key("1.41") == version_key("1.41.0")


def test_go_pseudo_version_sorts_between_releases() -> None:
    pseudo = "v1.3.1-0.20260401000000-abcdefabcdef"
    assert newest_first(["v1.3.1", pseudo, "v1.3.0"]) == ["v1.3.1", pseudo, "v1.3.0"]
    assert is_prerelease(pseudo)
    assert version_key("v2.0.0+incompatible") == version_key("v2.0.0")


@pytest.mark.parametrize("text", ["release-notes", "nightly", "", "v", "1..2", "v1.2.3-"])
def test_not_a_version(text: str) -> None:
    assert version_key(text) is None
    assert newest_first([text, "v1.0.0"]) == ["v1.0.0"]


def test_predecessor_is_the_newest_strictly_before() -> None:
    known = ["v1.0.0", "v1.2.0", "v1.1.0", "nightly"]
    assert predecessor("v1.2.0", known) == "v1.1.0"
    assert predecessor("v1.1.5", known) == "v1.1.0"
    assert predecessor("v1.0.0", known) is None
    assert predecessor("not-a-version", known) is None


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (KCP, True), ("golang.org/x/sys", True), ("github.com/coder/websocket", True),
        ("com.unity.netcode", False), ("mirror", False), ("Go net (standard library)", False),
        ("libenet (Debian 12 libenet-dev)", False), ("example.test", False),
    ],
)  # fmt: skip
def test_go_module_paths(name: str, expected: bool) -> None:
    assert is_go_module(name) is expected


# -- the bounds ---------------------------------------------------------------------------------


def follow(**kwargs: Any) -> Follow:
    base: dict[str, Any] = {"library": KCP, "transports": ("kcp",), "pinned": "v5.6.72"}
    return Follow(**(base | kwargs))


def test_new_is_never_measured_newest_first_at_most_max_new() -> None:
    listed = ["v5.6.24", "v5.6.72", "v5.7.3", "v5.7.4", "v5.7.5", "v5.7.6", "v5.8.0-rc.1"]
    sel = follow(max_new=2).select(listed, measured={"v5.7.6"})
    assert sel.new == ("v5.7.5", "v5.7.4")  # v5.7.6 measured, v5.6.72 pinned
    assert sel.newest == "v5.7.6"
    assert sel.skipped == (
        ("v5.8.0-rc.1", "pre-release (prereleases: false)"),
        ("v5.7.3", "beyond max_new 2"),
        # Older than the pinned version: history, not news.
        ("v5.6.24", "not newer than the pinned version"),
    )
    assert sel.predecessors == {"v5.7.5": "v5.7.4", "v5.7.4": "v5.7.3"}


def test_predecessor_may_be_the_pinned_version_the_proxy_does_not_list() -> None:
    """The proxy's list can lack a release (here the pinned one): the release before v5.7.3 is
    still v5.6.72, not v5.6.24."""
    sel = follow().select(["v5.6.24", "v5.7.3"], measured=set())
    assert sel.new == ("v5.7.3",)
    assert sel.predecessors == {"v5.7.3": "v5.6.72"}


def test_pattern_and_prereleases() -> None:
    listed = ["v4.9.0", "v5.0.0", "v5.1.0-rc.1", "v6.0.0", "nightly"]
    sel = follow(match="v5.*", prereleases=True, pinned="v5.0.0").select(listed, set())
    assert sel.new == ("v5.1.0-rc.1",)
    assert sel.predecessors == {"v5.1.0-rc.1": "v5.0.0"}
    assert dict(sel.skipped) == {
        "v6.0.0": "does not match v5.*",
        "v4.9.0": "does not match v5.*",
        "nightly": "not a version",
    }
    assert [v for v, _ in sel.skipped] == ["v6.0.0", "v4.9.0", "nightly"]  # newest first


def test_nothing_new_once_everything_is_measured() -> None:
    listed = ["v5.6.72", "v5.7.3"]
    sel = follow().select(listed * 2, measured={"v5.7.3"})  # a list with repeats, too
    assert sel.new == () and sel.skipped == () and sel.followed == ("v5.7.3", "v5.6.72")


def test_declared_versions_are_known_predecessors() -> None:
    sel = follow(declared=("v5.7.0",)).select(["v5.7.3"], set())
    assert sel.predecessors == {"v5.7.3": "v5.7.0"}


def test_tag_prefix() -> None:
    ngo = follow(library="com.unity.netcode.gameobjects", git="https://x.invalid/ngo.git",
                 tag_prefix="ngo/", pinned="2.9.2")  # fmt: skip
    assert ngo.version_of_tag("ngo/2.10.0") == "2.10.0"
    assert ngo.version_of_tag("v2.10.0") is None and ngo.version_of_tag("ngo/") is None
    assert ngo.source == "git" and follow().source == "go"


# -- the manifest section ---------------------------------------------------------------------


def problems_of(tmp_path: Path, change: Callable[[Doc], None]) -> list[str]:
    with pytest.raises(mf.ManifestError) as info:
        load_variant(tmp_path, change)
    path = str((tmp_path / "prototype.yaml").resolve())
    assert all(line.startswith(f"{path}: key follow.") for line in str(info.value).splitlines())
    return info.value.problems


def test_reference_follows_its_four_go_libraries() -> None:
    man = mf.load(REFERENCE_MANIFEST)
    assert [(f.library, f.transports, f.pinned, f.match) for f in man.follow] == [
        (KCP, ("kcp",), "v5.6.72", "v5.*"),
        ("github.com/quic-go/quic-go", ("quic",), "v0.65.0", "*"),
        ("github.com/coder/websocket", ("ws",), "v1.8.15", "*"),
        ("github.com/pion/webrtc/v4", ("webrtc",), "v4.2.20", "*"),
    ]
    f = man.follow[0]
    assert (f.prereleases, f.max_new, f.commits, f.git) == (False, 2, False, None)
    assert f.declared == ("v5.7.5", "v5.6.24")


def test_without_the_key_every_go_module_a_transport_uses(tmp_path: Path) -> None:
    """Releases only of each Go module in library_versions that a transport uses: not the
    standard library, libenet or golang.org/x/sys (no transport's library)."""
    man = load_variant(tmp_path, lambda d: d.pop("follow"))
    assert [f.library for f in man.follow] == [
        KCP, "github.com/quic-go/quic-go", "github.com/coder/websocket",
        "github.com/pion/webrtc/v4",
    ]  # fmt: skip
    assert all(f.match == "*" and not f.prereleases and not f.commits for f in man.follow)


def test_an_empty_section_follows_nothing(tmp_path: Path) -> None:
    assert load_variant(tmp_path, lambda d: d.update(follow={})).follow == ()


def test_unity_manifests_follow_tags() -> None:
    mirror = mf.load(REPO / "prototypes" / "unity" / "mirror" / "prototype.yaml").follow
    assert [(f.library, f.transports, f.tag_prefix, f.source) for f in mirror] == [
        ("mirror", ("kcp", "telepathy"), "v", "git")
    ]
    assert mirror[0].version_of_tag("v96.11.0") == mirror[0].pinned


def test_library_no_transport_uses(tmp_path: Path) -> None:
    problems = problems_of(tmp_path, lambda d: d["follow"].update({"golang.org/x/sys": {}}))
    assert problems == [
        "key follow.golang.org/x/sys: no transport uses this library; expected one of "
        "Go net (standard library), github.com/coder/websocket, github.com/pion/webrtc/v4, "
        "github.com/quic-go/quic-go, github.com/xtaci/kcp-go/v5, libenet (Debian 12 libenet-dev)"
    ]


def test_library_that_is_no_go_module_needs_git(tmp_path: Path) -> None:
    def change(d: Doc) -> None:
        d["follow"] = {"libenet (Debian 12 libenet-dev)": {"tag_prefix": "v"}}

    assert problems_of(tmp_path, change) == [
        "key follow.libenet (Debian 12 libenet-dev): not a Go module path, so the module proxy "
        "cannot list its versions; expected git: the URL of a repository whose tags are its "
        "versions",
        "key follow.libenet (Debian 12 libenet-dev).tag_prefix: only allowed with git (tags)",
    ]


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ({"max_new": 0}, f"key follow.{KCP}.max_new: expected an integer >= 1, found 0"),
        ({"prereleases": "yes"}, f"key follow.{KCP}.prereleases: expected true or false"),
        ({"git": "--upload-pack=evil"}, f"key follow.{KCP}.git: expected text matching"),
        ({"matches": "v5.*"}, f"key follow.{KCP}.matches: unknown key; expected one of commits"),
        ({"match": ""}, f"key follow.{KCP}.match: expected at least 1 character(s)"),
    ],
)
def test_schema_errors_name_file_and_key(tmp_path: Path, entry: Doc, expected: str) -> None:
    problems = problems_of(tmp_path, lambda d: d["follow"].update({KCP: entry}))
    assert len(problems) == 1 and problems[0].startswith(expected), problems


def test_an_entry_must_be_a_mapping(tmp_path: Path) -> None:
    problems = problems_of(tmp_path, lambda d: d["follow"].update({KCP: "v5.*"}))
    assert problems == [f'key follow.{KCP}: expected a mapping, found "v5.*" (a string)']
