"""The GitHub Actions workflows: no pull request can reach the self-hosted runner, every action is
pinned by commit SHA, every workflow states its permissions, and actionlint and zizmor (the
pinned versions of workflow/tools/install-linters.sh and requirements.txt) find nothing."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from workflow.files import REPO

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
    assert {"ci.yml", "nightly.yml"} <= names, names


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


def _tool(name: str, path: Path) -> str:
    if path.is_file():
        return str(path)
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} not installed: workflow/tools/install-linters.sh, requirements.txt")
    return found


def test_actionlint_finds_nothing() -> None:
    actionlint = _tool("actionlint", REPO / ".tools" / "bin" / "actionlint")
    proc = subprocess.run(
        [actionlint, "-no-color"], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_zizmor_finds_nothing() -> None:
    zizmor = _tool("zizmor", REPO / ".venv" / "bin" / "zizmor")
    proc = subprocess.run(
        [zizmor, "--offline", "--no-progress", "--color=never", str(WORKFLOWS)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
