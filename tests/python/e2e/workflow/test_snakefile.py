"""The workflow parses and plans: build, runs, table, report (a dry run executes nothing)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from workflow.bench import scratch
from workflow.campaign import expand as campaigns

from support.marks import needs_snakemake
from support.paths import FAKE_MANIFEST

pytestmark = needs_snakemake


def dry_run(tmp_path: Path, *config: str) -> subprocess.CompletedProcess[str]:
    # Snakemake's bookkeeping (.snakemake/) goes under tmp_path, never into the checkout.
    return scratch.run(tmp_path, None, "-n", config=config, timeout_s=120)


def test_default_dry_run_plans_the_quick_campaign(tmp_path: Path) -> None:
    res = dry_run(tmp_path)
    assert res.returncode == 0, res.stderr
    out = res.stdout + res.stderr
    n = len(campaigns.plan("quick").runs)
    for job, count in (
        ("run", n),
        ("plan", 1),
        ("ingest", 1),
        ("figure_data", 1),
        ("artifact", 1),
        ("render_report", 1),
        ("crate", 1),
    ):
        assert any(line.split() == [job, str(count)] for line in out.splitlines()), (job, out)


@pytest.mark.perf
def test_the_largest_campaign_dry_runs_within_10_s(tmp_path: Path) -> None:
    # browser-channels has the most runs of the shipped campaigns: the workflow plans it (every
    # campaign plans in-process in unit/test_campaign.py) and Snakemake builds its DAG in 10 s.
    t0 = time.monotonic()
    res = dry_run(tmp_path, "campaign=browser-channels")
    took = time.monotonic() - t0
    assert res.returncode == 0, res.stderr[-3000:]
    assert took < 10, f"browser-channels: dry run took {took:.1f} s"


def test_bad_config_names_the_key(tmp_path: Path) -> None:
    res = dry_run(tmp_path, "retries=-1")
    assert res.returncode != 0
    assert "retries" in res.stdout + res.stderr


def test_unknown_campaign_is_an_error_naming_the_choices(tmp_path: Path) -> None:
    res = dry_run(tmp_path, "campaign=nope")
    assert res.returncode != 0
    out = res.stdout + res.stderr
    assert "workflow/campaigns/nope.yaml" in out and "quick" in out


@pytest.mark.parametrize(("typed", "refused"), [("true", True), ("yes", True), ("false", False)])
def test_require_all_takes_booleans_as_users_type_them(
    tmp_path: Path, typed: str, refused: bool
) -> None:
    # net-celerity names Unity prototypes that cannot run here.
    res = dry_run(tmp_path, "campaign=net-celerity", f"require_all={typed}")
    out = res.stdout + res.stderr
    assert (res.returncode != 0) == refused, out[-3000:]
    assert ("require_all: every prototype must run" in out) == refused
    assert "is not of type 'boolean'" not in out


def test_require_all_refuses_other_words_naming_the_key(tmp_path: Path) -> None:
    res = dry_run(tmp_path, "require_all=maybe")
    assert res.returncode != 0
    assert "require_all" in res.stdout + res.stderr


def test_a_prototype_with_a_build_command_is_built_before_its_runs(tmp_path: Path) -> None:
    manifest = tmp_path / "proto" / "prototype.yaml"
    manifest.parent.mkdir()
    manifest.write_text(
        FAKE_MANIFEST.read_text().replace(
            "executable: fake_prototype.py", "executable: bin/fake.py"
        )
        + "build:\n  command: [sh, -c, 'mkdir -p bin && touch bin/fake.py']\n"
    )
    campaign = tmp_path / "c.yaml"
    campaign.write_text(
        "name: c\ndescription: x\nseed: 1\nrepetitions: 2\ndefaults: {duration_s: 1}\n"
        "matrix:\n  - name: b\n"
        f"    prototypes: [{{name: fake, manifest: {manifest}, transports: [tcp]}}]\n"
        "    players: [2]\n    workloads: [{name: idle}]\n"
    )
    res = dry_run(tmp_path, f"campaign={campaign}")
    assert res.returncode == 0, res.stderr[-3000:]
    counts = {tuple(line.split()) for line in (res.stdout + res.stderr).splitlines()}
    assert ("build_prototype_0_fake", "1") in counts and ("run", "2") in counts
    # Without the build command the plan is refused, naming the manifest's key.
    manifest.write_text(manifest.read_text().split("build:")[0])
    res = dry_run(tmp_path, f"campaign={campaign}")
    assert res.returncode != 0
    out = res.stdout + res.stderr
    assert "key executable: " in out and "has no build.command" in out
