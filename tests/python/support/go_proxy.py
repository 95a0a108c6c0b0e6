"""A Go module proxy in a directory, as the go command reads one through GOPROXY=file://DIR:
DIR/<escaped module>/@v/list, <version>.info (its time, and the commit it came from when given),
<version>.mod and <version>.zip (files under <module>@<version>/), and the .info a branch query
(HEAD, master) answers with. Also the h1: hashes go.sum holds, computed here from the bytes
(golang.org/x/mod/sumdb/dirhash Hash1), so that a test checks the go command's sums against
its own."""

from __future__ import annotations

import base64
import hashlib
import json
import zipfile
from collections.abc import Mapping
from pathlib import Path


def escape(path: str) -> str:
    """A module path or version as the proxy protocol spells it: capitals as !lower."""
    return "".join(f"!{c.lower()}" if c.isupper() else c for c in path)


def h1(files: Mapping[str, bytes]) -> str:
    """dirhash Hash1: sha256 over "<sha256 hex>  <name>\\n" of every file, sorted by name."""
    summary = "".join(
        f"{hashlib.sha256(files[name]).hexdigest()}  {name}\n" for name in sorted(files)
    )
    return "h1:" + base64.b64encode(hashlib.sha256(summary.encode()).digest()).decode()


def go_mod(module: str) -> bytes:
    return f"module {module}\n\ngo 1.21\n".encode()


def add_version(
    proxy: Path,
    module: str,
    version: str,
    time: str,
    origin: Mapping[str, str] | None = None,
    listed: bool = True,
) -> tuple[str, str]:
    """Serve module@version (one Go file and its go.mod); listed: also in @v/list (a
    pseudo-version is not). Returns its go.sum hashes (zip, go.mod)."""
    at_v = proxy / escape(module) / "@v"
    at_v.mkdir(parents=True, exist_ok=True)
    name = module.rsplit("/", 1)[-1].replace(".", "_").replace("-", "_")
    if name.startswith("v") and name[1:].isdigit():  # a major-version suffix is no package name
        name = module.rsplit("/", 2)[-2].replace("-", "_")
    files = {
        "go.mod": go_mod(module),
        f"{name}.go": f"// Package {name} is {module} at {version}.\npackage {name}\n".encode(),
    }
    prefix = f"{module}@{version}/"
    ev = escape(version)
    with zipfile.ZipFile(at_v / f"{ev}.zip", "w") as z:
        for path, data in files.items():
            z.writestr(prefix + path, data)
    (at_v / f"{ev}.mod").write_bytes(files["go.mod"])
    info: dict[str, object] = {"Version": version, "Time": time}
    if origin:
        info["Origin"] = dict(origin)
    (at_v / f"{ev}.info").write_text(json.dumps(info))
    if listed:
        with (at_v / "list").open("a") as f:
            f.write(version + "\n")
    return h1({prefix + p: d for p, d in files.items()}), h1({"go.mod": files["go.mod"]})


def serve_branch(proxy: Path, module: str, query: str, version: str, time: str) -> None:
    """Answer module@<query> (HEAD, master) with version, a version add_version serves."""
    at_v = proxy / escape(module) / "@v"
    at_v.mkdir(parents=True, exist_ok=True)
    (at_v / f"{escape(query)}.info").write_text(json.dumps({"Version": version, "Time": time}))
