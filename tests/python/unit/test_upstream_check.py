"""The upstream check's own logic, in-process (the go and git commands are the e2e test's,
tests/python/e2e/toolchain/test_upstream.py): what the history store says was measured, the
versions a night measures, the summary, the prototypes asked for."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from prototypes.contract import manifest as mf
from workflow.nightly import upstream
from workflow.nightly.upstream_builds import versions_to_measure

from support.paths import REPO

KCP = "github.com/xtaci/kcp-go/v5"
WS = "github.com/coder/websocket"
HEADER = "time,cell_id,cpu_count,night_id"


def write_night(history: Path, name: str, columns: dict[str, list[str]]) -> None:
    """One night file of campaign nightly with the store's must-have columns and `columns`."""
    folder = history / "nightly"
    folder.mkdir(parents=True, exist_ok=True)
    n = len(next(iter(columns.values())))
    names = [*HEADER.split(","), *columns]
    rows = [
        [
            f"2026-11-0{len(name)}T01:00:00+00:00",
            f"c{i}",
            "2",
            name,
            *(v[i] for v in columns.values()),
        ]
        for i in range(n)
    ]
    text = "\n".join(",".join(r) for r in [names, *rows]) + "\n"
    (folder / f"2026110{len(name)}T010000Z-{name}.csv").write_text(text)


def test_measured_per_library_and_bare_from_older_nights(tmp_path: Path) -> None:
    write_night(tmp_path, "a", {"library_versions": ["v1.8.12;pinned", f"{KCP}@v5.7.3"]})
    write_night(
        tmp_path,
        "bb",
        {"library": [KCP, WS], "library_version": ["v5.7.4", "v1.8.14"],
         "library_versions": ["v5.7.4", "v1.8.14"]},
    )  # fmt: skip
    measured = upstream.measured_versions(tmp_path, "nightly")
    assert measured.nights == 2 and measured.note is None
    assert measured.of(KCP) == {"v5.7.3", "v5.7.4", "v1.8.12"}  # v1.8.12: a bare older one
    assert measured.of(WS) == {"v1.8.14", "v1.8.12"}
    assert "pinned" not in measured.of(WS)


def test_no_nights_means_only_the_pinned_version_counts() -> None:
    measured = upstream.measured_versions(REPO / "data" / "no-such-history", "nightly")
    assert measured.nights == 0 and measured.of(KCP) == frozenset()
    # The note names the store as the repository sees it, not as this machine does.
    assert measured.note is not None
    assert measured.note.startswith("no nights in data/no-such-history/nightly: ")
    assert str(REPO) not in measured.note


def test_nights_without_any_version_column(tmp_path: Path) -> None:
    write_night(tmp_path, "a", {"commit": ["abc"]})
    assert upstream.measured_versions(tmp_path, "nightly").of(KCP) == frozenset()


def lib_entry(**kwargs: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "prototype": "reference", "library": KCP, "source": "go", "transports": ["kcp"],
        "pinned": "v5.6.72", "checked": True, "listed": [], "newest": "v5.7.5",
        "newest_published": "2026-11-08T02:57:35Z", "skipped": [], "errors": [],
        "head": None, "head_note": None,
        "follow": {"match": "v5.*", "prereleases": False, "max_new": 2, "commits": False,
                   "git": None, "tag_prefix": ""},
        "new": [
            {"version": "v5.7.5", "published": "2026-11-08T02:57:35Z", "predecessor": "v5.7.4",
             "sum": "h1:zip=", "commit": None, "error": None},
            {"version": "v5.7.4", "published": "2026-11-06T02:07:51Z", "predecessor": "v5.7.3",
             "sum": "h1:zip=", "commit": "ab" * 20, "error": None},
            {"version": "v5.7.3", "published": None, "predecessor": "v5.6.72", "sum": None,
             "commit": None, "error": None},
        ],
    }  # fmt: skip
    return base | kwargs


def test_versions_to_measure_new_predecessors_pinned_bounded_by_max_new() -> None:
    head = {"version": "v5.7.6-0.20261110000000-0123456789ab", "new": True,
            "predecessor": "v5.7.5"}  # fmt: skip
    ws = lib_entry(library=WS, transports=["ws", "ws2"], pinned="v1.8.15", new=[], head=None)
    doc = {"libraries": [lib_entry(head=head), ws, lib_entry(prototype="other")]}
    plan = versions_to_measure(doc, prototype="reference")
    # max_new 2: v5.7.3 waits; the head commit, new, comes with its predecessor.
    assert plan[("reference", "kcp", KCP)] == (
        "v5.6.72",
        "v5.7.3",
        "v5.7.4",
        "v5.7.5",
        head["version"],
    )
    assert plan[("reference", "ws", WS)] == plan[("reference", "ws2", WS)] == ("v1.8.15",)
    assert ("other", "kcp", KCP) not in plan
    assert ("other", "kcp", KCP) in versions_to_measure(doc)


