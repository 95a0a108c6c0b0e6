"""stats.regress: per-cell verdicts and otava change points on simulated nightly data."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stats.compare import benjamini_hochberg
from stats.regress import (
    IMPROVEMENT,
    NO_CHANGE,
    REGRESSION,
    TOO_FEW_RUNS,
    change_points,
    detect_change_points,
    per_cell,
)

METRIC = "rtt_net_p50_us"


def make_runs(
    rng: np.random.Generator,
    cells: list[str],
    n_runs: int,
    factor: float = 1.0,
    noise: float = 0.03,
) -> pl.DataFrame:
    """n_runs ok runs per cell around 20 ms * factor with relative Gaussian noise, plus one
    failed run per cell with an absurd value that must never count."""
    rows = []
    for cell in cells:
        rows += [
            (cell, "ok", float(v))
            for v in 20_000 * factor * (1 + noise * rng.standard_normal(n_runs))
        ]
        rows.append((cell, "failed", 1e12))
    return pl.DataFrame(rows, schema=["cell_id", "status", METRIC], orient="row")


# -- per_cell -----------------------------------------------------------------------------------


def test_ten_percent_slowdown_is_flagged() -> None:
    rng = np.random.default_rng(1)
    flagged = covered = 0
    for seed in range(40):
        base = make_runs(rng, ["c"], 10)
        cand = make_runs(rng, ["c"], 10, factor=1.10)
        (v,) = per_cell(base, cand, METRIC, seed=seed)
        flagged += v.verdict == REGRESSION and v.regression
        assert v.ci_low is not None and v.ci_high is not None
        covered += v.ci_low <= 1.10 <= v.ci_high
        assert v.p_value is not None and v.p_adjusted == v.p_value  # one cell: BH changes nothing
        assert v.n_baseline == v.n_candidate == 10  # the failed runs do not count
    assert flagged >= 38, flagged
    # Percentile bootstrap of a median from 10 runs covers a little below the nominal 95 %.
    assert covered >= 34, covered


def test_speedup_is_an_improvement_and_direction_can_flip() -> None:
    rng = np.random.default_rng(2)
    base = make_runs(rng, ["c"], 10)
    faster = make_runs(rng, ["c"], 10, factor=0.90)
    (v,) = per_cell(base, faster, METRIC)
    assert v.verdict == IMPROVEMENT and not v.regression
    # For a throughput, lower is worse: the same data is a regression.
    (v,) = per_cell(base, faster, METRIC, higher_is_worse=False)
    assert v.verdict == REGRESSION and v.regression


def test_small_significant_change_is_not_a_regression() -> None:
    # 2 % at 0.5 % noise: clearly real, but below min_effect.
    rng = np.random.default_rng(3)
    base = make_runs(rng, ["c"], 20, noise=0.005)
    cand = make_runs(rng, ["c"], 20, factor=1.02, noise=0.005)
    (v,) = per_cell(base, cand, METRIC)
    assert v.verdict == NO_CHANGE and v.ci_low is not None and v.ci_low > 1.0
    assert v.note is not None and "within" in v.note
    (v,) = per_cell(base, cand, METRIC, min_effect=0.01)
    assert v.verdict == REGRESSION


def test_identical_cells_give_few_false_flags() -> None:
    rng = np.random.default_rng(4)
    cells = [f"cell-{i:02d}" for i in range(50)]
    flags = []
    for seed in range(10):
        verdicts = per_cell(make_runs(rng, cells, 10), make_runs(rng, cells, 10), METRIC, seed=seed)
        assert len(verdicts) == 50
        flags.append(sum(v.verdict != NO_CHANGE for v in verdicts))
    assert max(flags) <= 2 and sum(flags) <= 5, flags


def test_one_regressed_cell_among_fifty_survives_bh() -> None:
    rng = np.random.default_rng(5)
    cells = [f"cell-{i:02d}" for i in range(50)]
    base = make_runs(rng, cells, 10)
    cand = pl.concat([make_runs(rng, cells[1:], 10), make_runs(rng, cells[:1], 10, factor=1.10)])
    verdicts = per_cell(base, cand, METRIC)
    assert verdicts[0].cell_id == "cell-00" and verdicts[0].regression
    # BH bounds the expected share of false flags, not their number: this seed has one more
    # (a 6 % chance difference in cell-31, p = 0.0015, 3.5 standard errors).
    assert sum(v.regression for v in verdicts) <= 2
    assert verdicts[0].p_adjusted is not None and verdicts[0].p_value is not None
    assert verdicts[0].p_adjusted > verdicts[0].p_value  # adjusted across 50 cells


def test_too_few_runs_is_inconclusive_and_skips_bh() -> None:
    rng = np.random.default_rng(6)
    base = pl.concat([make_runs(rng, ["few"], 3), make_runs(rng, ["many"], 10)])
    cand = pl.concat([make_runs(rng, ["few"], 3, factor=1.5), make_runs(rng, ["many"], 10)])
    few, many = per_cell(base, cand, METRIC)
    assert few.cell_id == "few" and few.verdict == TOO_FEW_RUNS and not few.regression
    assert few.ratio is None and few.p_adjusted is None
    assert few.note is not None and "need >= 5" in few.note
    assert many.verdict == NO_CHANGE and many.p_adjusted == many.p_value  # m = 1, not 2


def test_cells_on_one_side_only_are_left_out() -> None:
    rng = np.random.default_rng(7)
    base = make_runs(rng, ["a", "b"], 6)
    cand = make_runs(rng, ["b", "c"], 6)
    assert [v.cell_id for v in per_cell(base, cand, METRIC)] == ["b"]


def test_verdict_does_not_depend_on_other_cells() -> None:
    rng = np.random.default_rng(8)
    base, cand = make_runs(rng, ["a", "b"], 8), make_runs(rng, ["a", "b"], 8)
    both = per_cell(base, cand, METRIC)[0]
    alone = per_cell(base.filter(pl.col("cell_id") == "a"), cand.filter(pl.col("cell_id") == "a"),
                     METRIC)[0]  # fmt: skip
    assert (both.ci_low, both.ci_high) == (alone.ci_low, alone.ci_high)


def test_benjamini_hochberg_matches_statsmodels() -> None:
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(9)
    p = np.concatenate([rng.uniform(size=40), rng.uniform(0, 1e-3, size=10)])
    expected = multipletests(p, method="fdr_bh")[1]
    np.testing.assert_allclose(benjamini_hochberg(p), expected)
    with_nan = benjamini_hochberg([0.01, float("nan"), 0.04])
    assert math.isnan(with_nan[1])
    np.testing.assert_allclose(with_nan[[0, 2]], [0.02, 0.04])
    assert benjamini_hochberg([]).size == 0


# -- change points ------------------------------------------------------------------------------


def test_change_point_recall_for_a_ten_percent_step() -> None:
    # 500 series of 60 nightly values at 5 % noise, one +10 % step placed uniformly in [10, 50];
    # a detection within ±3 points counts. (Misses are mostly detections 4-10 points off: a
    # 2-sigma step cannot be placed more exactly.)
    rng = np.random.default_rng(10)
    hits = 0
    for _ in range(500):
        step = int(rng.integers(10, 51))
        level = np.where(np.arange(60) >= step, 1.10, 1.0)
        series = 100 * level * (1 + 0.05 * rng.standard_normal(60))
        hits += any(abs(i - step) <= 3 for i in change_points(series))
    assert hits / 500 >= 0.9, hits / 500


def test_change_point_false_alarms_on_stationary_series() -> None:
    rng = np.random.default_rng(11)
    detections = points = 0
    for length, count in ((60, 100), (300, 20)):
        for _ in range(count):
            detections += len(change_points(100 * (1 + 0.05 * rng.standard_normal(length))))
            points += length
    assert detections / points <= 0.01, (detections, points)


def test_change_point_indices_refer_to_the_input() -> None:
    series = np.concatenate([np.full(20, 100.0), np.full(20, 150.0), [np.nan], np.full(20, 100.0)])
    result = detect_change_points(series)
    assert result.indices == [20, 41]  # the NaN at 40 is skipped, not counted as a point
    assert result.n == 60 and result.note is not None and "non-finite" in result.note
    assert [round(m, 2) for m in result.magnitudes] == [0.5, 0.5]
    # Scale does not matter, huge values do not overflow.
    assert change_points(series * 1e300) == [20, 41]
    assert change_points(series * 1e-300) == [20, 41]


@pytest.mark.parametrize(
    ("values", "why"),
    [
        ([], "too few"),
        ([1.0], "too few"),
        ([1.0, float("nan"), 2.0], "too few"),
        ([7.0] * 50, "constant"),
        ([float("inf")] * 10, "too few"),
    ],
)
def test_change_points_that_cannot_conclude_say_why(values: list[float], why: str) -> None:
    result = detect_change_points(values)
    assert result.indices == [] and result.note is not None and why in result.note


# -- property tests -----------------------------------------------------------------------------

values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, 1.0, 1e300, -1e300, 5e-324, 20_000.0]),
)
# No example database: property runs leave no files behind.
PROPERTY = settings(
    max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)


@PROPERTY
@given(
    st.lists(st.tuples(st.sampled_from(["a", "b"]), st.sampled_from(["ok", "failed"]), values),
             max_size=30),
    st.lists(st.tuples(st.sampled_from(["a", "b"]), st.sampled_from(["ok", "failed"]), values),
             max_size=30),
)  # fmt: skip
def test_per_cell_never_raises(
    base: list[tuple[str, str, float]], cand: list[tuple[str, str, float]]
) -> None:
    schema = {"cell_id": pl.String, "status": pl.String, METRIC: pl.Float64}
    verdicts = per_cell(
        pl.DataFrame(base, schema=schema, orient="row"),
        pl.DataFrame(cand, schema=schema, orient="row"),
        METRIC,
        n_resamples=50,
    )
    for v in verdicts:
        if v.verdict.startswith("inconclusive"):
            assert v.note, v
        if v.regression:
            assert v.ci_low is not None and v.ci_low > 1.0


@PROPERTY
@given(
    st.one_of(
        st.lists(values, max_size=80),
        st.lists(st.floats(0.5, 2.0), min_size=1, max_size=5).map(  # steps of 20 points
            lambda levels: [x for x in levels for _ in range(20)]
        ),
        st.floats(allow_nan=True).flatmap(lambda v: st.lists(st.just(v), max_size=40)),
    )
)
def test_change_points_never_raise(series: list[float]) -> None:
    result = detect_change_points(series)
    assert all(0 < i < len(series) for i in result.indices)
    assert result.indices == sorted(result.indices)
    if result.n < 4 or len({v for v in series if math.isfinite(v)}) == 1:
        assert result.note and result.indices == []


def test_empty_tables_give_no_verdicts() -> None:
    schema = {"cell_id": pl.String, "status": pl.String, METRIC: pl.Float64}
    assert per_cell(pl.DataFrame(), pl.DataFrame(), METRIC) == []
    assert per_cell(pl.DataFrame(schema=schema), pl.DataFrame(schema=schema), METRIC) == []
