"""Nightly regressions: per-cell comparison of two sets of runs, change points in a history.

- :func:`per_cell` compares a candidate campaign with a baseline, cell by cell: the ratio of
  medians candidate/baseline with a bootstrap interval, a Mann-Whitney p-value, and
  Benjamini-Hochberg adjustment across the cells. A cell is a regression (or an improvement)
  only when the change is both large enough to matter and not explained by noise.
- :func:`change_points` finds level shifts in a series of nightly values with apache-otava's
  E-divisive implementation (the windowed "Hunter" variant, :func:`otava.analysis.
  compute_change_points`), tuned below for a 10 % step at 5 % noise.

Nothing here raises on data it cannot conclude from; results carry a note saying why.
"""

from __future__ import annotations

import math
import warnings
import zlib
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt
import polars as pl

from stats.compare import benjamini_hochberg, mann_whitney_p, ratio_of_medians
from stats.runs_frame import float_column, ok_runs

FloatArray = npt.NDArray[np.float64]

REGRESSION: Final = "regression"
IMPROVEMENT: Final = "improvement"
NO_CHANGE: Final = "no change"
TOO_FEW_RUNS: Final = "inconclusive (too few runs)"
UNDEFINED: Final = "inconclusive (ratio undefined)"

# Fewer runs than this on either side cannot give a verdict: with 4 vs 4 runs the smallest
# two-sided Mann-Whitney p is 2/70 = 0.029, which no BH adjustment over several cells survives;
# 5 vs 5 reaches 2/252 = 0.008.
MIN_RUNS: Final = 5
# The ratio's interval: percentile, whose bounds are order statistics of the resampled ratios.
RATIO_METHOD: Final = "percentile"

# -- change points: otava.analysis.compute_change_points parameters ----------------------------
# Measured on simulated series of 60 points, 5 % Gaussian noise, one 10 % step placed uniformly
# in [10, 50] (400 series; a detection counts if within ±3 points), and on stationary series of
# 60 and 300 points (see tests/python/unit/test_stats_regress.py):
#   window 30, p 0.001: recall 0.92, false alarms 0.0011 (60) / 0.0010 (300) per point
#   window 50, p 0.001: recall 0.94, 0.0010 / 0.0013;  window 60, p 0.001: 0.945, 0.0006 / 0.0011
#   window 60, p 0.005: recall 0.955, 0.0033 / 0.0043; window 100, p 0.001: 0.95, 0.0006 / 0.0003
# Recall saturates near 0.95: the misses are location errors of 4-10 points (a 2-sigma step is
# hard to place exactly), not missed steps, so a looser p-value buys false alarms, not recall.
#
# Window: split() slides windows of this length by half a window, so every change has at least
# a quarter window (15 points) on its shorter side in some window; 15 vs 15 points of a 2-sigma
# step give t ~ 5.5, far past the p-value below. Larger windows gain little recall at 60 points
# and cost O(window²) per window.
CP_WINDOW_LEN: Final = 60
# otava's default. The split step uses 10x this (0.01) to collect weak candidates; the merge step
# keeps only those with a two-sided t-test p below this value.
CP_MAX_PVALUE: Final = 0.001
# Relative change of the segment means that counts at all; the same 5 % as per_cell's min_effect,
# so a statistically clear 2 % drift in a very quiet metric is not reported. It trims false
# alarms on long stationary series (0.0018 -> 0.0011 per point at window 60) at no recall cost.
CP_MIN_MAGNITUDE: Final = 0.05
# Fewer points than this hold no testable change (two segments of at least 2 points each).
CP_MIN_POINTS: Final = 4


# -- per cell -----------------------------------------------------------------------------------


