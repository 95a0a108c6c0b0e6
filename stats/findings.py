"""The record every findings.json of the stats stage holds, one per finding.

A finding is data, not prose: ``kind`` (what sort of statement; report/sentences.py has one
writer per kind), ``context`` (what it is about: cell, prototype, metric, threshold, ...),
``estimate`` in its stored ``unit``, ``interval`` ([low, high], or null where none exists) with
its ``level``, and whatever other numbers the statement needs, with units in their names. The
report turns records into sentences and converts units for display; nothing here is worded.
"""

from __future__ import annotations

import math
from typing import Any, Final

LEVEL: Final = 0.95
# Stored units a finding may carry; the report's unit table (report/sentences.py, SHOWN) knows
# how each is shown. "count" is a number of runs, cells, nights or samples.
UNITS: Final = (
    "us", "ms", "s", "us/player", "ms/player", "cores", "cores/player", "bytes", "bytes/s",
    "MiB/player", "MiB/s", "players", "ratio", "fraction", "count", "us/msg", "instr/msg",
    "packets/s",
)  # fmt: skip


def num(x: Any) -> float | None:
    """A finite float, or None for a missing, NaN or infinite one (JSON has no NaN)."""
    if x is None:
        return None
    v = float(x)
    return v if math.isfinite(v) else None


def finding(
    kind: str,
    context: dict[str, Any],
    estimate: float | None,
    unit: str | None,
    low: float | None = None,
    high: float | None = None,
    level: float = LEVEL,
    **fields: Any,
) -> dict[str, Any]:
    """One finding record; the interval is null (and no level is given) when both bounds are
    missing. unit None: a finding without a quantity (e.g. a list of runs)."""
    if unit is not None and unit not in UNITS:
        raise ValueError(f"finding {kind}: unit {unit!r} is not one of {', '.join(UNITS)}")
    lo, hi = num(low), num(high)
    interval: dict[str, Any] = (
        {"interval": None} if lo is None and hi is None else {"interval": [lo, hi], "level": level}
    )
    return {
        "kind": kind,
        "context": context,
        # Counts stay integers: "2 of 36 runs", not "2.0".
        "estimate": int(estimate) if unit == "count" and estimate is not None else num(estimate),
        "unit": unit,
        **interval,
        **fields,
    }
