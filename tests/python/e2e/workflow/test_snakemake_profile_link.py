"""`snakemake --profile das6` works from the repository root after setup: setup links the
profile into $XDG_CONFIG_HOME/snakemake, where Snakemake looks a profile name up."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from workflow.bench import scratch

from support.marks import needs_snakemake
from support.paths import REPO


@needs_snakemake
def test_setup_links_das6_and_snakemake_finds_it(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    setup = subprocess.run(
        ["bash", "workflow/setup.sh"], cwd=REPO, env=env, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert setup.returncode == 0, setup.stderr
    link = tmp_path / "xdg" / "snakemake" / "das6"
    assert link.is_symlink() and link.resolve() == REPO / "profiles" / "das6"
    dry = scratch.run(tmp_path, None, "-n", "--profile", "das6", env=env, timeout_s=120)
    out = dry.stdout + dry.stderr
    assert dry.returncode == 0, out[-3000:]
    assert str(link) in out or str(link.resolve()) in out  # "Using profiles ..."
    # the das6 resources reach the run jobs: exclusive nodes, server + client node
    assert "nodes=2" in out and "slurm_extra=--exclusive" in out and "slurm_partition=defq" in out
    # a second setup leaves the link alone
    again = subprocess.run(
        ["bash", "workflow/setup.sh"], cwd=REPO, env=env, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert again.returncode == 0 and "profile das6" not in again.stderr
