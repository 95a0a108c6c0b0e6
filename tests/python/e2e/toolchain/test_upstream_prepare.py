"""`netstick upstream prepare` and a campaign's `upstream` versions, with the real Go toolchain:
tonight's new versions of a library are generated, built and declared beside a copy of the
reference prototype (versions/upstream.json); one that does not build is listed with the
compiler's message and left out of the night, and a campaign naming `upstream` plans a cell for
each version that built. No network: the modules come from this machine's module cache."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from prototypes.contract import manifest as manifests
from prototypes.contract.upstream_lock import UPSTREAM_LOCK
from workflow.campaign import expand
from workflow.harness.prototype_record import prototype_record
from workflow.nightly.upstream_builds import prepare

from support import go_proxy
from support.marks import needs_go
from support.paths import REFERENCE_MANIFEST

pytestmark = needs_go

WS = "github.com/coder/websocket"
EMPTY = "v0.0.0-20000101000000-000000000000"  # a module with no declarations at all


def reference_copy(root: Path) -> Path:
    """The reference prototype's sources, module files and manifest under root (no binaries):
    prepare writes beside the manifest, never into the checkout."""
    src = REFERENCE_MANIFEST.parent
    dst = root / "reference"
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("bin", "*.test"))
    return dst / "prototype.yaml"


def check_doc(manifest: Path) -> dict[str, Any]:
    """What `netstick upstream check` found tonight: v1.8.12 and a version without the API."""
    return {
        "schema": 1, "campaign": "nightly", "checked_at": "2026-11-26T02:00:00+00:00",
        "goproxy": "file://", "prototypes": {"reference": str(manifest)},
        "libraries": [
            {"prototype": "reference", "library": WS, "source": "go", "transports": ["ws"],
             "pinned": "v1.8.15", "follow": {"max_new": 3}, "head": None,
             "new": [{"version": "v1.8.12", "predecessor": None,
                      "published": "2024-04-07T00:00:00Z", "sum": "h1:x", "go_mod_sum": "h1:y",
                      "go_sum": [], "origin": None, "commit": None},
                     {"version": EMPTY, "predecessor": None, "published": None}]},
        ],
    }  # fmt: skip


def test_new_versions_are_built_declared_and_planned(
    module_cache_proxy: Path, tmp_path: Path
) -> None:
    go_proxy.add_version(module_cache_proxy, WS, EMPTY, "2000-01-01T00:00:00Z", listed=False)
    manifest = reference_copy(tmp_path)
    lock = prepare(check_doc(manifest), "reference")
    entry = lock["libraries"][WS]
    assert entry["measure"] == ["v1.8.12", "v1.8.15"]  # oldest first, the pinned one included
    [broken] = entry["not_built"]
    assert broken["version"] == EMPTY and "does not build" in broken["build_error"]
    assert "undefined: websocket." in broken["build_error"]
    assert entry["resolved"]["v1.8.12"]["published"] == "2024-04-07T00:00:00Z"
    saved = json.loads((manifest.parent / UPSTREAM_LOCK).read_text())
    assert saved == lock
    # Built where library_builds puts it, so the night's build rule finds it up to date.
    man = manifests.load(manifest)
    vb = man.version_build("ws", "v1.8.12")
    assert vb is not None and vb.executable.is_file() and not vb.stale()
    assert man.upstream_versions("ws") == ("v1.8.12",)
    # What a run of it records: the version's exact bytes and publication, as prepared.
    record = prototype_record(man.for_version("ws", "v1.8.12"), tmp_path, [])
    upstream = record["library_build"]["upstream"]
    assert (upstream["published"], upstream["sum"]) == ("2024-04-07T00:00:00Z", "h1:x")
    assert EMPTY not in man.declared_versions("ws")
    # A campaign that names `upstream` measures every version that built, beside pinned.
    night = {
        "name": "night", "description": "upstream versions", "source": "a test", "seed": 1,
        "repetitions": 1, "defaults": {"duration_s": 2, "network_profile": "lan"},
        "matrix": [{"name": "versions",
                    "prototypes": [{"name": "reference", "manifest": str(manifest),
                                    "transports": ["ws"],
                                    "versions": {"ws": ["pinned", "upstream"]}}],
                    "players": [2], "workloads": [{"name": "idle"}]}],
    }  # fmt: skip
    campaign = tmp_path / "night.yaml"
    campaign.write_text(yaml.safe_dump(night))
    plan = expand.plan(campaign)
    assert sorted(r.cell["library_version"] for r in plan.runs) == ["pinned", "v1.8.12"]


def test_without_a_prepared_night_upstream_stands_for_nothing(tmp_path: Path) -> None:
    manifest = reference_copy(tmp_path)
    assert manifests.load(manifest).upstream_versions("ws") == ()
    (manifest.parent / UPSTREAM_LOCK).write_text('{"schema": 1, "libraries": {"x": {}}}')
    with pytest.raises(manifests.ManifestError, match=r"versions/upstream\.json: key libraries\.x"):
        manifests.load(manifest)
