"""Write the alternate module files of every library version prototype.yaml declares.

For each (module, version) in library_builds.libraries: versions/<module>@<version>.mod and .sum
are go.mod and go.sum with that one requirement set to exactly that version (`go mod edit
-require`), tidied (`go mod tidy -modfile`), which also records every go.sum line the build
needs, so that building it later needs only the module proxy. Files of versions no longer
declared are removed. Run by `make versions`; the output is committed.

Refuses a version that minimal version selection would raise (another requirement needs a newer
one): the build would not be of the version named (workflow.harness.builds.go_module_file, which
the bisection's builds share).
"""

from __future__ import annotations

import sys
from pathlib import Path

from prototypes.contract import manifest as manifests
from workflow.harness.builds import go_module_file

HERE = Path(__file__).resolve().parent
REF = HERE.parent


def generate(module: str, version: str, out_dir: Path = HERE) -> Path:
    """<out_dir>/<module>@<version>.mod (+ .sum) from go.mod; returns the .mod path."""
    return go_module_file(REF, module, version, out_dir / f"{module}@{version}.mod")


def main(argv: list[str]) -> int:
    man = manifests.load(REF / "prototype.yaml")
    if man.library_builds is None:
        print(f"{man.path}: no library_builds; nothing to generate", file=sys.stderr)
        return 0
    wanted: set[Path] = set()
    only = set(argv)
    for module, versions in man.library_builds.libraries.items():
        for version in versions:
            key = f"{module}@{version}"
            mod = HERE / f"{key}.mod"
            wanted |= {mod, mod.with_suffix(".sum")}
            if only and key not in only and module not in only:
                continue
            print(f"versions: {key}", file=sys.stderr)
            generate(module, version)
    for path in HERE.rglob("*"):
        if path.suffix in (".mod", ".sum") and path not in wanted:
            path.unlink()
            rel = path.relative_to(REF)
            print(f"versions: removed {rel} (no longer declared)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
