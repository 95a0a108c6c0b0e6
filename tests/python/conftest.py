"""Shared fixtures: a fake prototype binary and the path of the real one."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest

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