@dataclass(frozen=True)  # no slots: callers serialise verdicts with vars() / __dict__
class CellVerdict:
    """Candidate vs baseline in one cell; ratio = median(candidate) / median(baseline)."""

    cell_id: str
    metric: str
    verdict: str  # REGRESSION, IMPROVEMENT, NO_CHANGE, TOO_FEW_RUNS or UNDEFINED
    regression: bool
    ratio: float | None
    ci_low: float | None
    ci_high: float | None
    level: float
    method: str
    p_value: float | None  # two-sided Mann-Whitney U
    p_adjusted: float | None  # Benjamini-Hochberg across the cells with a p-value
    n_baseline: int
    n_candidate: int
    median_baseline: float | None
    median_candidate: float | None
    note: str | None


def _finite_by_cell(runs: pl.DataFrame, metric: str) -> dict[str, FloatArray]:
    if runs.height == 0:
        return {}
    ok = ok_runs(runs, ["cell_id", metric])
    values = float_column(ok, metric)
    cells = np.asarray(ok.get_column("cell_id").cast(pl.String).fill_null("").to_list(), object)
    return {c: values[(cells == c) & np.isfinite(values)] for c in sorted(set(cells.tolist()))}


def per_cell(
    baseline: pl.DataFrame,
    candidate: pl.DataFrame,
    metric: str,
    min_effect: float = 0.05,
    level: float = 0.95,
    higher_is_worse: bool = True,
    seed: int = 0,
    n_resamples: int = 2000,
) -> list[CellVerdict]:
    """Verdicts for every cell_id with ok runs in both tables, sorted by cell_id.

    A cell is a regression when all three hold: the point ratio is beyond 1 + min_effect (a
    change big enough to matter), the percentile-bootstrap interval of the ratio excludes 1 (the
    size is not noise), and the Benjamini-Hochberg adjusted Mann-Whitney p is at most 1 - level
    (false discovery rate across the cells compared). An improvement is the mirror image, below
    1 / (1 + min_effect) (symmetric on the log scale). With ``higher_is_worse=False`` (throughput,
    say) the two swap. Cells with fewer than MIN_RUNS finite ok runs on a side are
    TOO_FEW_RUNS and take no part in the BH adjustment. Each cell's bootstrap has its own
    stream, derived from seed and cell_id, so a verdict does not depend on which other cells
    are present.
    """
    base, cand = _finite_by_cell(baseline, metric), _finite_by_cell(candidate, metric)
    alpha = 1.0 - level
    up, down = 1.0 + min_effect, 1.0 / (1.0 + min_effect)
    prepared = []
    for cell in sorted(base.keys() & cand.keys()):
        b, c = base[cell], cand[cell]
        with np.errstate(all="ignore"):  # the median of two values near 1e308 overflows to inf
            med_b = float(np.median(b)) if b.size else None
            med_c = float(np.median(c)) if c.size else None
        if min(b.size, c.size) < MIN_RUNS:
            note = f"need >= {MIN_RUNS} ok runs with a finite {metric} on each side"
            prepared.append((cell, b, c, med_b, med_c, None, None, note))
            continue
        ratio = ratio_of_medians(
            b, c, level=level, seed=[seed, zlib.crc32(cell.encode())], method=RATIO_METHOD,
            n_resamples=n_resamples,
        )  # fmt: skip
        p_mw = mann_whitney_p(b, c)
        p_value = p_mw if math.isfinite(p_mw) else None
        prepared.append((cell, b, c, med_b, med_c, ratio, p_value, ratio.note))
    adjusted = benjamini_hochberg([np.nan if p[6] is None else p[6] for p in prepared])

    out = []
    for (cell, b, c, med_b, med_c, ratio, p, note), q in zip(prepared, adjusted, strict=True):
        notes = [note] if note else []
        q_val = float(q) if math.isfinite(q) else None
        est = low = high = None
        if ratio is None:
            verdict = TOO_FEW_RUNS
        elif not math.isfinite(ratio.estimate):
            verdict = UNDEFINED
        else:
            est = ratio.estimate
            low = ratio.low if math.isfinite(ratio.low) else None
            high = ratio.high if math.isfinite(ratio.high) else None
            significant = q_val is not None and q_val <= alpha
            higher = est > up and low is not None and low > 1.0 and significant
            lower = est < down and high is not None and high < 1.0 and significant
            if higher or lower:
                verdict = REGRESSION if higher == higher_is_worse else IMPROVEMENT
            else:
                verdict = NO_CHANGE
                excludes_one = (low is not None and low > 1.0) or (high is not None and high < 1.0)
                if excludes_one and not significant:
                    notes.append(f"interval excludes 1 but BH-adjusted p > {alpha:g}")
                elif excludes_one:
                    notes.append(f"significant but within ±{min_effect:.0%}")
                if (high is None or high > up) or (low is None or low < down):
                    notes.append(f"interval does not rule out a change beyond ±{min_effect:.0%}")
        out.append(
            CellVerdict(
                cell,
                metric,
                verdict,
                verdict == REGRESSION,
                est,
                low,
                high,
                level,
                RATIO_METHOD,
                p,
                q_val,
                int(b.size),
                int(c.size),
                med_b,
                med_c,
                "; ".join(notes) or None,
            )
        )
    return out


