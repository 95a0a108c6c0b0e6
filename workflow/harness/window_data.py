"""Whether an ok run's measurement window holds the data its cell promises.

A prototype that writes its timestamps in µs instead of ns (rows and meta.json alike) passes
every format check and gives an ok run in which none of its RTT rows lies inside the window:
the statistics then have nothing, silently. Every cell whose RTT comes from the net probe, a
stream or pingpong (prototypes.contract.workloads.rtt_source) must have at least one answered
net probe inside the window, or the run fails with reason no_data, the count and the likely
cause named.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from prototypes.contract.logs import LogFormatError, read_rtt_logs
from prototypes.contract.workloads import rtt_source


def problem(cell: dict[str, Any], logs: Path, window: tuple[int, int]) -> str | None:
    """Why the window holds no RTT row of kind net although the cell has probes, or None."""
    if rtt_source(cell) == "none":
        return None
    try:
        rtt = read_rtt_logs(logs)
    except (LogFormatError, OSError):
        return None  # the log check names what cannot be read
    net = rtt.t_unix_ns[rtt.kind == "net"]
    start, end = window
    inside = int(np.count_nonzero((net >= start) & (net < end)))
    if inside:
        return None
    where = ""
    if net.size:
        first = int(net.min())
        where = (
            f"; the first is {(start - first) / 1e9:.3g} s before the window's start"
            if first < start
            else f"; the first is {(first - end) / 1e9:.3g} s after its end"
        )
    return (
        f"0 of {net.size} RTT rows of kind net lie inside the measurement window{where} "
        "(t_unix_ns must be nanoseconds since the Unix epoch, on the harness's clock)"
    )
