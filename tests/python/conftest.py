"""The test tiers, marked by directory, and the fixtures every tier may use.

    unit/            in-process tests (`make test-fast` runs these)
    e2e/run/         real prototypes, processes, network namespaces, the emulator   -> e2e
    e2e/workflow/    Snakemake                                                      -> e2e
    e2e/slurm/       the real SLURM cluster the tests start                         -> slurm
    e2e/render/      R, rmarkdown and pandoc, or a headless browser                 -> render
    e2e/toolchain/   mono, Nix, Go builds, setup as another user, external tools    -> toolchain

A test that asserts a time budget is marked perf where it is written, and the one test of
e2e/run that also renders (the provenance report) is marked render as well. Shared code is in
support/ (imported, never collected); this file holds fixtures and the tier hook only.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

from support.raw_campaign import RawCampaign

# make test is a gate: the property tests draw the same examples every run, so a pass or a failure
# is reproducible. Random exploration (which found the float-extreme cases fixed in stats/) runs
# with HYPOTHESIS_PROFILE=explore.
settings.register_profile("gate", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "gate"))

HERE = Path(__file__).parent
TIERS = {
    ("unit",): None,
    ("e2e", "run"): "e2e",
    ("e2e", "workflow"): "e2e",
    ("e2e", "slurm"): "slurm",
    ("e2e", "render"): "render",
    ("e2e", "toolchain"): "toolchain",
}


def _tier(path: Path) -> tuple[str, ...] | None:
    parts = path.relative_to(HERE).parts
    return next((t for t in TIERS if parts[: len(t)] == t), None)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test with its directory's tier; a test outside the tiers is an error."""
    misplaced = set()
    for item in items:
        if not item.path.is_relative_to(HERE):
            continue
        tier = _tier(item.path)
        if tier is None:
            misplaced.add(str(item.path.relative_to(HERE)))
        elif (mark := TIERS[tier]) is not None:
            item.add_marker(mark)
    if misplaced:
        raise pytest.UsageError(
            f"tests outside tests/python/unit and tests/python/e2e/<tier>: {sorted(misplaced)}"
        )


@pytest.fixture
def raw_campaign(tmp_path: Path) -> RawCampaign:
    """An empty raw campaign `t` under tmp_path/raw, written through workflow.layout."""
    return RawCampaign(tmp_path / "raw", "t")
