"""Percentiles of RTT and send lateness per probe kind within a time window.

Percentiles use numpy's default method, ``"linear"`` (Hyndman & Fan type 7): for n sorted values
the q-th percentile sits at index ``h = (n - 1) * q / 100`` and is interpolated linearly between
the two neighbouring order statistics. Example: of [1, 2, 3, 4] the p50 is 2.5 and the p99 is
3.97. ``max`` is the largest value. These are point estimates for one run; confidence intervals
across runs belong to later stages.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from stats.window import Window

PERCENTILES = [50.0, 95.0, 99.0]
PERCENTILE_METHOD: Final = "linear"


@dataclass(frozen=True, slots=True)
class Percentiles:
    """p50/p95/p99/max of one metric, in the metric's own unit, over n values."""

    n: int
    p50: float
    p95: float
    p99: float
    max: float


@dataclass(frozen=True, slots=True)
class KindSummary:
    """RTT and send lateness of one probe kind (net, app or lib), both in µs."""

    kind: str
    rtt_us: Percentiles
    send_late_us: Percentiles | None  # None when no row of this kind has a lateness (lib)


def percentiles(values: npt.ArrayLike) -> Percentiles | None:
    """p50, p95, p99 and max of the finite values (NaN = no value); None if there are none."""
    arr = np.asarray(values, dtype=np.float64)
    arr = arr[np.isfinite(arr)]
    if arr.size == 0:
        return None
    p50, p95, p99 = np.percentile(arr, PERCENTILES, method=PERCENTILE_METHOD)
    return Percentiles(int(arr.size), float(p50), float(p95), float(p99), float(arr.max()))


def summarize_by_kind(
    t_unix_ns: npt.NDArray[np.int64],
    kind: npt.NDArray[np.str_],
    rtt_us: npt.NDArray[np.float64],
    send_late_us: npt.NDArray[np.float64],
    start_ns: int | None = None,
    end_ns: int | None = None,
    kinds: Iterable[str] = ("net", "app", "lib"),
) -> dict[str, KindSummary]:
    """Percentiles per kind of the rows sent inside the window [start_ns, end_ns)
    (stats.window); kinds without rows are left out.

    The arrays are the columns of rtt.csv rows (same length); send_late_us is NaN where empty.
    """
    in_window = Window(start_ns, end_ns).contains(t_unix_ns)
    out: dict[str, KindSummary] = {}
    for k in kinds:
        rows = in_window & (kind == k)
        rtt = percentiles(rtt_us[rows])
        if rtt is None:
            continue
        out[k] = KindSummary(k, rtt, percentiles(send_late_us[rows]))
    return out
