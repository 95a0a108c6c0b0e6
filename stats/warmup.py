"""Warm-up (initial transient) removal for one run: MSER-5 and Net-Celerity's fixed cut.

MSER-5 (White 1997, "An effective truncation heuristic for bias reduction in simulation output";
Spratt 1998 for batches of 5) works on a regular series, here one value per second of a run (e.g.
the per-second median RTT, built with :func:`per_second`). The series is cut into batch means of 5
values Z_1..Z_k, and the truncation d (in batches) minimises the marginal standard error

    MSER(d) = 1 / (k - d)**2 * sum_{i > d} (Z_i - mean(Z_{d+1..k}))**2

i.e. the width of the marginal confidence interval of what is left. As in kim-convergence
(kim_convergence/ucl/mser_m.py) the last max(1, min(5, k // 4)) batches are not candidates: with
only a few batches left MSER(d) collapses towards 0 for any series. When the minimum over all
candidates lies in the second half of the series, the run never settled (or is too short) — the
published rule is to reject such a cut. We then report the best cut within the first half (so at
most half a run is discarded) and set ``second_half=True`` for the caller to flag the run.

Gaps: a per-second series has NaN for seconds without samples (infinities count as NaN).
Leading and trailing NaN are trimmed (the leading ones are part of the cut: there is nothing to
keep there); NaN inside the series are filled by linear interpolation between their neighbours,
so the batches stay aligned with time. Fewer than 10 batches (50 values) after trimming is too
short to judge: cut 0.

:func:`fixed_cut` is Net-Celerity's rule (Stroiou 2024, atlarge-research/Net-Celerity @ 1c9787b):
``mirror_experiment.sh`` starts the last client, then ``sleep 5`` and ``sleep
$benchmark_duration``; ``plot_results.py`` keeps ``df.tail(duration_seconds)`` of the 1-s server
system log, i.e. it discards everything before the final benchmark window, including the 5 s
after the last client started (at the ~1.056 s their monitor really took per row, the 120 rows
reach about 2 s back into those 5 s). Our t_s = 0 is the moment all players connected, so the
fixed part of their rule is "drop the first 5 s". (Their RTT logs were not trimmed at all for
Mirror; the DOTS collector kept frames after all players joined.)

Measured behaviour (tests/python/unit/test_stats_warmup.py; 300 one-second values, N(0, 1) noise, a
transient 10 * exp(-t / tau) that falls below half the noise SD at T ~ U(20, 40) s, 1000 seeded
trials): the cut lies in [T - 10 s, T + 35 s] in 93 % of trials (91.6-93.4 % over 5 seeds) and
is >= T - 10 s in 97-98 %. MSER-5 over-truncates now and then: on pure noise the median cut is 0
but 5-8 % of cuts exceed 25 s, and 2-3 % of 300-s runs (8 % of 120-s runs) are wrongly flagged
``second_half``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt

BATCH: Final = 5
MIN_BATCHES: Final = 10
NET_CELERITY_CUT_S: Final = 5.0  # see the module docstring
MAX_BINS: Final = 10_000_000  # per_second: a dense grid longer than this is not built


@dataclass(frozen=True, slots=True)
class WarmupCut:
    """Where the steady state starts in a series.

    ``cut_index``: the first value to keep (0 = keep all); ``cut_s``: the same in seconds
    (cut_index * step_s), None without a step; ``second_half``: MSER's minimum lay in the second
    half, so the run did not settle; ``reason``: why the cut is 0 or doubtful, or how the series
    was altered (NaN handling), None when there is nothing to say.
    """

    cut_index: int
    cut_s: float | None
    second_half: bool
    reason: str | None = None


def _fill_gaps(series: npt.NDArray[np.float64]) -> tuple[npt.NDArray[np.float64], int, int]:
    """(series without leading/trailing NaN and with inner NaN interpolated, leading, inner)."""
    ok = np.isfinite(series)
    idx = np.flatnonzero(ok)
    if idx.size == 0:
        return series[:0], 0, 0
    first, last = int(idx[0]), int(idx[-1])
    core = series[first : last + 1].copy()
    inner = ~ok[first : last + 1]
    n_inner = int(np.count_nonzero(inner))
    if n_inner:
        pos = np.arange(core.size)
        core[inner] = np.interp(pos[inner], pos[~inner], core[~inner])
    return core, first, n_inner


def _mser_curve(batches: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """MSER(d) for d = 0..k-1 (d batches dropped), vectorised with suffix sums."""
    # Scaling and centring do not move the argmin but keep the sums finite for any magnitude:
    # scale first (a mean of values near float's maximum overflows), then centre, then scale
    # the deviations to [-1, 1] so the sums of squares stay exact.
    z = batches
    for _ in range(2):
        scale = np.abs(z).max()
        if scale > 0:
            z = z / scale
        z = z - z.mean()
    count = np.arange(z.size, 0, -1, dtype=np.float64)
    s1 = np.cumsum(z[::-1])[::-1]
    s2 = np.cumsum((z * z)[::-1])[::-1]
    ss = np.maximum(s2 - s1 * s1 / count, 0.0)
    return np.asarray(ss / (count * count), dtype=np.float64)


def _first_minimum(curve: npt.NDArray[np.float64]) -> int:
    """The first d whose MSER equals the minimum up to rounding: where the kept batches are
    constant (a flat run) MSER is 0 in exact arithmetic but ~1e-32 noise in floating point, and
    the earliest such d is the least truncation."""
    low = float(curve.min())
    return int(np.argmax(curve <= low + 1e-12 * float(curve.max())))


def mser5(series: npt.ArrayLike, step_s: float | None = 1.0, batch_size: int = BATCH) -> WarmupCut:
    """MSER-5 truncation of a regular series (one value per ``step_s`` seconds)."""
    x = np.asarray(series, dtype=np.float64).ravel()

    def cut(index: int, second_half: bool, reason: str | None) -> WarmupCut:
        return WarmupCut(index, None if step_s is None else index * step_s, second_half, reason)

    core, lead, n_inner = _fill_gaps(x)
    notes = []
    if lead:
        notes.append(f"{lead} leading NaN value(s) cut")
    if n_inner:
        notes.append(f"{n_inner} inner NaN value(s) interpolated")
    k = core.size // batch_size
    if k < MIN_BATCHES:
        why = (
            f"too short for MSER-{batch_size}: {core.size} finite value(s), "
            f"need >= {MIN_BATCHES * batch_size}; no cut"
        )
        return cut(0, False, "; ".join([why, *notes]))
    # Trailing values that do not fill a batch are left out of the batches (White's MSER-5).
    with np.errstate(over="ignore"):  # an overflowing batch mean is caught just below
        batches = core[: k * batch_size].reshape(k, batch_size).mean(axis=1)
    if not np.all(np.isfinite(batches)):
        return cut(0, False, "; ".join(["batch means overflow; no cut", *notes]))
    curve = _mser_curve(batches)
    ignore_end = max(1, min(batch_size, k // 4))
    candidates = curve[: k - ignore_end]
    half = k // 2
    best = _first_minimum(candidates)
    second_half = best > half
    if second_half:
        best = _first_minimum(candidates[: half + 1])
        notes.insert(
            0,
            "MSER minimum in the second half: the run did not settle; "
            "cut is the best within the first half",
        )
    return cut(lead + best * batch_size, second_half, "; ".join(notes) or None)


def fixed_cut(t_s: npt.ArrayLike, cut_s: float = NET_CELERITY_CUT_S) -> npt.NDArray[np.bool_]:
    """Mask of the samples to keep under a fixed warm-up: t_s >= cut_s (NaN t_s -> False).

    The default is Net-Celerity's 5 s (module docstring).
    """
    t = np.asarray(t_s, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return np.asarray(t >= cut_s, dtype=bool)


def per_second(
    t_s: npt.ArrayLike,
    values: npt.ArrayLike,
    stat: Callable[..., Any] = np.median,
    step_s: float = 1.0,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """A regular series from samples: ``stat`` of the values in each [s, s + step_s) bin.

    Returns (bin starts in seconds, one value per bin) from the first to the last occupied bin;
    bins without samples are NaN (mser5 interpolates them). Samples with a non-finite time or
    value are ignored. np.median and np.mean are vectorised; any other stat runs per bin. If the
    grid would be longer than MAX_BINS only the occupied bins are returned.
    """
    if not step_s > 0:
        raise ValueError(f"step_s must be > 0, got {step_s!r}")
    t = np.asarray(t_s, dtype=np.float64).ravel()
    v = np.asarray(values, dtype=np.float64).ravel()
    if t.shape != v.shape:
        raise ValueError(f"t_s and values differ in length: {t.size} != {v.size}")
    ok = np.isfinite(t) & np.isfinite(v)
    t, v = t[ok], v[ok]
    if t.size == 0:
        return np.empty(0), np.empty(0)
    with np.errstate(all="ignore"):
        bins = np.floor(t / step_s)
        ok = np.isfinite(bins)
    bins, v = bins[ok], v[ok]
    if bins.size == 0:
        return np.empty(0), np.empty(0)
    order = np.lexsort((v, bins))  # by bin, then by value (the median needs sorted values)
    bins, v = bins[order], v[order]
    starts = np.flatnonzero(np.r_[True, bins[1:] != bins[:-1]])
    counts = np.diff(np.r_[starts, bins.size])
    with np.errstate(all="ignore"):
        if stat is np.median:
            lo = v[starts + (counts - 1) // 2]
            hi = v[starts + counts // 2]
            got = lo + (hi - lo) / 2  # equal to (lo + hi) / 2 without overflow
        elif stat is np.mean:
            got = np.add.reduceat(v, starts) / counts
        else:
            got = np.array([float(stat(v[s : s + c])) for s, c in zip(starts, counts, strict=True)])
    occupied = bins[starts]
    with np.errstate(all="ignore"):  # bins near float's ends: an infinite span is handled below
        span = (occupied[-1] - occupied[0]) + 1
        if not math.isfinite(span) or span > MAX_BINS:
            return occupied * step_s, np.asarray(got, dtype=np.float64)
    offset = np.rint(occupied - occupied[0]).astype(np.int64)
    size = int(offset[-1]) + 1
    series = np.full(size, np.nan)
    series[offset] = got
    seconds = (occupied[0] + np.arange(size)) * step_s
    return seconds, series
