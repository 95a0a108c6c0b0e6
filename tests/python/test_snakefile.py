"""The Snakefile parses and plans the build-then-measure DAG (a dry run executes nothing)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SNAKEMAKE = Path(sys.executable).with_name("snakemake")


@pytest.mark.skipif(not SNAKEMAKE.exists(), reason="snakemake is not installed in this venv")
def test_dry_run_plans_build_then_bench(tmp_path: Path) -> None:
    # Plan in a copy, so the dry run's .snakemake/ bookkeeping stays out of the checkout.
    for name in ("Snakefile", "workflow/rules"):
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, tmp_path / name)
        else:
            shutil.copy(src, tmp_path / name)
    ref = tmp_path / "prototypes" / "reference"
    ref.mkdir(parents=True)
    for name in ("go.mod", "go.sum"):
        shutil.copy(REPO / "prototypes" / "reference" / name, ref / name)
    res = subprocess.run(
        [str(SNAKEMAKE), "-n", "--cores", "1", "--forceall"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    plan = res.stdout + res.stderr
    for job in ("build_reference", "bench_prototypes", "all"):
        assert job in plan
