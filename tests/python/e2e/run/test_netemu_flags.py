"""The network profiles against the real tools: netemu accepts every flag the profiles render
to, and probing the kernel for netem leaves nothing behind (the run tier's fixture checks)."""

from __future__ import annotations

import subprocess

from workflow.harness import netprofiles as profiles
from workflow.harness import sandbox

from support.marks import needs_netemu, needs_root
from support.paths import NETEMU
from support.profiles import EVERY_KEY


@needs_netemu
def test_netemu_accepts_every_rendered_flag() -> None:
    """netemu exits 2 on a bad flag; with valid flags it gets as far as opening the
    (nonexistent) interfaces and exits 3 (or 1 without the privilege for raw sockets)."""
    for name, p in [*profiles.load_profiles().items(), ("full", EVERY_KEY)]:
        args = profiles.emulator_args(profiles.validate_profile(name, p), "nsk-no-a", "nsk-no-b")
        result = subprocess.run(
            [str(NETEMU), *args, "-duration", "1ms"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        assert result.returncode != 2, (name, args, result.stderr)


@needs_root
def test_kernel_has_netem_probe_leaves_nothing() -> None:
    sandbox.kernel_has_netem.cache_clear()
    assert isinstance(sandbox.kernel_has_netem(), bool)
