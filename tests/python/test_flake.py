"""flake.nix: pinned to one nixpkgs commit, reads only the attributes listed (and checked against
nixpkgs' source) in tests/nix/nixpkgs-attributes.txt, and evaluates against a stand-in package set
(tests/nix/eval.nix) with nix-instantiate when Nix is installed."""

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

REPO = Path(__file__).resolve().parents[2]
FLAKE = REPO / "flake.nix"
ATTRIBUTES = REPO / "tests" / "nix" / "nixpkgs-attributes.txt"
# `nix hash path` (Nix 2.8) of the tree test_nar_hash_matches_nix_for_a_small_tree writes.
NAR_SMALL_TREE_SHA256 = "lOOkpwWaA1xinQeudfKYI8FojqJGOg32uyRvO2w7naw="


def _listed_attributes() -> dict[str, str]:
    listed: dict[str, str] = {}
    for line in ATTRIBUTES.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, where = line.partition(" ")
            listed[name] = where
    return listed


def test_nixpkgs_is_pinned_to_one_commit() -> None:
    urls = re.findall(r'inputs\.nixpkgs\.url\s*=\s*"([^"]+)"', FLAKE.read_text())
    assert len(urls) == 1, "flake.nix: expected one inputs.nixpkgs.url"
    assert re.fullmatch(r"github:NixOS/nixpkgs/[0-9a-f]{40}", urls[0]), (
        f"flake.nix: nixpkgs must be pinned to a commit, got {urls[0]}"
    )


def test_every_attribute_read_is_listed_with_its_source() -> None:
    text = re.sub(r"#.*", "", FLAKE.read_text())
    read = set(re.findall(r"\bpkgs\.([A-Za-z_][\w-]*)", text))
    read |= {
        f"rPackages.{n}" for n in re.findall(r"with pkgs\.rPackages; \[([^\]]*)\]", text)[0].split()
    }
    read.discard("rPackages")
    listed = _listed_attributes()
    assert read - set(listed) == set(), (
        f"{ATTRIBUTES.name}: attributes read by flake.nix but not listed"
    )
    for name, where in listed.items():
        assert where.startswith("pkgs/"), f"{ATTRIBUTES.name}: {name} must name its nixpkgs file"


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


def _nar(path: Path) -> bytes:
    """Nix's archive (NAR) serialisation of a file tree: what a fixed-output hash covers."""

    def s(b: bytes) -> bytes:
        return len(b).to_bytes(8, "little") + b + b"\0" * (-len(b) % 8)

    def node(p: Path) -> bytes:
        if p.is_symlink():
            return (
                s(b"(")
                + s(b"type")
                + s(b"symlink")
                + s(b"target")
                + s(os.readlink(p).encode())
                + s(b")")
            )
        if p.is_dir():
            out = s(b"(") + s(b"type") + s(b"directory")
            for child in sorted(p.iterdir(), key=lambda c: c.name.encode()):
                out += (
                    s(b"entry")
                    + s(b"(")
                    + s(b"name")
                    + s(child.name.encode())
                    + s(b"node")
                    + node(child)
                    + s(b")")
                )
            return out + s(b")")
        executable = s(b"executable") + s(b"") if os.access(p, os.X_OK) else b""
        return (
            s(b"(")
            + s(b"type")
            + s(b"regular")
            + executable
            + s(b"contents")
            + s(p.read_bytes())
            + s(b")")
        )

    return s(b"nix-archive-1") + node(path)


def test_nar_hash_matches_nix_for_a_small_tree(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.txt").write_text("netstick\n")
    (tmp_path / "d" / "run").write_text("#!/bin/sh\n")
    (tmp_path / "d" / "run").chmod(0o755)
    (tmp_path / "d" / "link").symlink_to("a.txt")
    digest = base64.b64encode(hashlib.sha256(_nar(tmp_path / "d")).digest()).decode()
    if shutil.which("nix-hash"):
        nix = subprocess.run(
            ["nix-hash", "--type", "sha256", "--base32", str(tmp_path / "d")],
            capture_output=True,
            text=True,
            check=True,
        )
        assert nix.stdout.strip() == _nix_base32(hashlib.sha256(_nar(tmp_path / "d")).digest())
    assert digest == NAR_SMALL_TREE_SHA256


def _nix_base32(digest: bytes) -> str:
    alphabet = "0123456789abcdfghijklmnpqrsvwxyz"
    n = len(digest) * 8 // 5 + (1 if len(digest) * 8 % 5 else 0)
    out = []
    for i in range(n - 1, -1, -1):
        b = i * 5
        c = (digest[b // 8] >> (b % 8)) | (
            (digest[b // 8 + 1] << (8 - b % 8)) if b // 8 + 1 < len(digest) else 0
        )
        out.append(alphabet[c & 0x1F])
    return "".join(out)


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
    got = "sha256-" + base64.b64encode(hashlib.sha256(_nar(copy / "vendor")).digest()).decode()
    assert got == want.group(1), f"flake.nix: vendorHash of {module} is stale; set it to {got}"