# -- change points ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ChangePoints:
    """Indices of the first value of each new regime (into the input, NaN positions included)."""

    indices: list[int]
    magnitudes: list[float]  # otava's relative change of the segment means at each index
    pvalues: list[float]  # two-sided t-test of the adjacent segments
    n: int  # finite values analysed
    note: str | None


def detect_change_points(
    values: npt.ArrayLike,
    window_len: int = CP_WINDOW_LEN,
    max_pvalue: float = CP_MAX_PVALUE,
    min_magnitude: float = CP_MIN_MAGNITUDE,
) -> ChangePoints:
    """Change points of a history series with otava.analysis.compute_change_points.

    Non-finite values are left out (not forward-filled, which would invent flat stretches) and
    indices map back to the input. The series is divided by its largest absolute value first:
    otava's statistics are scale-invariant, and this keeps huge values from overflowing its
    pairwise-distance sums.
    """
    from otava.analysis import compute_change_points  # import cost only when used

    arr = np.asarray(values, dtype=np.float64).ravel()
    finite = np.flatnonzero(np.isfinite(arr))
    x = arr[finite]
    notes = []
    if finite.size < arr.size:
        notes.append(f"{arr.size - finite.size} non-finite value(s) left out")
    if x.size < CP_MIN_POINTS:
        notes.append(f"too few finite values ({x.size}) to find a change (need {CP_MIN_POINTS})")
        return ChangePoints([], [], [], int(x.size), "; ".join(notes))
    if np.all(x == x[0]):
        notes.append("constant series: no change possible")
        return ChangePoints([], [], [], int(x.size), "; ".join(notes))
    scale = float(np.max(np.abs(x)))
    # otava's detector slices its windows only for a list: an ndarray is analysed whole in every
    # window (with shifted indices), so pass a list of floats.
    series = (x / scale).tolist()
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        # t-tests of zero-variance segments; ratios of segment means near zero
        warnings.simplefilter("ignore")
        cps, _weak = compute_change_points(
            series, window_len=window_len, max_pvalue=max_pvalue, min_magnitude=min_magnitude
        )
        cps = sorted(cps, key=lambda cp: cp.index)
        magnitudes = [float(cp.stats.change_magnitude()) for cp in cps]
    return ChangePoints(
        [int(finite[cp.index]) for cp in cps],
        magnitudes,
        [float(cp.stats.pvalue) for cp in cps],
        int(x.size),
        "; ".join(notes) or None,
    )


def change_points(
    values: npt.ArrayLike,
    window_len: int = CP_WINDOW_LEN,
    max_pvalue: float = CP_MAX_PVALUE,
    min_magnitude: float = CP_MIN_MAGNITUDE,
) -> list[int]:
    """Indices of change points in ``values`` (see :func:`detect_change_points` for details and
    the note when none can be found)."""
    return detect_change_points(values, window_len, max_pvalue, min_magnitude).indices
