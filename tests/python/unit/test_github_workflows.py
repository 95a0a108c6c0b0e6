"""The GitHub Actions workflows: no pull request can reach the self-hosted runner, every action is
pinned by commit SHA, every workflow states its permissions; build-prototypes.yml builds what the
layout expects. (actionlint and zizmor on them: e2e/toolchain/test_workflow_linters.py.)"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from support.paths import REPO

WORKFLOWS = REPO / ".github" / "workflows"
# Triggers that run a workflow for code or events from outside the repository's writers.
PR_TRIGGERS = frozenset({"pull_request", "pull_request_target"})
SHA_PIN = re.compile(r"^[^@\s]+@[0-9a-f]{40}$")
DIGEST_PIN = re.compile(r"^docker://[^@\s]+@sha256:[0-9a-f]{64}$")


def _load(path: Path) -> dict[str, Any]:
    doc = yaml.safe_load(path.read_text())
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), dict):
        raise AssertionError(f"{path}: expected a workflow mapping with a 'jobs' mapping")
    return doc


def triggers(doc: dict[str, Any]) -> set[str]:
    """The event names of a workflow's `on` (YAML 1.1 reads the bare key `on` as True)."""
    on = doc.get("on", doc.get(True))
    if isinstance(on, str):
        return {on}
    if isinstance(on, list):
        return {str(e) for e in on}
    if isinstance(on, dict):
        return {str(e) for e in on}
    raise AssertionError(f"workflow {doc.get('name')!r}: 'on' is missing or of an unknown shape")


def may_be_self_hosted(job: dict[str, Any]) -> bool:
    """Whether a job can land on a self-hosted runner. Runner groups and labels computed by an
    expression cannot be told apart from self-hosted ones here, so they count as self-hosted."""
    runs_on = job.get("runs-on")
    if runs_on is None:
        return False  # a reusable-workflow call: its own jobs are checked where they are defined
    if isinstance(runs_on, dict):
        if "group" in runs_on:
            return True
        runs_on = runs_on.get("labels", [])
    labels = [runs_on] if isinstance(runs_on, str) else list(runs_on)
    return any("self-hosted" in str(label) or "${{" in str(label) for label in labels)


def self_hosted_jobs_reachable_from_prs(path: Path) -> list[str]:
    """Jobs on a self-hosted runner in a workflow that a pull request can start, following calls
    of the repository's own reusable workflows."""
    doc = _load(path)
    if not triggers(doc) & PR_TRIGGERS:
        return []
    found: list[str] = []
    seen: set[Path] = set()

    def visit(p: Path, d: dict[str, Any]) -> None:
        if p in seen:
            return
        seen.add(p)
        for name, job in d["jobs"].items():
            if may_be_self_hosted(job):
                found.append(f"{p.name}:{name}")
            uses = job.get("uses")
            if isinstance(uses, str) and uses.startswith("./"):
                called = REPO / uses.split("@", 1)[0]
                visit(called, _load(called))

    visit(path, doc)
    return found


def unpinned_uses(doc: dict[str, Any]) -> list[str]:
    """Every `uses:` (steps and reusable-workflow calls) not pinned to a full commit SHA, or for
    a container action to an image digest; local `./` actions excepted."""
    refs: list[str] = []
    for job in doc["jobs"].values():
        if isinstance(job.get("uses"), str):
            refs.append(job["uses"])
        refs += [s["uses"] for s in job.get("steps", []) if isinstance(s.get("uses"), str)]
    return [
        r
        for r in refs
        if not r.startswith("./") and not SHA_PIN.match(r) and not DIGEST_PIN.match(r)
    ]


def jobs_without_permissions(doc: dict[str, Any]) -> list[str]:
    if "permissions" in doc:
        return []
    return [name for name, job in doc["jobs"].items() if "permissions" not in job]


def _workflow_files() -> list[Path]:
    return sorted([*WORKFLOWS.glob("*.yml"), *WORKFLOWS.glob("*.yaml")])


def test_ci_and_nightly_exist() -> None:
    names = {p.name for p in _workflow_files()}
    assert {"ci.yml", "nightly.yml", "build-prototypes.yml"} <= names, names


@pytest.mark.parametrize("path", _workflow_files(), ids=lambda p: p.name)
def test_no_self_hosted_job_can_be_started_by_a_pull_request(path: Path) -> None:
    assert self_hosted_jobs_reachable_from_prs(path) == []


