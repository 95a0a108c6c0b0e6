"""Whether an ok run's measurement window holds the data its cell promises.

A prototype that writes its timestamps in µs instead of ns (rows and meta.json alike) passes
every format check and gives an ok run in which none of its RTT rows lies inside the window:
the statistics then have nothing, silently. Every cell whose RTT comes from the net probe, a
stream or pingpong (prototypes.contract.workloads.rtt_source) must have at least one answered
net probe inside the window; every run at least one server tick (the tick and message counts)
and, when the window spans two sampling intervals, one sample of the server's CPU and memory
(monitor.csv). Otherwise the run fails with reason no_data, the count and the likely cause
named.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from monitors.sampler import read_monitor
from prototypes.contract.logs import LogFormatError, read_rtt_logs, read_ticks_csv
from prototypes.contract.workloads import rtt_source

_NS = "t_unix_ns must be nanoseconds since the Unix epoch, on the harness's clock"


def problem(cell: dict[str, Any], run_dir: Path, window: tuple[int, int]) -> str | None:
    """Why the window lacks a metric's data the cell promises (run_dir: the run's directory,
    logs/ and monitor.csv), or None."""
    logs = run_dir / "logs"
    checks = [_ticks(logs, window), _server_samples(cell, run_dir, window)]
    if rtt_source(cell) != "none":
        checks.insert(0, _net_rtt(logs, window))
    return next((p for p in checks if p is not None), None)


def _outside(times: np.ndarray, what: str, window: tuple[int, int], why: str) -> str | None:
    """None when a time lies inside the window, else its count and where the first lay."""
    start, end = window
    if np.count_nonzero((times >= start) & (times < end)):
        return None
    where = ""
    if times.size:
        first = int(times.min())
        where = (
            f"; the first is {(start - first) / 1e9:.3g} s before the window's start"
            if first < start
            else f"; the first is {(first - end) / 1e9:.3g} s after its end"
        )
    return f"0 of {times.size} {what} lie inside the measurement window{where} ({why})"


def _net_rtt(logs: Path, window: tuple[int, int]) -> str | None:
    try:
        rtt = read_rtt_logs(logs)
    except (LogFormatError, OSError):
        return None  # the log check names what cannot be read
    return _outside(rtt.t_unix_ns[rtt.kind == "net"], "RTT rows of kind net", window, _NS)


def _ticks(logs: Path, window: tuple[int, int]) -> str | None:
    try:
        rows = read_ticks_csv(logs / "server.ticks.csv")
    except (LogFormatError, OSError, ValueError):
        return None
    times = np.array([int(r["t_unix_ns"]) for r in rows if r["t_unix_ns"].isdigit()], np.int64)
    return _outside(times, "server tick rows (server.ticks.csv)", window, _NS)


def _server_samples(cell: dict[str, Any], run_dir: Path, window: tuple[int, int]) -> str | None:
    interval_s = float(cell.get("sample_interval_s") or 0)
    if interval_s <= 0 or (window[1] - window[0]) / 1e9 < 2 * interval_s:
        return None  # a window shorter than two intervals may fall between samples
    try:
        samples = read_monitor(run_dir)
    except (OSError, ValueError):
        return None
    times = np.array([s.t_unix_ns for s in samples if s.proc == "server"], np.int64)
    return _outside(
        times,
        "samples of the server (monitor.csv)",
        window,
        f"the sampler samples every {interval_s:g} s; did it stop?",
    )