def doc_of(*libraries: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    base = {
        "campaign": "nightly", "goproxy": "https://proxy.golang.org,direct",
        "history": {"dir": "data/history", "nights": 4, "note": None},
        "libraries": list(libraries), "not_followed": [], "errors": [],
    }  # fmt: skip
    return base | kwargs


def test_summary_per_library() -> None:
    skipped = [{"version": f"v5.6.{i}", "why": "beyond max_new 2"} for i in range(9, 0, -1)]
    skipped.insert(0, {"version": "v5.8.0-rc.1", "why": "pre-release (prereleases: false)"})
    text = upstream.summary(doc_of(lib_entry(skipped=skipped, head_note=None)))
    lines = text.splitlines()
    assert lines[0] == "upstream check, campaign nightly: history data/history (4 night(s))"
    assert lines[1] == "GOPROXY https://proxy.golang.org,direct"
    assert (
        f"reference: {KCP} (kcp; Go module proxy, match v5.*, releases only, at most 2 new a night)"
        in lines
    )
    assert "  pinned   v5.6.72" in lines
    assert "  newest   v5.7.5 (published 2026-11-08)" in lines
    assert "  new      v5.7.5 published 2026-11-08, after v5.7.4 (h1:zip=)" in lines
    assert f"           v5.7.4 published 2026-11-06, after v5.7.3 (commit {'ab' * 6})" in lines
    assert "           v5.7.3 published date unknown, after v5.6.72" in lines
    assert "  skipped  pre-release (prereleases: false): v5.8.0-rc.1" in lines
    assert (
        "           beyond max_new 2: v5.6.9, v5.6.8, v5.6.7, v5.6.6, v5.6.5, v5.6.4 and 3 more"
        in lines
    )
    assert "  head     not followed (commits: false)" in lines


def test_summary_of_failures_heads_and_libraries_not_followed() -> None:
    failed = lib_entry(checked=False, new=[], errors=["go list -m -versions x: 404 Not Found"])
    commits = {"match": "*", "prereleases": True, "max_new": 3, "commits": True, "git": None,
               "tag_prefix": ""}  # fmt: skip
    refused = lib_entry(library=WS, follow=commits, new=[], head_note="the module proxy does "
                        "not serve the default branch: x@HEAD: 403")  # fmt: skip
    served = lib_entry(
        follow=commits, new=[],
        head={"version": "v5.7.6-0.20261110000000-0123456789ab", "release": None,
              "commit": None, "revision": "0123456789ab", "published": "2026-11-10T00:00:00Z",
              "new": False},
    )  # fmt: skip
    unfollowed = [{"prototype": "reference", "library": "libenet", "transports": ["enet"],
                   "why": "not in follow"}]  # fmt: skip
    text = upstream.summary(doc_of(failed, refused, served, not_followed=unfollowed))
    assert "  error    go list -m -versions x: 404 Not Found" in text
    assert "newest" not in text.split(WS)[0]  # a library not checked shows no versions
    assert (
        "  head     none: the module proxy does not serve the default branch: x@HEAD: 403" in text
    )
    assert (
        "  head     v5.7.6-0.20261110000000-0123456789ab (unreleased, commit 0123456789ab, "
        "2026-11-10), measured before" in text
    )
    assert "with pre-releases" in text
    assert "  new      none: every followed version measured" in text
    assert "reference: libenet (enet) not followed: not in follow" in text


def test_anything_checked() -> None:
    assert upstream.anything_checked(doc_of(lib_entry(), lib_entry(checked=False)))
    assert not upstream.anything_checked(doc_of(lib_entry(checked=False)))
    assert not upstream.anything_checked(doc_of())


def test_prototypes_by_directory_name_or_manifest() -> None:
    found = upstream.prototype_manifests(["reference", "unity/mirror"])
    assert found == {
        "reference": REPO / "prototypes" / "reference" / "prototype.yaml",
        "unity/mirror": REPO / "prototypes" / "unity" / "mirror" / "prototype.yaml",
    }
    by_path = upstream.prototype_manifests([str(found["reference"])])
    assert by_path == {"reference": found["reference"]}
    assert "reference" in upstream.prototype_manifests()


def test_unknown_prototype_names_the_flag_and_the_choices() -> None:
    with pytest.raises(
        ValueError, match=r"--prototype: no prototype 'nope'; expected one of .*reference"
    ):
        upstream.prototype_manifests(["nope"])


def test_libraries_not_followed_say_why() -> None:
    ref = mf.load(REPO / "prototypes" / "reference" / "prototype.yaml")
    assert {
        (i["library"], tuple(i["transports"]), i["why"])
        for i in upstream.not_followed("reference", ref)
    } == {
        ("Go net (standard library)", ("tcp", "udp"), "not in follow"),
        ("libenet (Debian 12 libenet-dev)", ("enet",), "not in follow"),
    }
    mono = mf.load(REPO / "prototypes" / "mono" / "prototype.yaml")
    (item,) = upstream.not_followed("mono", mono)
    assert item["why"].startswith("not a Go module; follow it with follow:")
