"""The run tier: every test ends with nothing of it left running (support/leftovers.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from workflow.harness import netns

from support import leftovers


@pytest.fixture(autouse=True)
def nothing_left_behind(tmp_path: Path) -> Iterator[None]:
    """No process the test started still runs, none names its directory, and no sandbox it
    opened remains (namespaces and veths), however the test ended."""
    before = netns.leftovers()
    yield
    left = leftovers.left_behind(tmp_path, before)
    assert left == [], f"left behind: {left}"
