"""The measurement window of a run: what "inside the window" means, for every summary.

The harness writes the window into the run's meta.json as window_start_unix_ns and
window_end_unix_ns (from the moment all players connected, for the cell's duration). A time t
(ns since the Unix epoch) is inside the window when

    window_start_unix_ns <= t < window_end_unix_ns

start inclusive, end exclusive; a missing bound is open. t_s, the seconds since the window's
start, is negative before it. Per-second series use one-second bins [k, k + 1) of t_s; a bin is
inside the window when it lies wholly inside: 0 <= k and k + 1 <= the window's length (so a
partial last second is left out, as it would mix steady traffic with players leaving).

Percentiles (stats.summary via stats.runs_table), the CPU mean (stats.resources), the warm-up
series (stats.ingest) and the per-second series (stats.timeseries) all take the window from
here, so one sample is in or out of the window alike for each of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

NS_PER_S = 1e9


@dataclass(frozen=True, slots=True)
class Window:
    """[start_unix_ns, end_unix_ns) of one run; None is an open bound."""

    start_unix_ns: int | None
    end_unix_ns: int | None

    @classmethod
    def of(cls, meta: Mapping[str, Any] | None) -> Window:
        """The window a run's meta.json records (open where a key is missing)."""
        meta = meta or {}
        start, end = meta.get("window_start_unix_ns"), meta.get("window_end_unix_ns")
        return cls(None if start is None else int(start), None if end is None else int(end))

    @property
    def length_s(self) -> float | None:
        """The window's length in seconds, None unless both bounds are known."""
        if self.start_unix_ns is None or self.end_unix_ns is None:
            return None
        return (self.end_unix_ns - self.start_unix_ns) / NS_PER_S

    def contains(self, t_unix_ns: npt.ArrayLike) -> npt.NDArray[np.bool_]:
        """Mask of the times inside the window."""
        t = np.asarray(t_unix_ns, dtype=np.int64)
        mask = np.ones(t.shape, dtype=bool)
        if self.start_unix_ns is not None:
            mask &= t >= self.start_unix_ns
        if self.end_unix_ns is not None:
            mask &= t < self.end_unix_ns
        return mask

    def contains_ns(self, t_unix_ns: int) -> bool:
        """One time inside the window (the same rule as contains)."""
        return (self.start_unix_ns is None or t_unix_ns >= self.start_unix_ns) and (
            self.end_unix_ns is None or t_unix_ns < self.end_unix_ns
        )

    def t_s(self, t_unix_ns: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Seconds since the window's start (NaN without a start)."""
        t = np.asarray(t_unix_ns, dtype=np.int64)
        if self.start_unix_ns is None:
            return np.full(t.shape, np.nan)
        # Subtract in integers first: float64 cannot hold epoch nanoseconds exactly.
        return np.asarray((t - self.start_unix_ns) / NS_PER_S, dtype=np.float64)

    def t_s_expr(self, t_unix_ns: pl.Expr) -> pl.Expr:
        """t_s of a polars column of epoch nanoseconds (null without a start)."""
        if self.start_unix_ns is None:
            return pl.lit(None, dtype=pl.Float64)
        return (t_unix_ns - self.start_unix_ns) / NS_PER_S

    def bin_inside(self, bin_start_s: npt.ArrayLike, step_s: float = 1.0) -> npt.NDArray[np.bool_]:
        """Mask of the bins [k, k + step_s) of t_s that lie wholly inside the window."""
        k = np.asarray(bin_start_s, dtype=np.float64)
        return (k >= 0) & self.bin_ends_by_end(k, step_s)

    def bin_ends_by_end(
        self, bin_start_s: npt.ArrayLike, step_s: float = 1.0
    ) -> npt.NDArray[np.bool_]:
        """Mask of the bins that end no later than the window's end (bins before the window
        included): what a per-second series of the whole run up to the window's end keeps."""
        k = np.asarray(bin_start_s, dtype=np.float64)
        length = self.length_s
        if length is None:
            return np.ones(k.shape, dtype=bool)
        return np.asarray(k + step_s <= length, dtype=bool)

    def bin_ends_by_end_expr(self, bin_start_s: pl.Expr, step_s: float = 1.0) -> pl.Expr:
        """bin_ends_by_end for a polars column of bin starts."""
        length = self.length_s
        if length is None:
            return pl.lit(True)
        return bin_start_s + step_s <= length
