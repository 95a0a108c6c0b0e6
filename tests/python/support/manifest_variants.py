"""The reference manifest with one change, loaded from a copy: how the manifest tests (unit/
test_manifest.py, unit/test_upstream_follow.py) make a manifest that breaks one rule."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from prototypes.contract import manifest as mf

from support.paths import REFERENCE_MANIFEST

Doc = dict[str, Any]


def reference_doc() -> Doc:
    doc: Doc = yaml.safe_load(REFERENCE_MANIFEST.read_text())
    return doc


def load_variant(tmp_path: Path, change: Callable[[Doc], None]) -> mf.Manifest:
    """The reference manifest with one change, written under tmp_path and loaded."""
    doc = copy.deepcopy(reference_doc())
    change(doc)
    path = tmp_path / "prototype.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return mf.load(path)
