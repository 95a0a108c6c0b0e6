"""Comparing two groups of runs (a = baseline, b = candidate): effect sizes, tests, p adjustment.

Every function takes per-run values (one number per run; the run is the unit of independence) and
orients its effect so that a positive/above-1 value means b is larger than a:

- :func:`ratio_of_medians` median(b) / median(a) with a BCa or percentile bootstrap interval
  that resamples runs within each group (Kalibera & Jones 2013 report a ratio with an interval
  in the same way).
- :func:`cliffs_delta` P(B > A) - P(B < A) over all pairs (Cliff 1993; Romano et al. 2006 bands
  |d| < 0.147 negligible, < 0.33 small, < 0.474 medium, else large).
- :func:`hodges_lehmann` the median of all pairwise differences b_j - a_i (shift of b from a).
- :func:`mann_whitney_p` the two-sided Mann-Whitney U test (scipy.stats.mannwhitneyu): exact
  without ties, else the normal approximation with tie and continuity correction.
- :func:`holm` (family-wise error) and :func:`benjamini_hochberg` (false discovery rate) adjusted
  p-values, equal to statsmodels' multipletests(method="holm" / "fdr_bh").

Non-finite values are dropped. When nothing can be concluded (a group empty, a ratio undefined)
the floats are NaN and the Interval has NaN bounds and a note; nothing raises on such data.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Final

import numpy as np
import numpy.typing as npt
from scipy.stats import mannwhitneyu

from stats.intervals import (
    JACKKNIFE_MAX,
    METHODS,
    Interval,
    check_level,
    finite,
    interval_from_boot,
    join_notes,
    leave_one_out,
    resample_budget,
    resample_stats,
)

# Hodges-Lehmann: up to DIRECT_PAIRS differences are formed explicitly; beyond that the median is
# found by selection (counting pairs below a pivot with a binary search per b value) so that two
# groups of 10**6 values need neither 10**12 differences nor their memory.
DIRECT_PAIRS: Final = 4_000_000
ENUMERATE_MAX: Final = 2_000_000
PIVOT_SAMPLE: Final = 20_000
# Exact Mann-Whitney p-values up to this many run pairs (50 x 50 takes about a millisecond).
MW_EXACT_MAX_PAIRS: Final = 2500
# Below this many runs in a group, resampling shows little of the group's spread and a bootstrap
# interval is too narrow; results that bootstrap runs (here and in stats.scaling) note it.
FEW_RUNS_FOR_BOOTSTRAP: Final = 3


def _median_last(arr: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Median along the last axis without overflow: the two middle values are halved before
    they are added (numpy adds first, which overflows for values near float's maximum)."""
    x = np.sort(np.asarray(arr, dtype=np.float64), axis=-1)
    n = x.shape[-1]
    lo, hi = x[..., (n - 1) // 2], x[..., n // 2]
    return np.asarray(lo / 2 + hi / 2, dtype=np.float64)


def ratio_of_medians(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    level: float = 0.95,
    seed: int | Sequence[int] = 0,
    method: str = "bca",
    n_resamples: int = 10_000,
) -> Interval:
    """median(b) / median(a) with a bootstrap interval; runs are resampled within each group.

    ``method`` is "bca" or "percentile"; both read their bounds off the same resamples (same
    seed, same draws). ``seed`` is anything numpy.random.default_rng takes (an int, or a
    sequence such as [seed, cell hash] for one stream per cell). ``n`` of the result is the
    number of runs in a and b together. BCa uses the two-sample jackknife of
    scipy.stats.bootstrap; when it is degenerate the percentile interval is used and the note
    says so.

    Undefined (NaN estimate, note): a group without finite values, median(a) = 0, a ratio that
    overflows. No bounds (note): fewer than 2 runs in a group, or median(a*) 0 or of the other
    sign in some resample (the ratio has no meaningful value there, and dropping those
    resamples would narrow the interval exactly where the baseline is least certain). With fewer
    than FEW_RUNS_FOR_BOOTSTRAP runs in a group the bounds come with a note: resampling 2 runs shows
    little of their spread.
    """
    check_level(level)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    xa, da = finite(a)
    xb, db = finite(b)
    na, nb = int(xa.size), int(xb.size)
    n = na + nb
    drop = f"non-finite values dropped (a: {da}, b: {db})" if da or db else None

    def empty(estimate: float, why: str) -> Interval:
        return Interval(estimate, math.nan, math.nan, level, method, n, join_notes(drop, why))

    if na == 0 or nb == 0:
        return empty(math.nan, f"no values in {'a' if na == 0 else 'b'}")
    ma, mb = float(_median_last(xa)), float(_median_last(xb))
    if ma == 0.0:
        return empty(math.nan, "median of a is 0: ratio undefined")
    with np.errstate(all="ignore"):
        estimate = mb / ma
    if not math.isfinite(estimate):
        return empty(math.nan, "ratio not finite (values too large or too small)")
    if na < 2 or nb < 2:
        return empty(estimate, f"need >= 2 runs in each group for an interval (a: {na}, b: {nb})")

    def ratio(drawn: list[npt.NDArray[np.float64]]) -> npt.NDArray[np.float64]:
        den = _median_last(drawn[0])
        out = _median_last(drawn[1]) / np.where(den == 0, 1.0, den)
        # A resample whose baseline median is 0 or of the other sign has no meaningful ratio.
        out[np.sign(den) != np.sign(ma)] = np.nan
        return out

    reps, budget_note = resample_budget(na + nb, max(1, int(n_resamples)))
    rng = np.random.default_rng(seed)
    with np.errstate(all="ignore"):
        boot = resample_stats([xa, xb], ratio, reps, rng)
        if np.isnan(boot).any():
            return empty(estimate, "median of a is 0 or changes sign in some resamples")

        def jackknife() -> list[npt.NDArray[np.float64]]:
            return [mb / leave_one_out(xa, _median_last), leave_one_out(xb, _median_last) / ma]

        small = max(na, nb) <= JACKKNIFE_MAX
        low, high, used, note = interval_from_boot(
            boot, estimate, level, method, jackknife if small else None
        )
    few = None
    if (fewest := min(na, nb)) < FEW_RUNS_FOR_BOOTSTRAP:
        group = "a" if na == fewest else "b"
        few = f"interval from {fewest} runs in {group} is too narrow to trust"
    return Interval(estimate, low, high, level, used, n, join_notes(drop, budget_note, note, few))


def cliffs_delta(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """Cliff's delta = P(B > A) - P(B < A) over all m*n pairs (ties count 0), in [-1, 1].

    Computed by sorting, O((m + n) log m), so 10**6 values are fine. NaN if a group is empty.
    """
    xa, _ = finite(a)
    xb, _ = finite(b)
    m, n = xa.size, xb.size
    if m == 0 or n == 0:
        return math.nan
    xa.sort()
    below = np.searchsorted(xa, xb, side="left").sum()  # pairs with a_i < b_j
    above = (m - np.searchsorted(xa, xb, side="right")).sum()  # pairs with a_i > b_j
    return float((int(below) - int(above)) / (m * n))


def _kth_difference(
    a: npt.NDArray[np.float64], b: npt.NDArray[np.float64], k: int, rng: np.random.Generator
) -> float:
    """The k-th smallest (0-based) of all b_j - a_i, for sorted a and b, without forming them all.

    Candidates are kept as one index range per b_j (the differences of row j are sorted because
    a is); two pivots drawn from a random sample of the candidates around the wanted rank narrow
    the ranges (about 25-fold per round) until few enough remain to be formed and partitioned.
    """
    m, n = a.size, b.size
    total = m * n
    # Row j's candidates are a-indices [s_hi[j], s_lo[j]): differences in (lo, hi].
    s_lo = np.full(n, m, dtype=np.int64)  # lo = -inf: no difference is <= lo
    s_hi = np.zeros(n, dtype=np.int64)  # hi = +inf: every difference is <= hi
    lo, hi, below = -math.inf, math.inf, 0
    for _ in range(64):  # each round shrinks the candidates by ~25x; 64 is far more than needed
        widths = s_lo - s_hi
        cand = int(widths.sum())
        starts = np.cumsum(widths) - widths
        if cand <= ENUMERATE_MAX:
            rows = np.repeat(np.arange(n), widths)
            cols = np.repeat(s_hi, widths) + (np.arange(cand) - np.repeat(starts, widths))
            diffs = b[rows] - a[cols]
            return float(np.partition(diffs, k - below)[k - below])
        pick = rng.integers(0, cand, size=PIVOT_SAMPLE)
        rows = np.searchsorted(starts + widths, pick, side="right")
        sample = np.sort(b[rows] - a[s_hi[rows] + pick - starts[rows]])
        pos = (k - below) / cand * PIVOT_SAMPLE
        spread = 3 * math.sqrt(PIVOT_SAMPLE)
        for at in (pos - spread, pos + spread):
            p = float(sample[min(PIVOT_SAMPLE - 1, max(0, int(at)))])
            if not lo < p <= hi:
                continue
            s_p = np.searchsorted(a, b - p, side="left")
            le = total - int(s_p.sum())  # differences <= p
            if le > k:
                lt = total - int(np.searchsorted(a, b - p, side="right").sum())
                if lt <= k:  # the k-th difference equals p (ties)
                    return p
                hi, s_hi = p, s_p
            else:
                lo, s_lo, below = p, s_p, le
    return math.nan


def hodges_lehmann(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """Hodges-Lehmann shift: the median of all pairwise differences b_j - a_i. NaN if a group
    is empty. Above DIRECT_PAIRS pairs the median is selected without forming every difference
    (exact, as the pivots are themselves differences)."""
    xa, _ = finite(a)
    xb, _ = finite(b)
    m, n = xa.size, xb.size
    if m == 0 or n == 0:
        return math.nan
    with np.errstate(all="ignore"):
        if m * n <= DIRECT_PAIRS:
            return float(np.median(np.subtract.outer(xb, xa)))
        xa.sort()
        xb.sort()
        rng = np.random.default_rng(0)  # only steers the pivots; the answer does not depend on it
        total = m * n
        k_lo, k_hi = (total - 1) // 2, total // 2
        low = _kth_difference(xa, xb, k_lo, rng)
        high = low if k_hi == k_lo else _kth_difference(xa, xb, k_hi, rng)
        return float(np.mean([low, high]))


def mann_whitney_p(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """Two-sided Mann-Whitney U p-value; non-finite values are dropped.

    - No ties and at most MW_EXACT_MAX_PAIRS run pairs: the exact null distribution of U.
      scipy's default ("auto") switches to the normal approximation above 8 runs a side, which
      overstates small p (10 vs 10 fully separated: 1.8e-4 instead of the exact 1.1e-5) and so
      costs power after a Benjamini-Hochberg or Holm adjustment.
    - Ties (or more pairs): the normal approximation with tie correction and continuity
      correction. The exact distribution assumes no ties; a permutation test would handle them
      but needs a seed and thousands of resamples per call, while per-run summaries (medians of
      microsecond values) rarely tie, and when they do it is in few places, where the corrected
      normal approximation is close.
    - Both groups the same constant: 1.0. Nothing separates the groups, so there is no evidence
      of a difference (scipy's formula divides 0 by 0 here).
    - A group without finite values: NaN (there is no test).
    """
    xa, _ = finite(a)
    xb, _ = finite(b)
    if xa.size == 0 or xb.size == 0:
        return math.nan
    pooled = np.concatenate([xa, xb])
    if pooled.min() == pooled.max():
        return 1.0
    ties = np.unique(pooled).size < pooled.size
    exact = not ties and xa.size * xb.size <= MW_EXACT_MAX_PAIRS
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        p = float(
            mannwhitneyu(
                xb, xa, alternative="two-sided", method="exact" if exact else "asymptotic"
            ).pvalue
        )
    return p if math.isfinite(p) else math.nan


def _valid_p(pvalues: npt.ArrayLike) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    p = np.asarray(pvalues, dtype=np.float64).ravel()
    ok = np.isfinite(p) & (p >= 0.0) & (p <= 1.0)
    return p, ok


def _adjusted(
    pvalues: npt.ArrayLike,
    step: Callable[[npt.NDArray[np.float64]], npt.NDArray[np.float64]],
) -> npt.NDArray[np.float64]:
    """Apply a multiple-testing step to the valid p-values sorted ascending and put the
    adjusted values back in input order; invalid entries stay NaN and do not count in m."""
    p, ok = _valid_p(pvalues)
    out = np.full(p.shape, np.nan)
    v = p[ok]
    if v.size == 0:
        return out
    order = np.argsort(v, kind="stable")
    res = np.empty(v.size)
    res[order] = step(v[order])
    out[ok] = res
    return out


def holm(pvalues: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Holm (1979) step-down adjusted p-values (controls the family-wise error rate).

    adj_(i) = max over k <= i of min(1, (m - k + 1) p_(k)) for sorted p. NaN or out-of-[0, 1]
    entries are not tests: they stay NaN and do not count in m. Same order as the input.
    """
    return _adjusted(
        pvalues,
        lambda s: np.minimum(1.0, np.maximum.accumulate((s.size - np.arange(s.size)) * s)),
    )


def benjamini_hochberg(pvalues: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Benjamini-Hochberg (1995) step-up adjusted p-values (false discovery rate; valid under
    independence or positive dependence).

    adj_(i) = min over k >= i of min(1, m p_(k) / k) for sorted p. NaN or out-of-[0, 1] entries
    stay NaN and do not count in m. Same order as the input.
    """
    return _adjusted(
        pvalues,
        lambda s: np.minimum(
            1.0, np.minimum.accumulate((s * s.size / np.arange(1, s.size + 1))[::-1])[::-1]
        ),
    )
