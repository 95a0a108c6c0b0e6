"""Building the other library versions a prototype's manifest declares (library_builds): run
a version's build command unless its executable is up to date.

prototypes.contract.library_builds describes the builds; this module runs them (the contract
package only reads and checks).
"""

from __future__ import annotations

import subprocess

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