@pytest.mark.parametrize("path", _workflow_files(), ids=lambda p: p.name)
def test_every_action_is_pinned_by_commit_sha(path: Path) -> None:
    assert unpinned_uses(_load(path)) == []


@pytest.mark.parametrize("path", _workflow_files(), ids=lambda p: p.name)
def test_every_workflow_states_its_permissions(path: Path) -> None:
    assert jobs_without_permissions(_load(path)) == []


def test_nightly_is_started_by_schedule_and_by_hand_only() -> None:
    doc = _load(WORKFLOWS / "nightly.yml")
    assert triggers(doc) == {"schedule", "workflow_dispatch"}
    assert doc["jobs"]["nightly"]["runs-on"] == ["self-hosted", "linux", "das6"]
    assert doc["concurrency"]["cancel-in-progress"] is False
    # Write access to issues only in the job that runs no project code.
    writers = [n for n, j in doc["jobs"].items() if j["permissions"].get("issues") == "write"]
    assert writers == ["regression-issue"]
    assert all("run" not in s for s in doc["jobs"]["regression-issue"]["steps"][:-1])


def test_only_the_archive_job_writes_contents_and_it_runs_the_archive_script_alone() -> None:
    doc = _load(WORKFLOWS / "nightly.yml")
    writers = [n for n, j in doc["jobs"].items() if j["permissions"].get("contents") == "write"]
    assert writers == ["archive"]
    job = doc["jobs"]["archive"]
    assert not str(job["runs-on"]).startswith("self-hosted") and job["needs"] == "nightly"
    [checkout] = [s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/checkout")]
    # Only the standard-library script is checked out: no other project code can run there.
    assert checkout["with"]["sparse-checkout"].split() == ["workflow/nightly/archive.py"]
    runs = [s["run"] for s in job["steps"] if "run" in s]
    assert len(runs) == 1 and "python3 code/workflow/nightly/archive.py push" in runs[0]
    assert "--remote" in runs[0] and "GH_TOKEN" not in runs[0].split("base64")[1]
    # The self-hosted night restores the history from that branch before it measures.
    steps = doc["jobs"]["nightly"]["steps"]
    pull = next(i for i, s in enumerate(steps) if "history pull" in str(s.get("run", "")))
    campaign = next(i for i, s in enumerate(steps) if "campaign=nightly" in str(s.get("run", "")))
    assert pull < campaign
    # The history artifact is uploaded even when a later step of the night failed.
    upload = next(s for s in steps if s.get("with", {}).get("name") == "nightly-history")
    assert upload["if"] == "always()"


def test_nightly_discovers_builds_decides_bisects_and_publishes_in_order() -> None:
    steps = _load(WORKFLOWS / "nightly.yml")["jobs"]["nightly"]["steps"]
    runs = [str(s.get("run", "")) for s in steps]

    def at(text: str) -> int:
        found = [i for i, r in enumerate(runs) if text in r]
        assert found, f"no step runs {text!r}"
        return found[0]

    order = [
        at("history pull"), at("upstream check"), at("upstream prepare"),
        at("campaign=nightly"), at(" confirm --config"), at("GITHUB_OUTPUT"),
        at("history bisect"), at("history site"),
    ]  # fmt: skip
    assert order == sorted(order)
    bisect = steps[at("history bisect")]
    # Only when a version was confirmed slower, on a node of its own.
    assert bisect["if"] == "steps.verdict.outputs.versions != '0'"
    assert bisect["run"].startswith("srun ")
    # The trend site goes out with the report (the Pages artifact's directory).
    pages = next(s for s in steps if "upload-pages-artifact" in str(s.get("uses", "")))
    assert "report/_output/nightly/trends" in runs[at("history site")]
    assert pages["with"]["path"].rstrip("/") == "report/_output/nightly"


def test_every_checkout_drops_its_credentials() -> None:
    for path in _workflow_files():
        for name, job in _load(path)["jobs"].items():
            for step in job.get("steps", []):
                if str(step.get("uses", "")).startswith("actions/checkout@"):
                    assert step.get("with", {}).get("persist-credentials") is False, (
                        f"{path.name}:{name}"
                    )


# The checkers themselves, on workflows that break each rule: the rules must be able to fail.
BAD_PR_SELF_HOSTED = """
on: [push, pull_request_target]
permissions: {}
jobs:
  a: {runs-on: [self-hosted, linux, das6], steps: [{run: "true"}]}
  b: {runs-on: {group: big}, steps: [{run: "true"}]}
  c: {runs-on: "${{ inputs.runner }}", steps: [{run: "true"}]}
  d: {runs-on: ubuntu-24.04, steps: [{run: "true"}]}
"""


def test_checker_finds_self_hosted_jobs_reachable_from_prs(tmp_path: Path) -> None:
    path = tmp_path / "bad.yml"
    path.write_text(BAD_PR_SELF_HOSTED)
    assert self_hosted_jobs_reachable_from_prs(path) == ["bad.yml:a", "bad.yml:b", "bad.yml:c"]
    path.write_text(BAD_PR_SELF_HOSTED.replace("[push, pull_request_target]", "schedule"))
    assert self_hosted_jobs_reachable_from_prs(path) == []


def test_checker_finds_unpinned_actions_and_missing_permissions() -> None:
    doc = yaml.safe_load(
        """
on: push
jobs:
  a:
    runs-on: ubuntu-24.04
    permissions: {contents: read}
    steps:
      - uses: actions/checkout@v4
      - uses: actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1
      - uses: ./.github/actions/local
      - uses: docker://debian:12
  b:
    uses: octo/repo/.github/workflows/x.yml@main
"""
    )
    assert unpinned_uses(doc) == [
        "actions/checkout@v4",
        "docker://debian:12",
        "octo/repo/.github/workflows/x.yml@main",
    ]
    assert jobs_without_permissions(doc) == ["b"]


# -- build-prototypes.yml: the Unity players, built by GameCI -------------------------------

UNITY = REPO / "prototypes" / "unity"
FETCH_SCRIPT = REPO / "workflow" / "tools" / "fetch-unity-builds.sh"
# game-ci/unity-builder v4.8.1 (its tag's commit).
UNITY_BUILDER = "game-ci/unity-builder@1d4ee0697f193f54668e98961d79907911f4b4f2"
LICENCE_SECRETS = ("UNITY_LICENSE", "UNITY_EMAIL", "UNITY_PASSWORD")


def _build_workflow() -> dict[str, Any]:
    return _load(WORKFLOWS / "build-prototypes.yml")


def _combinations(matrix: dict[str, Any]) -> list[dict[str, Any]]:
    """The jobs of a matrix as GitHub expands it: the product of its lists without `exclude`,
    then each `include` entry added to every combination it does not contradict."""
    axes = {k: v for k, v in matrix.items() if k not in ("include", "exclude")}
    combos: list[dict[str, Any]] = [{}]
    for key, values in axes.items():
        combos = [{**c, key: v} for c in combos for v in values]
    for ex in matrix.get("exclude", []):
        combos = [c for c in combos if any(c.get(k) != v for k, v in ex.items())]
    originals = [dict(c) for c in combos]
    for inc in matrix.get("include", []):
        matched = False
        for c, orig in zip(combos, originals, strict=True):
            if all(orig.get(k, v) == v for k, v in inc.items() if k in axes):
                c.update(inc)
                matched = True
        assert matched, f"include {inc} matches no combination (it would add a job)"
    return combos


def _render(template: str, values: dict[str, Any]) -> str:
    return re.sub(r"\$\{\{\s*matrix\.([\w-]+)\s*\}\}", lambda m: str(values[m.group(1)]), template)


def _existing_tracks() -> set[tuple[str, str]]:
    return {
        (d.parent.parent.name, d.name)
        for d in UNITY.glob("*/tracks/*")
        if (d / "ProjectSettings" / "ProjectVersion.txt").is_file()
    }


def _step(job: dict[str, Any], uses_prefix: str) -> list[dict[str, Any]]:
    return [s for s in job["steps"] if str(s.get("uses", "")).startswith(uses_prefix)]


def test_build_prototypes_triggers_and_permissions() -> None:
    doc = _build_workflow()
    assert triggers(doc) == {"push", "workflow_dispatch"}  # never a pull request
    on = doc.get("on", doc.get(True))
    assert on["push"]["branches"] == ["main"]
    assert set(on["push"]["paths"]) == {
        "prototypes/unity/**",
        ".github/workflows/build-prototypes.yml",
    }
    assert doc["permissions"] == {}
    assert doc["concurrency"]["group"].startswith("build-prototypes-")
    for name, job in doc["jobs"].items():
        assert job["permissions"] == {"contents": "read"}, name
        assert not may_be_self_hosted(job), name  # GitHub-hosted: the licence stays off DAS-6


def test_build_prototypes_actions_are_the_pinned_ones() -> None:
    """unity-builder at v4.8.1's commit, and every action another workflow uses at the same SHA."""
    doc = _build_workflow()
    [builder] = _step(doc["jobs"]["build"], "game-ci/unity-builder@")
    assert builder["uses"] == UNITY_BUILDER
    pinned: dict[str, set[str]] = {}
    for path in _workflow_files():
        for job in _load(path)["jobs"].values():
            for step in job.get("steps", []):
                if "uses" in step:
                    action, sha = str(step["uses"]).split("@", 1)
                    pinned.setdefault(action, set()).add(sha)
    assert {a: s for a, s in pinned.items() if len(s) > 1} == {}


def test_build_matrix_names_the_existing_projects_and_tracks() -> None:
    doc = _build_workflow()
    build = _combinations(doc["jobs"]["build"]["strategy"]["matrix"])
    assert _existing_tracks(), "no prototypes/unity/<lib>/tracks/<track>/"
    assert {(c["lib"], c["track"]) for c in build} == _existing_tracks()
    assert {c["role"] for c in build} == {"server", "client"}
    for c in build:
        assert (UNITY / c["lib"] / "tracks" / c["track"] / "Packages" / "manifest.json").is_file()
        assert c["method"] == f"Netstick.Editor.Build.{c['role'].capitalize()}"
        assert c["subtarget"] == (
            "-standaloneBuildSubtarget Server" if c["role"] == "server" else ""
        )
        assert ("mirror-tag" in c) == (c["lib"] == "mirror")
    smoke = _combinations(doc["jobs"]["smoke"]["strategy"]["matrix"])
    assert {(c["lib"], c["track"]) for c in smoke} == _existing_tracks()


def test_build_steps_follow_the_layout() -> None:
    job = _build_workflow()["jobs"]["build"]
    [builder] = _step(job, "game-ci/unity-builder@")
    w = builder["with"]
    assert w["projectPath"] == "prototypes/unity/${{ matrix.lib }}"
    assert w["targetPlatform"] == "StandaloneLinux64"
    assert w["buildName"] == "netstick-${{ matrix.lib }}"
    assert w["buildMethod"] == "${{ matrix.method }}"
    assert w["customParameters"] == "${{ matrix.subtarget }}"
    assert w["versioning"] == "None"
    # The licence as the step's environment, from the repository's secrets.
    assert builder["env"] == {s: f"${{{{ secrets.{s} }}}}" for s in LICENCE_SECRETS}
    steps = job["steps"]
    assert steps.index(builder) > max(
        i for i, s in enumerate(steps) if "tracks/$TRACK/Packages" in str(s.get("run", ""))
    )
    [cache] = _step(job, "actions/cache@")
    assert cache["with"]["path"] == "prototypes/unity/${{ matrix.lib }}/Library"
    key = cache["with"]["key"]
    assert "tracks/{1}/Packages/**" in key and "prototypes/unity/{0}/Assets/**" in key
    assert steps.index(cache) < steps.index(builder)
    mirror = [s for s in _step(job, "actions/checkout@") if "repository" in s.get("with", {})]
    assert [s["with"]["repository"] for s in mirror] == ["MirrorNetworking/Mirror"]
    assert mirror[0]["with"]["ref"] == "${{ matrix.mirror-tag }}"
    uploads = {s["with"]["name"]: s for s in _step(job, "actions/upload-artifact@")}
    player = uploads["netstick-${{ matrix.lib }}-${{ matrix.track }}-${{ matrix.role }}"]
    assert player["with"]["path"].startswith(w["buildsPath"])
    assert player["with"]["if-no-files-found"] == "error"
    lock = uploads["packages-lock-${{ matrix.lib }}-${{ matrix.track }}"]
    assert lock["if"] == "matrix.role == 'server'"  # one per (lib, track)
    assert lock["with"]["path"].endswith("/Packages/packages-lock.json")


def test_artifact_names_match_the_fetch_script_and_the_layout() -> None:
    doc = _build_workflow()
    job = doc["jobs"]["build"]
    [upload] = [
        s
        for s in _step(job, "actions/upload-artifact@")
        if s["with"]["name"].startswith("netstick-")
    ]
    script = FETCH_SCRIPT.read_text()
    accepted = re.search(r"\[\[ ! \$name =~ (\S+) \]\]", script)
    assert accepted is not None
    assert "--pattern 'netstick-*'" in script
    for combo in _combinations(job["strategy"]["matrix"]):
        name = _render(upload["with"]["name"], combo)
        m = re.fullmatch(accepted.group(1), name)
        assert m is not None, name
        assert m.groups() == (combo["lib"], combo["track"], combo["role"])
    # The smoke job downloads exactly the two players of its (lib, track).
    smoke = doc["jobs"]["smoke"]
    names = [s["with"]["name"] for s in _step(smoke, "actions/download-artifact@")]
    assert names == [
        "netstick-${{ matrix.lib }}-${{ matrix.track }}-server",
        "netstick-${{ matrix.lib }}-${{ matrix.track }}-client",
    ]


def test_smoke_runs_a_cell_and_checks_its_logs() -> None:
    smoke = _build_workflow()["jobs"]["smoke"]
    runs = [str(s.get("run", "")) for s in smoke["steps"]]
    assert any("fetch-unity-builds.sh --from .unity-builds" in r for r in runs)
    assert any('"players": 2' in r and '"duration_s": 10' in r for r in runs)
    [run_cell] = [r for r in runs if "netstick run-cell" in r]
    [check] = [r for r in runs if "netstick check-logs" in r]
    assert runs.index(run_cell) < runs.index(check)
    assert '--manifest "prototypes/unity/$LIB/prototype.yaml"' in check
    assert "smoke/run/logs" in check


def test_check_job_runs_check_unity_when_there_is_one() -> None:
    check = _build_workflow()["jobs"]["check"]
    runs = "\n".join(str(s.get("run", "")) for s in check["steps"])
    assert "workflow/setup.sh --for run" in runs
    assert ".venv/bin/netstick check-unity" in runs
    assert "make" not in runs.split()


def test_mirror_tags_are_the_manifest_versions() -> None:
    """The Mirror source each track builds with is the version its manifest declares."""
    manifest = UNITY / "mirror" / "prototype.yaml"
    if not manifest.is_file():
        pytest.skip("prototypes/unity/mirror/prototype.yaml not in this checkout")
    from prototypes.contract import manifest as manifests

    man = manifests.load(manifest)
    combos = _combinations(_build_workflow()["jobs"]["build"]["strategy"]["matrix"])
    tags = {c["track"]: c["mirror-tag"] for c in combos if c["lib"] == "mirror"}
    mirror = [t for t in man.transports if "mirror" in t.library.lower()]
    assert mirror, "no transport of the Mirror manifest names the mirror library"
    assert tags["current"] == f"v{mirror[0].version}"
    if "thesis" in tags:
        assert man.library_builds is not None
        assert tags["thesis"] == f"v{man.library_builds.libraries[mirror[0].library][0]}"


def test_nightly_unpacks_unity_builds_into_the_layout() -> None:
    doc = _load(WORKFLOWS / "nightly.yml")
    on = doc.get("on", doc.get(True))
    inputs = on["workflow_dispatch"]["inputs"]
    assert inputs["unity-builds-pattern"]["default"] == "netstick-*"
    steps = doc["jobs"]["nightly"]["steps"]
    [download] = [s for s in steps if "unity-builds-run-id" in str(s.get("with", {}))]
    assert download["with"]["run-id"] == "${{ inputs.unity-builds-run-id }}"
    path = download["with"]["path"]
    [unpack] = [s for s in steps if "fetch-unity-builds.sh" in str(s.get("run", ""))]
    assert f"workflow/tools/fetch-unity-builds.sh --from {path}" in unpack["run"]
    assert unpack["if"] == download["if"]
    campaign = next(i for i, s in enumerate(steps) if "campaign=nightly" in str(s.get("run", "")))
    assert steps.index(unpack) < campaign


def test_build_methods_exist_in_every_project() -> None:
    """The buildMethod of each job is a public static method of the build method every project
    gets from the local package com.netstick.unity (prototypes/unity/Netstick.Unity/Editor/Build.cs,
    namespace Netstick.Editor, class Build), which the project's track manifest names."""
    combos = _combinations(_build_workflow()["jobs"]["build"]["strategy"]["matrix"])
    for c in combos:
        source = UNITY / "Netstick.Unity" / "Editor" / "Build.cs"
        assert source.is_file(), source
        manifest = UNITY / c["lib"] / "tracks" / c["track"] / "Packages" / "manifest.json"
        assert "com.netstick.unity" in json.loads(manifest.read_text())["dependencies"], manifest
        text = source.read_text()
        namespace, cls, method = c["method"].rsplit(".", 2)
        assert f"namespace {namespace}" in text, source
        assert re.search(rf"\bstatic class {cls}\b", text), source
        assert re.search(rf"public static void {method}\(\)", text), (source, method)
