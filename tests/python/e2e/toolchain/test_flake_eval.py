"""flake.nix against the tools: it evaluates with nix-instantiate against a stand-in package set
(tests/nix/eval.nix; also against the real nixpkgs.lib with NETSTICK_NIXPKGS_LIB), and each
vendorHash is the NAR hash of `go mod vendor`'s output."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support import nar
from support.paths import REPO

FLAKE = REPO / "flake.nix"


def _evaluate(lib_path: str | None) -> dict[str, Any]:
    arg = ["--arg", "libPath", lib_path] if lib_path else ["--arg", "libPath", "null"]
    env = {**os.environ, "NIX_CONFIG": "build-users-group ="}
    out = subprocess.run(
        [
            "nix-instantiate",
            "--eval",
            "--strict",
            "--json",
            *arg,
            str(REPO / "tests" / "nix" / "eval.nix"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert out.returncode == 0, f"tests/nix/eval.nix: nix-instantiate failed:\n{out.stderr}"
    result: dict[str, Any] = json.loads(out.stdout)
    return result


@pytest.mark.skipif(shutil.which("nix-instantiate") is None, reason="Nix is not installed")
@pytest.mark.parametrize("lib_var", ["", "NETSTICK_NIXPKGS_LIB"])
def test_flake_evaluates_against_a_stand_in_package_set(lib_var: str) -> None:
    # With NETSTICK_NIXPKGS_LIB=<nixpkgs>/lib, also against the real nixpkgs.lib.
    lib_path = os.environ.get(lib_var) if lib_var else None
    if lib_var and not lib_path:
        pytest.skip("NETSTICK_NIXPKGS_LIB (a nixpkgs lib directory) is not set")
    result = _evaluate(lib_path)
    assert result["systems"] == ["aarch64-linux", "x86_64-linux"]
    for system in result["systems"]:
        packages = result["packages"][system]
        assert packages["netstick-ref"]["subPackages"] == ["cmd/netstick-ref"]
        assert packages["netstick-ref"]["buildInputs"] == ["enet"], "netstick-ref must link libenet"
        assert packages["netemu"]["pname"] == "netemu"
        shell = result["shell"][system]
        assert shell["NETSTICK_NIX"] == "1", "workflow/setup.sh detects the shell by NETSTICK_NIX"
        for tool in [
            "go_1_26",
            "enet",
            "iproute2",
            "ethtool",
            "quarto",
            "mono",
            "chromium",
            "poppler-utils",
        ]:
            assert tool in shell["packages"], f"dev shell lacks {tool}"
        assert "libstdc++/lib" in shell["LD_LIBRARY_PATH"], "pip's wheels need libstdc++"
        assert set(shell["rPackages"]) == {
            "ggplot2",
            "knitr",
            "rmarkdown",
            "data_table",
            "jsonlite",
        }
        assert result["apps"][system]["type"] == "app"


@pytest.mark.parametrize("module", ["prototypes/reference", "workflow/harness/netemu"])
def test_vendor_hash_is_that_of_go_mod_vendor(module: str, tmp_path: Path) -> None:
    """buildGoModule's vendorHash is the NAR hash of `go mod vendor`'s output; recomputed here
    offline from the module cache (skipped when the modules are not downloaded)."""
    go = shutil.which("go") or str(REPO / ".tools" / "go" / "bin" / "go")
    if not Path(go).exists():
        pytest.skip("no Go toolchain")
    text = FLAKE.read_text()
    block = text[text.index(f'dir = "{module}";') :]
    want = re.search(r'vendorHash = "([^"]+)"', block)
    assert want, f"flake.nix: no vendorHash after dir = {module}"
    copy = tmp_path / "m"
    shutil.copytree(REPO / module, copy, ignore=shutil.ignore_patterns("bin", "vendor", "testdata"))
    env = {**os.environ, "GOFLAGS": "-mod=mod", "GOPROXY": "off", "GOTOOLCHAIN": "local"}
    out = subprocess.run(
        [go, "mod", "vendor"],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if out.returncode != 0:
        pytest.skip(
            f"go mod vendor offline failed (modules not in the cache?): {out.stderr.strip()[:200]}"
        )
    got = "sha256-" + base64.b64encode(hashlib.sha256(nar.nar(copy / "vendor")).digest()).decode()
    assert got == want.group(1), f"flake.nix: vendorHash of {module} is stale; set it to {got}"
