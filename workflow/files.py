"""File helpers every stage shares: the repository root, atomic writes, JSON in and out.

A leaf module: it imports nothing of Netstick, so any stage may use it without pulling in
another stage. Every file a stage publishes goes through replace_atomically, so a reader (or a
resumed campaign) sees the old file or the new one, never half of one.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

# The checkout this package runs from (an editable install keeps it in place).
REPO = Path(__file__).resolve().parents[1]


def replace_atomically(path: Path, write: Callable[[Path], object]) -> Path:
    """Call write(tmp) on a temporary file beside path, then rename it over path. A failed
    write leaves no temporary file behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def write_text(path: Path, text: str) -> Path:
    return replace_atomically(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_json(path: Path, doc: Any, *, sort_keys: bool = True, strict: bool = False) -> Path:
    """Write doc as indented JSON atomically. strict refuses NaN and infinities (a table of
    statistics must say null, not NaN) and objects JSON cannot hold; otherwise they are
    written as str()."""
    text = json.dumps(
        doc,
        indent=2,
        sort_keys=sort_keys,
        ensure_ascii=False,
        allow_nan=not strict,
        default=None if strict else str,
    )
    return write_text(path, text + "\n")


def read_json(path: Path) -> dict[str, Any] | None:
    """A JSON object from path, or None when the file is missing, unreadable or not an
    object: callers treat an absent record and a damaged one alike."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return doc if isinstance(doc, dict) else None


def sha256_of(path: Path) -> str:
    """Hex SHA-256 of a file's bytes, read in 1 MiB blocks (raw logs can be large)."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def repo_relative(value: Any, repo: Path = REPO) -> Any:
    """Paths inside the repository written relative to it, recursively (inside command lines
    too): results are committed and must not carry the layout of the machine that measured
    them."""
    prefix = f"{repo.resolve()}/"
    if isinstance(value, str):
        return value.replace(prefix, "")
    if isinstance(value, dict):
        return {k: repo_relative(v, repo) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [repo_relative(v, repo) for v in value]
    return value


def shown_path(path: Path, repo: Path | None = None) -> str:
    """A path as messages and records show it: relative to the repository (REPO when repo is
    None, looked up when called) when inside it."""
    try:
        return str(path.resolve().relative_to((repo or REPO).resolve()))
    except ValueError:
        return str(path)
