"""flake.nix: pinned to one nixpkgs commit, reads only the attributes listed (and checked against
nixpkgs' source) in tests/nix/nixpkgs-attributes.txt, and the NAR hash its vendorHash values are
computed with matches Nix's. (Its evaluation with nix-instantiate and the vendorHash values
against `go mod vendor`: e2e/toolchain/test_flake_eval.py.)"""

from __future__ import annotations

import base64
import hashlib
import re
import shutil
import subprocess
from pathlib import Path

from support import nar
from support.paths import REPO

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


def test_nar_hash_matches_nix_for_a_small_tree(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.txt").write_text("netstick\n")
    (tmp_path / "d" / "run").write_text("#!/bin/sh\n")
    (tmp_path / "d" / "run").chmod(0o755)
    (tmp_path / "d" / "link").symlink_to("a.txt")
    digest = base64.b64encode(hashlib.sha256(nar.nar(tmp_path / "d")).digest()).decode()
    if shutil.which("nix-hash"):
        nix = subprocess.run(
            ["nix-hash", "--type", "sha256", "--base32", str(tmp_path / "d")],
            capture_output=True,
            text=True,
            check=True,
        )
        assert nix.stdout.strip() == nar.nix_base32(
            hashlib.sha256(nar.nar(tmp_path / "d")).digest()
        )
    assert digest == NAR_SMALL_TREE_SHA256
