"""The network profiles as the runs applied them (facts.json runs.hardware.network_profiles), in
words for the report's check-list: where a profile's delay, jitter and loss came from, and where
a profile was not applied at all."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

_APPLIED_BY = {
    "netemu": "the user-space emulator between the server and its players",
    "netem": "tc netem on the run's veths",
}


def _one(p: Mapping[str, Any]) -> str:
    runs = f"{p['runs']} run{'s' if p['runs'] != 1 else ''}"
    where = f"isolation {', '.join(map(str, p.get('isolation') or []))}"
    applied = [a for a in p.get("applied_by") or [] if a in _APPLIED_BY]
    if p.get("impairs") and not applied:
        words = "NOT APPLIED: it impairs the network, but no run applied it"
    elif applied:
        words = f"applied by {' and '.join(_APPLIED_BY[a] for a in applied)}"
    elif "slurm" in (p.get("placement") or []):
        words = "nothing to apply; between nodes, the cluster's own network"
    else:
        words = "nothing to apply (no impairment)"
    notes = "".join(f"; {n}" for n in p.get("notes") or [])
    return f"{p['name']}: {words} ({runs}, {where}){notes}"


def profiles_words(profiles: Sequence[Mapping[str, Any]] | None) -> str:
    """One clause per profile; "not recorded" for facts made before profiles were gathered."""
    if not profiles:
        return "not recorded"
    return "; ".join(_one(p) for p in profiles)
