"""Nix's archive format (NAR) and its base-32 hash encoding, written out so that flake.nix's
vendorHash values can be checked without Nix (unit/test_flake.py checks this against a hash Nix
computed; e2e/toolchain/test_flake_eval.py hashes `go mod vendor`'s output with it)."""

from __future__ import annotations

import os
from pathlib import Path


def nar(path: Path) -> bytes:
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


def nix_base32(digest: bytes) -> str:
    """A sha256 digest as nix-hash --base32 prints it."""
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
