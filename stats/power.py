"""How small a change a comparison of runs can detect: the minimum detectable effect.

A nightly regression check compares tonight's runs of a cell with a baseline's. How small a
slowdown it can see depends on how much runs of that cell differ from each other. For run values
that are roughly log-normal (latencies, CPU), the ratio of medians that a two-sided test at
``alpha`` detects with probability ``power`` is

    exp((z_{1-alpha/2} + z_{power}) * sigma_log * sqrt(1/n_a + 1/n_b))

with sigma_log the standard deviation of the log run values. The comparisons use the
Mann-Whitney test, whose asymptotic efficiency against the t test is 3/pi for normal data, so
each n is scaled by 3/pi. This is a planning figure, stated beside the campaign and its
report; the decisions themselves use the measured intervals (stats/compare.py).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from scipy import stats as st

MANN_WHITNEY_EFFICIENCY = 3 / math.pi
ALPHA = 0.05
POWER = 0.8


def log_sd(values: npt.ArrayLike) -> float:
    """Sample standard deviation of the log of the positive finite values (NaN with fewer than
    two)."""
    arr = np.asarray(values, dtype=float)
    arr = arr[np.isfinite(arr) & (arr > 0)]
    if arr.size < 2:
        return math.nan
    return float(np.std(np.log(arr), ddof=1))


def minimum_detectable_ratio(
    sigma_log: float, n_a: int, n_b: int, alpha: float = ALPHA, power: float = POWER
) -> float:
    """The ratio of medians (> 1) detected with probability power by a two-sided test at alpha
    between n_a and n_b runs whose log values have standard deviation sigma_log."""
    if not (0 < alpha < 1 and 0 < power < 1):
        raise ValueError(f"alpha {alpha} and power {power}: expected values in (0, 1)")
    if n_a < 2 or n_b < 2 or not math.isfinite(sigma_log):
        return math.nan
    z = st.norm.ppf(1 - alpha / 2) + st.norm.ppf(power)
    scale = math.sqrt(1 / (n_a * MANN_WHITNEY_EFFICIENCY) + 1 / (n_b * MANN_WHITNEY_EFFICIENCY))
    return math.exp(z * sigma_log * scale)


def cell_mde(values: npt.ArrayLike, n_other: int | None = None) -> float:
    """The minimum detectable ratio of a cell whose runs gave values, against as many runs
    again (or n_other runs): tonight's runs against a baseline of the same size."""
    arr = np.asarray(values, dtype=float)
    n = int(np.isfinite(arr).sum())
    return minimum_detectable_ratio(log_sd(arr), n, n if n_other is None else n_other)


def paired_minimum_detectable_ratio(
    sd_log_diff: float, n_pairs: int, alpha: float = ALPHA, power: float = POWER
) -> float:
    """The ratio detected with probability power by a two-sided test at alpha on n_pairs paired
    runs (each version's run of one round), whose log ratios have standard deviation
    sd_log_diff: what measuring the versions side by side could see if the decision paired
    them (Wilcoxon signed-rank, the same 3/pi efficiency against a t-test as Mann-Whitney's)."""
    if not (0 < alpha < 1 and 0 < power < 1):
        raise ValueError(f"alpha {alpha} and power {power}: expected values in (0, 1)")
    if n_pairs < 2 or not math.isfinite(sd_log_diff):
        return math.nan
    z = st.norm.ppf(1 - alpha / 2) + st.norm.ppf(power)
    return math.exp(z * sd_log_diff / math.sqrt(n_pairs * MANN_WHITNEY_EFFICIENCY))


def two_sample_mde(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """The minimum detectable ratio of a comparison of runs a with runs b, from their pooled
    log spread (the mean of the two variances: each side's own noise counts alike)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    sds = [log_sd(x), log_sd(y)]
    if any(not math.isfinite(sd) for sd in sds):
        return math.nan
    pooled = math.sqrt(sum(sd**2 for sd in sds) / 2)
    return minimum_detectable_ratio(pooled, int(np.isfinite(x).sum()), int(np.isfinite(y).sum()))
