"""Skip marks: a test that needs something this machine may lack says so by name.

needs_sandbox is computed on first use (PEP 562 __getattr__): finding out whether network
namespaces work creates one, which the unit tier, importing this module too, must not pay for.
"""

from __future__ import annotations

import functools
import os
import shutil

import pytest

from support.paths import NETEMU, REFERENCE_BINARY, REPO, SNAKEMAKE

needs_reference_binary = pytest.mark.skipif(
    not REFERENCE_BINARY.is_file(),
    reason=f"{REFERENCE_BINARY.relative_to(REPO)} not built (make build)",
)
needs_netemu = pytest.mark.skipif(
    not NETEMU.is_file(), reason=f"{NETEMU.relative_to(REPO)} not built (make build)"
)
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")
needs_snakemake = pytest.mark.skipif(not SNAKEMAKE.exists(), reason="snakemake is not in this venv")
needs_r = pytest.mark.skipif(shutil.which("Rscript") is None, reason="R is not installed")
needs_go = pytest.mark.skipif(shutil.which("go") is None, reason="no go command on PATH")
# The browser the site tests drive (Debian's chromium; workflow/setup.sh installs it for tests).
CHROMIUM = "/usr/bin/chromium"
needs_chromium = pytest.mark.skipif(
    not os.access(CHROMIUM, os.X_OK), reason=f"{CHROMIUM} is not installed (Debian: chromium)"
)
# callgrind cells (server_profiler callgrind): valgrind and its vgdb (Debian: valgrind).
needs_valgrind = pytest.mark.skipif(
    shutil.which("valgrind") is None or shutil.which("vgdb") is None,
    reason="valgrind (with vgdb) is not installed (Debian: valgrind)",
)
needs_mono = pytest.mark.skipif(
    shutil.which("mcs") is None or shutil.which("mono") is None,
    reason="mono's mcs and mono are not installed (Debian: mono-devel)",
)


@functools.cache
def _sandbox_mark() -> pytest.MarkDecorator:
    from workflow.harness import sandbox

    available, why = sandbox.isolation_available()
    return pytest.mark.skipif(not available, reason=f"no network namespaces here: {why}")


def __getattr__(name: str) -> pytest.MarkDecorator:
    if name == "needs_sandbox":
        return _sandbox_mark()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
