"""A network profile that sets every key the schema has, in both directions: what the emulator's
and netem's renderings are checked against (unit/test_netprofiles.py) and what the real netemu
must accept (e2e/run/test_netemu_flags.py)."""

from __future__ import annotations

from typing import Any

EVERY_KEY: dict[str, Any] = {
    "description": "every key",
    "up": {
        "delay_ms": 25,
        "jitter_ms": 5,
        "jitter_dist": "uniform",
        "reorder": True,
        "loss": 0.05,
        "loss_correlation": 0.25,
        "rate_bps": 1_000_000,
        "queue_ms": 80,
    },
    "down": {
        "delay_ms": 12.5,
        "jitter_ms": 2,
        "gilbert_elliott": {"p": 0.01, "r": 0.25, "h": 1, "k": 0},
    },
}
