"""CPU and memory of a process tree over a window, from the sampler's cumulative rows.

Mean CPU over a window is computed from the cumulative CPU seconds at the first and last sample
inside the window (total CPU / wall time), not by averaging per-interval rates: that is exact
for whatever the samples cover and does not depend on the intervals being equal.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from stats.window import Window


class ResourceSample(Protocol):
    """What these functions need of a sample (monitors.sampler.Sample fits)."""

    @property
    def t_unix_ns(self) -> int: ...
    @property
    def proc(self) -> str: ...
    @property
    def cpu_user_s(self) -> float: ...
    @property
    def cpu_system_s(self) -> float: ...
    @property
    def cpu_cores(self) -> float: ...
    @property
    def rss_bytes(self) -> int: ...


def _in_window(
    samples: Iterable[ResourceSample], proc: str, start_ns: int | None, end_ns: int | None
) -> list[ResourceSample]:
    window = Window(start_ns, end_ns)
    return sorted(
        (s for s in samples if s.proc == proc and window.contains_ns(s.t_unix_ns)),
        key=lambda s: s.t_unix_ns,
    )


def mean_cpu_cores(
    samples: Iterable[ResourceSample],
    proc: str,
    start_ns: int | None = None,
    end_ns: int | None = None,
) -> float | None:
    """Mean cores used by proc between the first and last of its samples inside the window
    [start_ns, end_ns) (stats.window).

    With a single sample in the window, its own per-interval rate is returned; with none, None.
    """
    rows = _in_window(samples, proc, start_ns, end_ns)
    if not rows:
        return None
    if len(rows) == 1:
        return rows[0].cpu_cores
    first, last = rows[0], rows[-1]
    cpu_s = (last.cpu_user_s + last.cpu_system_s) - (first.cpu_user_s + first.cpu_system_s)
    wall_s = (last.t_unix_ns - first.t_unix_ns) / 1e9
    return max(0.0, cpu_s / wall_s) if wall_s > 0 else None


def cpu_s_between(
    samples: Iterable[ResourceSample],
    proc: str,
    start_ns: int | None = None,
    end_ns: int | None = None,
) -> tuple[float, int, int] | None:
    """(CPU seconds, first t_unix_ns, last t_unix_ns) that proc used between the first and last
    of its samples inside the window [start_ns, end_ns); None with fewer than two samples.

    The CPU seconds rather than a mean, so the CPU of several trees can be added and subtracted
    over one span (stats.interference) even where one of them stopped earlier."""
    rows = _in_window(samples, proc, start_ns, end_ns)
    if len(rows) < 2:
        return None
    first, last = rows[0], rows[-1]
    cpu_s = (last.cpu_user_s + last.cpu_system_s) - (first.cpu_user_s + first.cpu_system_s)
    return cpu_s, first.t_unix_ns, last.t_unix_ns


def cpu_s_nearest(
    samples: Iterable[ResourceSample], proc: str, start_ns: int, end_ns: int
) -> tuple[float, int, int] | None:
    """(CPU seconds, t_unix_ns of the first, of the last sample) that proc used between its
    samples nearest to start_ns and to end_ns, inside the window or not; None when they are one
    sample (or proc has none).

    cpu_s_between's span may fall short of the window by up to a sampling interval at each
    edge; where the sampler ran across an edge, this one strays from it by at most half an
    interval, inside or out, for a cost per unit of work counted over the same span
    (stats.per_message)."""
    rows = sorted((s for s in samples if s.proc == proc), key=lambda s: s.t_unix_ns)
    if not rows:
        return None
    first = min(rows, key=lambda s: abs(s.t_unix_ns - start_ns))
    last = min(rows, key=lambda s: abs(s.t_unix_ns - end_ns))
    if last.t_unix_ns <= first.t_unix_ns:
        return None
    cpu_s = (last.cpu_user_s + last.cpu_system_s) - (first.cpu_user_s + first.cpu_system_s)
    return cpu_s, first.t_unix_ns, last.t_unix_ns


def peak_rss_bytes(
    samples: Iterable[ResourceSample],
    proc: str,
    start_ns: int | None = None,
    end_ns: int | None = None,
) -> int | None:
    """Largest rss_bytes of proc inside the window [start_ns, end_ns) (whole run by default);
    None if unsampled."""
    rows = _in_window(samples, proc, start_ns, end_ns)
    return max(s.rss_bytes for s in rows) if rows else None
