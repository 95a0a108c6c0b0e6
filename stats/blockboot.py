"""Within-run intervals: a moving-block bootstrap over the seconds of one run.

Where a configuration ran only once (the earlier studies' data), the only uncertainty that can
be estimated is within the run: how much a statistic would move if the run's seconds had come
out differently. Seconds are resampled in moving blocks long enough to span the series'
autocorrelation, so correlated seconds are not counted as independent evidence. Such an
interval does not cover run-to-run variation and must be labelled as within-run wherever it is
shown (the Net-Celerity re-analysis, stats/reanalysis, does).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from stats.scaling import percentile_bounds
from stats.warmup import per_second

FloatArray = npt.NDArray[np.float64]

LEVEL: Final = 0.95
N_RESAMPLES: Final = 2000
SEED: Final = 0
MIN_BLOCK_DIVISOR: Final = 4  # a block is at most a quarter of the window: >= 4 blocks per draw


def choose_block(series: npt.ArrayLike) -> tuple[int, str | None]:
    """Block length (in series steps) for a moving-block bootstrap, and a note if capped.

    At least ceil(n^(1/3)) (the order Hall, Horowitz & Jing 1995 give for variance estimation),
    and at least the first lag where the autocorrelation is inside the white-noise band
    1.96 / sqrt(n), so a block spans the memory of the series; at most n / 4, so a resample
    still mixes four blocks (the note says when the cap was hit: then the interval is too
    narrow, because the series is correlated over longer than that).
    """
    x = np.asarray(series, dtype=np.float64)
    x = x[np.isfinite(x)]
    n = int(x.size)
    if n < 2:
        return 1, None
    base = math.ceil(n ** (1 / 3))
    cap = max(1, n // MIN_BLOCK_DIVISOR)
    z = x - x.mean()
    denom = float(np.dot(z, z))
    lag = 1
    if denom > 0:
        band = 1.96 / math.sqrt(n)
        lag = n  # not found below: correlated over the whole series
        for k in range(1, n):
            if float(np.dot(z[:-k], z[k:])) / denom < band:
                lag = k
                break
    block = max(base, lag)
    if block > cap:
        return cap, (
            f"autocorrelation lasts {lag} steps, longer than the {cap}-step block cap "
            f"(a quarter of the window): interval too narrow"
        )
    return block, None


def block_indices(
    n: int, block: int, n_resamples: int, rng: np.random.Generator
) -> npt.NDArray[np.int64]:
    """(n_resamples, n) positions of a moving-block bootstrap: ceil(n / block) blocks of
    ``block`` consecutive positions, each starting uniformly at 0..n - block, joined and cut
    to n."""
    block = min(max(1, block), n)
    k = -(-n // block)
    starts = rng.integers(0, n - block + 1, size=(n_resamples, k))
    idx = starts[:, :, None] + np.arange(block)[None, None, :]
    return np.asarray(idx.reshape(n_resamples, k * block)[:, :n], dtype=np.int64)


@dataclass(frozen=True, slots=True)
class WithinRun:
    """A statistic of one run with its within-run (moving-block bootstrap) interval."""

    estimate: float
    low: float
    high: float
    draws: FloatArray  # the bootstrap statistics, for propagating (crossings)
    block: int  # block length in steps (seconds for RTT)
    steps: int  # steps (seconds) in the window
    note: str | None


def _nan_within(note: str) -> WithinRun:
    nan = math.nan
    return WithinRun(nan, nan, nan, np.empty(0), 0, 0, note)


def _rank_values(
    cum: npt.NDArray[np.int64],
    uniq: FloatArray,
    weights: npt.NDArray[np.int64],
    rank: npt.NDArray[np.int64],
) -> FloatArray:
    """Per resample b: the value at 0-based ``rank[b]`` of the pooled samples of its seconds.

    ``cum[s, j]`` counts second s's samples <= uniq[j]; ``weights[b, s]`` is how often resample b
    took second s. A vectorised binary search for the smallest j with count(<= uniq[j]) > rank.
    """
    b = weights.shape[0]
    lo = np.zeros(b, dtype=np.int64)
    hi = np.full(b, uniq.size - 1, dtype=np.int64)
    for _ in range(int(uniq.size).bit_length() + 1):  # a binary search over uniq: log2 steps
        if not np.any(lo < hi):
            break
        mid = (lo + hi) // 2
        below = np.einsum("bs,sb->b", weights, cum[:, mid])
        right = below <= rank
        lo = np.where(right, mid + 1, lo)
        hi = np.where(right, hi, mid)
    return uniq[lo]


def block_bootstrap_quantile(
    t_s: npt.ArrayLike,
    values: npt.ArrayLike,
    q: float,
    start_s: float,
    end_s: float,
    n_resamples: int = N_RESAMPLES,
    seed: int = SEED,
    level: float = LEVEL,
    block: int | None = None,
) -> WithinRun:
    """The q-quantile (numpy's linear method) of the values with start_s <= t_s < end_s, and its
    within-run interval: whole seconds are resampled in moving blocks and the quantile of all
    samples in the resampled seconds is taken (percentile interval). ``block`` in seconds; by
    default :func:`choose_block` on the per-second medians."""
    t = np.asarray(t_s, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    keep = np.isfinite(t) & np.isfinite(v) & (t >= start_s) & (t < end_s)
    t, v = t[keep], v[keep]
    if v.size == 0:
        return _nan_within(f"no samples in [{start_s:g}, {end_s:g}) s")
    estimate = float(np.percentile(v, 100 * q, method="linear"))
    n_sec = max(1, math.ceil(end_s - start_s))
    sec = np.minimum(np.floor(t - start_s).astype(np.int64), n_sec - 1)
    notes = []
    if block is None:
        _, medians = per_second(t - start_s, v)
        block, note = choose_block(medians)
        if note:
            notes.append(note)
    block = min(max(1, block), n_sec)
    uniq, inverse = np.unique(v, return_inverse=True)
    counts = np.zeros((n_sec, uniq.size), dtype=np.int64)
    np.add.at(counts, (sec, inverse), 1)
    cum = np.cumsum(counts, axis=1)
    per_sec = cum[:, -1]
    rng = np.random.default_rng(seed)
    idx = block_indices(n_sec, block, n_resamples, rng)
    weights = np.zeros((n_resamples, n_sec), dtype=np.int64)
    np.add.at(weights, (np.repeat(np.arange(n_resamples), n_sec), idx.ravel()), 1)
    total = weights @ per_sec
    empty = total == 0
    h = np.maximum(total - 1, 0) * q
    k0 = np.floor(h).astype(np.int64)
    k1 = np.minimum(k0 + 1, np.maximum(total - 1, 0))
    v0 = _rank_values(cum, uniq, weights, k0)
    v1 = _rank_values(cum, uniq, weights, k1)
    draws = v0 + (h - k0) * (v1 - v0)
    draws[empty] = np.nan
    if np.any(empty):
        notes.append(f"{int(empty.sum())} resample(s) without samples left out")
    good = draws[np.isfinite(draws)]
    low, high = percentile_bounds(good, level) if good.size else (math.nan, math.nan)
    if np.count_nonzero(per_sec) < n_sec:
        notes.append(f"{n_sec - int(np.count_nonzero(per_sec))} second(s) without samples")
    return WithinRun(estimate, low, high, draws, block, n_sec, "; ".join(notes) or None)


def block_bootstrap_mean(
    series: npt.ArrayLike,
    n_resamples: int = N_RESAMPLES,
    seed: int = SEED,
    level: float = LEVEL,
    block: int | None = None,
) -> WithinRun:
    """Mean of a regular series (one value per monitor sample) with a within-run moving-block
    bootstrap interval; non-finite values are left out before blocking."""
    x = np.asarray(series, dtype=np.float64)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return _nan_within("no finite values")
    note = None
    if block is None:
        block, note = choose_block(x)
    rng = np.random.default_rng(seed)
    draws = x[block_indices(x.size, block, n_resamples, rng)].mean(axis=1)
    low, high = percentile_bounds(draws, level)
    return WithinRun(float(x.mean()), low, high, draws, min(block, x.size), int(x.size), note)
