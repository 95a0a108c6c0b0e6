"""How a metric grows with the player count: slopes per group, threshold crossings, growth factors.

Input is a polars DataFrame shaped like runs.parquet (one row per run: ``players``, a group column
such as ``transport`` or ``prototype``, the metric column, ``status``). Only runs with status ``ok``
and a finite metric count. Three questions, three functions:

- :func:`fit` — a straight line ``metric ~ players * C(group)`` (statsmodels OLS, formula API): per
  group the slope per player with a confidence interval, the intercept, n and R².
- :func:`crossing` — at which player count does the metric (a run's p50 or p95 RTT, say) cross a
  threshold such as 50 ms? Linear interpolation between the per-player-count medians, confidence
  interval by bootstrap over runs within each player count.
- :func:`growth` — ratio of the medians at two player counts with a bootstrap interval ("kcp RTT
  p50 grows 1.8x [1.6, 2.0] from 20 to 200 players").

None of them raises on data it cannot conclude from (no runs, NaN, one run, a constant metric);
the result carries ``note`` saying why, and the numbers it cannot give are None (or NaN inside
:class:`GroupSlope`).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import polars as pl
from scipy import stats as sps

from stats.compare import FEW_RUNS_FOR_BOOTSTRAP, ratio_of_medians
from stats.runs_frame import float_column, ok_runs

FloatArray = npt.NDArray[np.float64]

BOOTSTRAP_METHOD: Final = "percentile"
# A line through two player counts always fits; from three on, curvature would show in R².
MIN_COUNTS_FOR_LINEARITY: Final = 3
# Leverage above this means a run is (nearly) alone in fixing the line; see fit().
MAX_LEVERAGE: Final = 0.99
# Upper bound on resampled values held in memory at once (float64, ~32 MB).
_BOOTSTRAP_CHUNK_VALUES: Final = 4_000_000


# -- bootstrap helpers ---------------------------------------------------------------------------


def _bootstrap_medians(
    values: FloatArray, n_resamples: int, rng: np.random.Generator
) -> FloatArray:
    """Medians of n_resamples resamples (with replacement, same size) of values."""
    n = values.size
    out = np.empty(n_resamples, dtype=np.float64)
    chunk = max(1, _BOOTSTRAP_CHUNK_VALUES // max(n, 1))
    for start in range(0, n_resamples, chunk):
        stop = min(start + chunk, n_resamples)
        idx = rng.integers(0, n, size=(stop - start, n))
        with np.errstate(all="ignore"):  # values near 1e308 overflow when averaged
            out[start:stop] = np.median(values[idx], axis=1)
    return out


def percentile_bounds(draws: FloatArray, level: float) -> tuple[float, float]:
    """Percentile-bootstrap bounds; order statistics (no interpolation), so ±inf draws are fine."""
    alpha = 1.0 - level
    low, high = np.quantile(draws, [alpha / 2, 1 - alpha / 2], method="inverted_cdf")
    return float(low), float(high)


# -- fit ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GroupSlope:
    """Straight line of one group: metric = intercept + slope * players (NaN where not estimable).

    With ``log_y`` the line is for ln(metric): slope is the growth of ln(metric) per player, so
    exp(100 * slope) is the growth factor per 100 players.
    """

    group_value: str
    slope: float
    slope_low: float
    slope_high: float
    intercept: float
    intercept_low: float
    intercept_high: float
    n: int
    player_counts: int  # distinct player counts with an ok run
    r2: float
    level: float
    note: str | None


@dataclass(frozen=True)
class ScalingFit:
    """Result of :func:`fit`; ``results`` is the statsmodels results wrapper (None: no fit)."""

    metric: str
    group: str
    log_y: bool
    level: float
    cov_type: str
    groups: dict[str, GroupSlope]
    results: Any | None = field(repr=False)
    slopes_differ_pvalue: float | None  # Wald test: all groups share one slope
    note: str | None


def _nan_slope(value: str, n: int, counts: int, level: float, note: str) -> GroupSlope:
    nan = float("nan")
    return GroupSlope(value, nan, nan, nan, nan, nan, nan, n, counts, nan, level, note)


def fit(
    runs: pl.DataFrame,
    metric: str,
    group: str = "transport",
    *,
    log_y: bool = False,
    level: float = 0.95,
) -> ScalingFit:
    """OLS of ``metric ~ players * C(group)`` over the ok runs, with slopes per group.

    One model with a slope and intercept per group (the interaction form); each group's slope is
    the contrast players + players:C(group)[T.g] of that model, with its variance from the
    model's covariance. The covariance is HC3 (heteroscedasticity-consistent): the spread of RTT
    usually grows with the player count and differs between groups, and HC3 is the variant that
    behaves at small n (Long & Ervin 2000). In the fully interacted model the HC3 variance of a
    group's slope depends only on that group's residuals, so the interval equals a per-group
    HC3 fit; its t quantile uses the group's own n - 2 degrees of freedom. R² is per group (the
    fitted values of the interacted model equal per-group fits).

    Groups with fewer than two distinct player counts have no slope and stay out of the model;
    groups with fewer than three get a note (linearity cannot be checked). ``slopes_differ_pvalue``
    is the Wald test (HC3) that all fitted groups share one slope.
    """
    # Huge values overflow in statsmodels' lazily computed residuals; the notes say so instead.
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return _fit(runs, metric, group, log_y, level)


def _fit(runs: pl.DataFrame, metric: str, group: str, log_y: bool, level: float) -> ScalingFit:
    nothing = ScalingFit(metric, group, log_y, level, "HC3", {}, None, None, "no runs")
    if runs.height == 0:
        return nothing
    ok = ok_runs(runs, [metric, "players", group])
    y = float_column(ok, metric)
    players = float_column(ok, "players")
    groups = np.asarray(ok.get_column(group).cast(pl.String).fill_null("").to_list(), dtype=object)
    notes: list[str] = []
    keep = np.isfinite(y) & np.isfinite(players)
    if (dropped := int(ok.height - keep.sum())) > 0:
        notes.append(f"{dropped} ok run(s) without a finite {metric} or players left out")
    if log_y:
        positive = keep & (y > 0)
        if (dropped := int(keep.sum() - positive.sum())) > 0:
            notes.append(f"{dropped} run(s) with {metric} <= 0 left out of the log fit")
        keep = positive
        with np.errstate(all="ignore"):
            y = np.log(np.where(positive, y, 1.0))
    y, players, groups = y[keep], players[keep], groups[keep]
    if y.size == 0:
        return ScalingFit(
            metric, group, log_y, level, "HC3", {}, None, None, f"no ok runs with a finite {metric}"
        )

    slopes: dict[str, GroupSlope] = {}
    fitted: list[str] = []
    for value in sorted(set(groups.tolist())):
        in_g = groups == value
        counts = len(np.unique(players[in_g]))
        if counts < 2:
            slopes[value] = _nan_slope(
                value, int(in_g.sum()), counts, level,
                f"no slope: needs >= 2 distinct player counts, has {counts}",
            )  # fmt: skip
        else:
            fitted.append(value)
    if not fitted:
        return ScalingFit(
            metric, group, log_y, level, "HC3", slopes, None, None,
            "no group has runs at two different player counts",
        )  # fmt: skip

    use = np.isin(groups, fitted)
    results = _ols(y[use], players[use], groups[use], len(fitted) > 1)
    if results is None:
        notes.append("OLS failed (values too large?)")
        for value in fitted:
            in_g = groups == value
            slopes[value] = _nan_slope(
                value, int(in_g.sum()), len(np.unique(players[in_g])), level, "OLS failed"
            )
        return ScalingFit(metric, group, log_y, level, "HC3", slopes, None, None, "; ".join(notes))

    exog = np.asarray(results.model.exog, dtype=np.float64)
    params = np.asarray(results.params, dtype=np.float64)
    cov = np.asarray(results.cov_params(), dtype=np.float64)
    resid = np.asarray(results.resid, dtype=np.float64)
    g_used, p_used, y_used = groups[use], players[use], y[use]
    slope_rows: dict[str, FloatArray] = {}
    for value in fitted:
        in_g = np.flatnonzero(g_used == value)
        # The model is linear in players within a group, so the difference of two design rows
        # of that group divided by their player difference is exactly the group's slope contrast
        # (whatever the formula engine names the columns or picks as reference level).
        i = in_g[np.argmin(p_used[in_g])]
        j = in_g[np.argmax(p_used[in_g])]
        l_slope = (exog[j] - exog[i]) / (p_used[j] - p_used[i])
        l_int = exog[i] - p_used[i] * l_slope
        slope_rows[value] = l_slope
        n_g = in_g.size
        counts = len(np.unique(p_used[in_g]))
        g_notes = []
        if counts < MIN_COUNTS_FOR_LINEARITY:
            g_notes.append(f"only {counts} distinct player counts: linearity cannot be checked")
        dof = n_g - 2
        if dof < 1:
            g_notes.append(f"no interval: {n_g} runs for 2 parameters")
        else:
            # HC3 weights each squared residual by 1/(1-h)²; a run with leverage near 1 (alone at
            # its player count, with one other count) has a zero residual, so its spread is
            # missing from the interval.
            x = p_used[in_g] - np.mean(p_used[in_g])
            leverage = 1.0 / n_g + x**2 / np.sum(x**2)
            if np.max(leverage) > MAX_LEVERAGE:
                g_notes.append(
                    "a run alone determines the line at its player count: interval too narrow"
                )
        s_est, s_low, s_high = _contrast(l_slope, params, cov, dof, level)
        i_est, i_low, i_high = _contrast(l_int, params, cov, dof, level)
        with np.errstate(all="ignore"):
            ss_res = float(np.sum(resid[in_g] ** 2))
            ss_tot = float(np.sum((y_used[in_g] - np.mean(y_used[in_g])) ** 2))
            r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else float("nan")
        if not ss_tot > 0:
            g_notes.append("metric constant in this group: R² undefined")
        if not all(math.isfinite(v) for v in (s_est, s_low, s_high)):
            g_notes.append(
                "slope interval not finite: a run alone determines the line (HC3 undefined)"
                " or values overflow"
            )
        slopes[value] = GroupSlope(
            value, s_est, s_low, s_high, i_est, i_low, i_high, n_g, counts, r2, level,
            "; ".join(dict.fromkeys(g_notes)) or None,
        )  # fmt: skip

    differ_p = _slopes_differ(results, [slope_rows[v] for v in fitted])
    return ScalingFit(
        metric, group, log_y, level, "HC3", dict(sorted(slopes.items())), results, differ_p,
        "; ".join(notes) or None,
    )  # fmt: skip


def _ols(y: FloatArray, players: FloatArray, groups: npt.NDArray[Any], interact: bool) -> Any:
    """statsmodels OLS via the formula API; None if the fit itself fails."""
    import pandas as pd  # statsmodels' formula API needs pandas; only this function uses it
    import statsmodels.formula.api as smf

    frame = pd.DataFrame({"y": y, "players": players, "g": groups.astype(str)})
    formula = "y ~ players * C(g)" if interact else "y ~ players"
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")  # HC3 with leverage-1 points, overflow: handled below
            return smf.ols(formula, data=frame).fit(cov_type="HC3", use_t=True)
    except (np.linalg.LinAlgError, ValueError, ZeroDivisionError):
        return None


def _contrast(
    row: FloatArray, params: FloatArray, cov: FloatArray, dof: int, level: float
) -> tuple[float, float, float]:
    """Estimate and t interval of row @ params; NaN bounds without degrees of freedom."""
    with np.errstate(all="ignore"):
        est = float(row @ params)
        var = float(row @ cov @ row)
    if dof < 1 or not math.isfinite(var) or var < 0:
        return est, float("nan"), float("nan")
    half = float(sps.t.ppf(0.5 + level / 2, dof)) * math.sqrt(var)
    return est, est - half, est + half


def _slopes_differ(results: Any, rows: list[FloatArray]) -> float | None:
    """p-value of the Wald test that all slopes are equal (None with one group or on failure)."""
    if len(rows) < 2:
        return None
    r = np.vstack([row - rows[0] for row in rows[1:]])
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            p = float(results.wald_test(r, scalar=True).pvalue)
    except (np.linalg.LinAlgError, ValueError):
        return None
    return p if math.isfinite(p) else None


# -- crossing -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Crossing:
    """Player count where the metric's per-count median first reaches the threshold.

    Field names follow stats.intervals.Interval (estimate, low, high, level, method, n, note) so
    tables can take either. n is the number of runs used.
    """

    estimate: float | None
    low: float | None
    high: float | None
    level: float
    method: str
    n: int
    note: str | None
    threshold: float
    group_value: str
    player_counts: tuple[float, ...]
    medians: tuple[float, ...]


def first_crossing(players: FloatArray, medians: FloatArray, threshold: float) -> FloatArray:
    """Per row of medians (rows x player counts): the interpolated player count of the first
    median >= threshold; -inf if already the first one is, +inf if none is."""
    above = medians >= threshold
    reached = above.any(axis=1)
    first = np.argmax(above, axis=1)
    out = np.full(medians.shape[0], np.inf)
    out[reached & (first == 0)] = -np.inf
    rows = np.flatnonzero(reached & (first > 0))
    if rows.size:
        i = first[rows]
        m0, m1 = medians[rows, i - 1], medians[rows, i]  # m0 < threshold <= m1
        p0, p1 = players[i - 1], players[i]
        with np.errstate(all="ignore"):
            frac = np.clip((threshold - m0) / (m1 - m0), 0.0, 1.0)
        out[rows] = p0 + frac * (p1 - p0)
    return out


def crossing(
    runs: pl.DataFrame,
    metric: str,
    threshold: float,
    group_value: str,
    group: str = "transport",
    n_resamples: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> Crossing:
    """Player count at which the median of ``metric`` rises through ``threshold``.

    Per measured player count the median over the ok runs of ``group_value``; the crossing is
    the linear interpolation between the last count below the threshold and the first at or
    above it (the first upward crossing if the medians are not monotone). The interval is a
    percentile bootstrap: runs are resampled within each player count, the crossing recomputed.
    Resamples that do not reach the threshold count as beyond the largest count, so a bound
    that falls there is reported as None with a note rather than clipped.
    """
    empty = Crossing(None, None, None, level, BOOTSTRAP_METHOD, 0, "", threshold, group_value,
                     (), ())  # fmt: skip
    if runs.height == 0:
        return _replace_note(empty, "no runs")
    ok = ok_runs(runs, [metric, "players", group])
    ok = ok.filter(pl.col(group).cast(pl.String) == str(group_value))
    y, players = float_column(ok, metric), float_column(ok, "players")
    keep = np.isfinite(y) & np.isfinite(players)
    y, players = y[keep], players[keep]
    if y.size == 0:
        return _replace_note(empty, f"no ok runs of {group}={group_value} with a finite {metric}")
    if not math.isfinite(threshold):
        return _replace_note(empty, "threshold is not a finite number")
    counts = np.unique(players)
    samples = [y[players == p] for p in counts]
    with np.errstate(all="ignore"):  # the median of two values near 1e308 overflows to inf
        medians = np.array([np.median(s) for s in samples])
    base = Crossing(None, None, None, level, BOOTSTRAP_METHOD, int(y.size), None, threshold,
                    str(group_value), tuple(counts.tolist()), tuple(medians.tolist()))  # fmt: skip
    est = float(first_crossing(counts, medians[None, :], threshold)[0])
    if est == math.inf:
        return _replace_note(
            base,
            f"not reached within the measured range: median {medians[-1]:.6g} at the largest "
            f"measured player count {counts[-1]:g} is below {threshold:g}",
        )
    if est == -math.inf:
        return _replace_note(
            base,
            f"already reached at the smallest measured player count {counts[0]:g} "
            f"(median {medians[0]:.6g} >= {threshold:g}); crossing lies below the measured range",
        )
    rng = np.random.default_rng(seed)
    boot = np.column_stack([_bootstrap_medians(s, n_resamples, rng) for s in samples])
    low, high = percentile_bounds(first_crossing(counts, boot, threshold), level)
    notes = []
    if low == -math.inf:
        notes.append(f"lower bound below the smallest measured player count {counts[0]:g}")
    if high == math.inf:
        notes.append(f"upper bound beyond the largest measured player count {counts[-1]:g}")
    if (fewest := min(s.size for s in samples)) < FEW_RUNS_FOR_BOOTSTRAP:
        notes.append(f"only {fewest} run(s) at some player count: interval too narrow to trust")
    if np.any(np.diff(medians) < 0):
        notes.append("medians not monotone in the player count: first upward crossing")
    return Crossing(
        est,
        low if math.isfinite(low) else None,
        high if math.isfinite(high) else None,
        level, BOOTSTRAP_METHOD, int(y.size), "; ".join(notes) or None, threshold,
        str(group_value), tuple(counts.tolist()), tuple(medians.tolist()),
    )  # fmt: skip


def _replace_note(c: Crossing, note: str) -> Crossing:
    return Crossing(c.estimate, c.low, c.high, c.level, c.method, c.n, note, c.threshold,
                    c.group_value, c.player_counts, c.medians)  # fmt: skip


# -- growth -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Growth:
    """median(metric at p_high) / median(metric at p_low) with a bootstrap interval."""

    estimate: float | None
    low: float | None
    high: float | None
    level: float
    method: str
    n_low: int
    n_high: int
    note: str | None
    metric: str
    group_value: str
    p_low: float
    p_high: float

    def describe(self) -> str:
        """One sentence, e.g. 'kcp rtt_net_p50_us grows 1.80x [1.62, 2.01] from 20 to 200
        players'."""
        span = f"from {self.p_low:g} to {self.p_high:g} players"
        if self.estimate is None:
            return f"{self.group_value} {self.metric} {span}: no estimate ({self.note})"
        lo = "?" if self.low is None else f"{self.low:.2f}"
        hi = "?" if self.high is None else f"{self.high:.2f}"
        return f"{self.group_value} {self.metric} grows {self.estimate:.2f}x [{lo}, {hi}] {span}"


