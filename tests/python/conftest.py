"""Shared fixtures: a fake prototype binary and the path of the real one."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest
from hypothesis import settings

# make test is a gate: the property tests draw the same examples every run, so a pass or a failure
# is reproducible. Random exploration (which found the float-extreme cases fixed in stats/) runs
# with HYPOTHESIS_PROFILE=explore.
settings.register_profile("gate", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "gate"))

REPO = Path(__file__).resolve().parents[2]
REFERENCE_BINARY = REPO / "prototypes" / "reference" / "bin" / "netstick-ref"
FAKE_PROTOTYPE = Path(__file__).with_name("fake_prototype.py")

needs_reference_binary = pytest.mark.skipif(
    not REFERENCE_BINARY.is_file(),
    reason=f"{REFERENCE_BINARY.relative_to(REPO)} not built (cd prototypes/reference && "
    "go build -o bin/netstick-ref ./cmd/netstick-ref)",
)


@pytest.fixture
def fake_binary(tmp_path: Path) -> Path:
    """An executable that runs tests/python/fake_prototype.py with this interpreter."""
    path = tmp_path / "fake-prototype"
    path.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE_PROTOTYPE}" "$@"\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


# -- a real local SLURM cluster (tests/python/slurm_cluster.py) -------------------------------

from collections.abc import Iterator  # noqa: E402

import slurm_cluster as _slurm  # noqa: E402


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[_slurm.SlurmCluster]:
    """A real SLURM 22.05 cluster on this machine (node1, node2 in partition `netstick`), with
    accounting (MariaDB + slurmdbd, so sacct works as on a real cluster).

    Clients reach it through cluster.env (SLURM_CONF). Skips when not root or when slurm-wlm,
    munge, slurmdbd or mariadb-server are not installed; stopped, with nothing left running, at
    the end of the session.
    """
    reason = _slurm.unavailable_reason(accounting=True)
    if reason is not None:
        pytest.skip(reason)
    with _slurm.SlurmCluster.start(accounting=True) as cluster:
        yield cluster
