"""versions/upstream.json beside a manifest: the library versions a night found upstream and
built, written by `netstick upstream prepare` (workflow/nightly/upstream_builds.py) after
`netstick upstream check`, read here so that the manifest declares them for that night.

A campaign names them with the word `upstream` in a transport's versions (workflow/campaign/
expand.py); their cells are planned, built and measured like any declared version, and the
night's decision words each against its predecessor (stats/history/versions.py). The file is
per machine and per night (not committed); it keeps, per library, what to measure (oldest
first), what did not build with the compiler's message, and each version's exact bytes (go.sum
lines, commit) and publication time for the night's provenance.

    {"schema": 1, "campaign": "nightly", "prepared": "<UTC time>",
     "libraries": {"<library>": {"transports": [...], "pinned": "v1",
                                 "measure": ["v1", "v2", ...],
                                 "not_built": [{"version", "predecessor", "build_error"}],
                                 "resolved": {"v2": {"published", "sum", "go_mod_sum",
                                                     "origin"}}}}}
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

UPSTREAM_LOCK: Final = Path("versions") / "upstream.json"
LOCK_SCHEMA: Final = 1
UPSTREAM: Final = "upstream"  # the word a campaign's versions list uses for them


class UpstreamLockError(ValueError):
    """versions/upstream.json cannot be used; the message names the file and the key."""


@dataclass(frozen=True, slots=True)
class UpstreamLock:
    """What a night prepared for one prototype: per library the versions to measure (oldest
    first, the pinned one included) and the raw document (provenance)."""

    path: Path
    measure: Mapping[str, tuple[str, ...]]
    doc: Mapping[str, Any]

    def versions(self, library: str, pinned: str) -> tuple[str, ...]:
        """The versions of library to measure but the pinned one (a campaign names that one
        `pinned`)."""
        return tuple(v for v in self.measure.get(library, ()) if v != pinned)


def _problem(path: Path, key: str, expected: str) -> UpstreamLockError:
    return UpstreamLockError(f"{path}: key {key}: expected {expected}")


def read_lock(manifest_dir: Path) -> UpstreamLock | None:
    """The prepared upstream versions beside a manifest, None when there is no such file."""
    path = manifest_dir / UPSTREAM_LOCK
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UpstreamLockError(
            f"{path}: not readable JSON ({exc}); run netstick upstream prepare"
        ) from None
    if not isinstance(doc, dict) or doc.get("schema") != LOCK_SCHEMA:
        raise _problem(path, "schema", f"{LOCK_SCHEMA} (run netstick upstream prepare again)")
    libraries = doc.get("libraries")
    if not isinstance(libraries, dict):
        raise _problem(path, "libraries", "an object: library -> what to measure")
    measure: dict[str, tuple[str, ...]] = {}
    for lib, entry in libraries.items():
        versions = entry.get("measure") if isinstance(entry, dict) else None
        if not isinstance(versions, list) or not all(isinstance(v, str) for v in versions):
            raise _problem(path, f"libraries.{lib}.measure", "a list of version strings")
        measure[lib] = tuple(versions)
    return UpstreamLock(path=path, measure=measure, doc=doc)
