"""Paths every tier uses: the checkout, the binaries `make build` writes, the tools in the
venv, and the test doubles beside this file."""

from __future__ import annotations

import sys
from pathlib import Path

SUPPORT = Path(__file__).resolve().parent
REPO = SUPPORT.parents[2]
TEST_DATA = SUPPORT.parent / "data"

REFERENCE_MANIFEST = REPO / "prototypes" / "reference" / "prototype.yaml"
REFERENCE_BINARY = REPO / "prototypes" / "reference" / "bin" / "netstick-ref"
NETEMU = REPO / "workflow" / "harness" / "netemu" / "bin" / "netemu"

# The venv's own commands, beside the interpreter that runs the tests.
SNAKEMAKE = Path(sys.executable).with_name("snakemake")
NETSTICK = Path(sys.executable).with_name("netstick")

# The Python stand-in prototype (fake_prototype.py) and its manifest.
FAKE_PROTOTYPE = SUPPORT / "fake_prototype.py"
FAKE_MANIFEST = SUPPORT / "fake-prototype.yaml"
