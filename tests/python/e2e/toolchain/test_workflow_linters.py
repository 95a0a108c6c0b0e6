"""actionlint and zizmor (the pinned versions of workflow/tools/install-linters.sh and
requirements.txt) find nothing in the GitHub Actions workflows; `make lint` runs them too."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from support.paths import REPO

WORKFLOWS = REPO / ".github" / "workflows"


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
