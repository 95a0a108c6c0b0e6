"""Building the other library versions a prototype's manifest declares (library_builds): run
a version's build command unless its executable is up to date.

prototypes.contract.library_builds describes the builds; this module runs them (the contract
package only reads and checks).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from prototypes.contract.library_builds import VersionBuild, VersionBuildError


def build_version(vb: VersionBuild, *, force: bool = False) -> bool:
    """Build one library version unless its executable is up to date; True if it built.

    Raises VersionBuildError naming the library, the version and the builder's message (the
    compiler's, for a version whose API the source does not match)."""
    if vb.external is not None:
        # Nothing here builds it: present, or an error saying who builds it and how to fetch it.
        missing = vb.missing_executables()
        if missing:
            raise VersionBuildError(
                f"library {vb.library} version {vb.version}: missing "
                f"{', '.join(map(str, missing))}; built by {vb.external}"
                + (f"; fetch it: {' '.join(vb.fetch)} (in {vb.cwd})" if vb.fetch else "")
            )
        return False
    if vb.missing_inputs:
        raise VersionBuildError(
            f"library {vb.library} version {vb.version}: cannot build, missing "
            f"{', '.join(vb.missing_inputs)} in {vb.cwd} (generate them first)"
        )
    if not force and not vb.stale():
        return False
    vb.executable.parent.mkdir(parents=True, exist_ok=True)
    try:
        res = subprocess.run(
            vb.command, cwd=vb.cwd, capture_output=True, text=True, timeout=vb.timeout_s,
            check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise VersionBuildError(
            f"library {vb.library} version {vb.version}: build did not finish within "
            f"{vb.timeout_s:g} s: {' '.join(vb.command)}"
        ) from None
    if res.returncode != 0:
        raise VersionBuildError(
            f"library {vb.library} version {vb.version} does not build (exit {res.returncode}): "
            f"{' '.join(vb.command)}\n" + (res.stderr or res.stdout)[-3000:]
        )
    return True


def go_module_file(module_dir: Path, library: str, version: str, mod: Path) -> Path:
    """mod (and its .sum beside it): module_dir's go.mod and go.sum with one requirement set to
    exactly library@version (`go mod edit -require`), tidied (`go mod tidy -modfile`, which
    records every go.sum line the build needs). Shared by the declared versions' module files
    (prototypes/reference/versions/generate.py) and the bisection's builds (workflow.nightly).

    Raises VersionBuildError for a version that minimal version selection would raise (another
    requirement needs a newer one: the build would not be of the version named) and for a go
    command that fails (its message)."""
    mod.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(module_dir / "go.mod", mod)
    sums = module_dir / "go.sum"
    if sums.is_file():
        shutil.copyfile(sums, mod.with_suffix(".sum"))
    else:  # a module without dependencies has none; tidy writes what the version needs
        mod.with_suffix(".sum").write_text("", encoding="utf-8")
    env = {**os.environ, "GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local"}

    def go(*args: str) -> str:
        res = subprocess.run(
            ["go", *args], cwd=module_dir, capture_output=True, text=True, env=env, check=False
        )
        if res.returncode != 0:
            raise VersionBuildError(
                f"library {library} version {version}: go {' '.join(args)} failed in "
                f"{module_dir}:\n{res.stderr or res.stdout}"
            )
        return res.stdout

    go("mod", "edit", f"-modfile={mod}", f"-require={library}@{version}")
    go("mod", "tidy", f"-modfile={mod}")
    selected = go("list", f"-modfile={mod}", "-m", "-f", "{{.Version}}", library).strip()
    if selected != version:
        raise VersionBuildError(
            f"library {library} version {version}: the build would select {selected} (another "
            f"requirement needs it); choose {selected} or later"
        )
    return mod
