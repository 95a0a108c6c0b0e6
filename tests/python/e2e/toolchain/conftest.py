"""Fixtures of the toolchain tier shared by several files."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def module_cache_proxy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Go commands that read this machine's module cache as their proxy (no network) after a
    proxy directory of the test's own, into a module cache of the test's own."""
    cache = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True).stdout
    download = Path(cache.strip()) / "cache" / "download"
    if not (download / "github.com" / "coder" / "websocket" / "@v" / "v1.8.12.zip").is_file():
        pytest.skip("the reference's modules are not in the module cache (make build, make test)")
    own = tmp_path / "proxy"
    monkeypatch.setenv("GOPROXY", f"file://{own},file://{download}")
    monkeypatch.setenv("GOSUMDB", "off")
    monkeypatch.setenv("GOMODCACHE", str(tmp_path / "modcache"))
    monkeypatch.setenv("GOFLAGS", "-modcacherw")
    yield own
    subprocess.run(["go", "clean", "-modcache"], check=False, capture_output=True)