def growth(
    runs: pl.DataFrame,
    metric: str,
    group_value: str,
    p_low: float,
    p_high: float,
    group: str = "transport",
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> Growth:
    """Growth factor of the median of ``metric`` from ``p_low`` to ``p_high`` players.

    Percentile bootstrap (stats.compare.ratio_of_medians): the runs at each of the two player
    counts are resampled independently.
    """

    def result(
        estimate: float | None,
        low: float | None,
        high: float | None,
        note: str | None,
        n_lo: int,
        n_hi: int,
    ) -> Growth:
        return Growth(estimate, low, high, level, BOOTSTRAP_METHOD, n_lo, n_hi, note, metric,
                      str(group_value), float(p_low), float(p_high))  # fmt: skip

    if runs.height == 0:
        return result(None, None, None, "no runs", 0, 0)
    ok = ok_runs(runs, [metric, "players", group])
    ok = ok.filter(pl.col(group).cast(pl.String) == str(group_value))
    y, players = float_column(ok, metric), float_column(ok, "players")
    lo = y[(players == p_low) & np.isfinite(y)]
    hi = y[(players == p_high) & np.isfinite(y)]
    if lo.size == 0 or hi.size == 0:
        which = " and ".join(f"{p:g}" for p, s in ((p_low, lo), (p_high, hi)) if s.size == 0)
        note = f"no ok runs of {group}={group_value} with a finite {metric} at {which} players"
        return result(None, None, None, note, int(lo.size), int(hi.size))
    r = ratio_of_medians(
        lo, hi, level=level, seed=seed, method=BOOTSTRAP_METHOD, n_resamples=n_resamples
    )
    return result(
        _finite_or_none(r.estimate), _finite_or_none(r.low), _finite_or_none(r.high), r.note,
        int(lo.size), int(hi.size),
    )  # fmt: skip


def _finite_or_none(x: float) -> float | None:
    return x if math.isfinite(x) else None
