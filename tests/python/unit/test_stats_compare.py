"""stats.compare: known answers, agreement with scipy and statsmodels, coverage, awkward inputs."""

from __future__ import annotations

import itertools
import math
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import bootstrap, mannwhitneyu
from statsmodels.stats.multitest import multipletests

from stats import compare
from stats.compare import (
    benjamini_hochberg,
    cliffs_delta,
    hodges_lehmann,
    holm,
    mann_whitney_p,
    ratio_of_medians,
)
from stats.intervals import Interval

TRIALS = 1000


# -- ratio of medians ------------------------------------------------------------------------


def test_ratio_estimate_and_seed() -> None:
    rng = np.random.default_rng(1)
    a = rng.lognormal(np.log(10), 0.3, 15)
    iv = ratio_of_medians(a, 2 * a, seed=3)
    assert iv.estimate == pytest.approx(2.0) and iv.n == 30 and iv.method == "bca"
    assert iv.low < 2.0 < iv.high and iv.note is None
    assert iv == ratio_of_medians(a, 2 * a, seed=3)
    assert iv != ratio_of_medians(a, 2 * a, seed=4)


@pytest.mark.parametrize("method", ["bca", "percentile"])
def test_ratio_agrees_with_scipy(method: str) -> None:
    rng = np.random.default_rng(2)
    a, b = rng.lognormal(np.log(10), 0.3, 20), rng.lognormal(np.log(12), 0.5, 25)
    ours = ratio_of_medians(a, b, method=method, n_resamples=40_000, seed=1)

    def stat(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.median(y, axis=axis) / np.median(x, axis=axis)

    ref = bootstrap(
        (a, b),
        stat,
        method="BCa" if method == "bca" else "percentile",
        n_resamples=40_000,
        rng=np.random.default_rng(7),
    ).confidence_interval
    # A ratio of two medians has a lumpy bootstrap distribution: its 2.5/97.5 % points jump
    # between neighbouring atoms from seed to seed (scipy's too), hence 6 % of the width.
    width = ref.high - ref.low
    assert ours.low == pytest.approx(ref.low, abs=0.06 * width)
    assert ours.high == pytest.approx(ref.high, abs=0.06 * width)


@pytest.mark.parametrize(("n", "seed"), [(10, 300), (20, 301)])
def test_ratio_coverage(n: int, seed: int) -> None:
    # Measured (3 x 1000 trials, a ~ LN(ln 10, 0.3), b ~ LN(ln 12, 0.5), 2000 resamples):
    # BCa n=10 94.5 %, n=15 95.4 %, n=20 95.0 %, n=30 95.1 %; percentile 95.8-96.3 %.
    rng = np.random.default_rng(seed)
    hits = 0
    for trial in range(TRIALS):
        a = rng.lognormal(np.log(10), 0.3, n)
        b = rng.lognormal(np.log(12), 0.5, n)
        iv = ratio_of_medians(a, b, n_resamples=2000, seed=trial)
        hits += iv.low <= 1.2 <= iv.high
    assert 0.93 <= hits / TRIALS <= 0.97, hits / TRIALS


def test_ratio_cannot_conclude() -> None:
    iv = ratio_of_medians([], [1.0, 2.0])
    assert math.isnan(iv.estimate) and iv.note == "no values in a"
    iv = ratio_of_medians([1.0, np.nan], [2.0, 3.0, 4.0])
    assert iv.estimate == 3.0 and math.isnan(iv.low)
    assert iv.note == (
        "non-finite values dropped (a: 1, b: 0); need >= 2 runs in each group for an interval "
        "(a: 1, b: 3)"
    )
    iv = ratio_of_medians([0.0, 0.0, 1.0], [1.0, 2.0])
    assert math.isnan(iv.estimate) and iv.note == "median of a is 0: ratio undefined"
    iv = ratio_of_medians([-1.0, 1.0, 2.0], [1.0, 2.0, 3.0])
    assert iv.estimate == 2.0 and math.isnan(iv.low)
    assert iv.note == "median of a is 0 or changes sign in some resamples"
    iv = ratio_of_medians([5.0] * 8, [10.0] * 8)
    assert (iv.estimate, iv.low, iv.high) == (2.0, 2.0, 2.0) and iv.note is not None


def test_ratio_percentile_method_and_seed_sequences() -> None:
    rng = np.random.default_rng(5)
    a, b = rng.lognormal(np.log(10), 0.3, 12), rng.lognormal(np.log(13), 0.3, 12)
    iv = ratio_of_medians(a, b, method="percentile", seed=[7, 123], n_resamples=2000)
    assert iv.method == "percentile" and iv.low < iv.estimate < iv.high
    assert iv == ratio_of_medians(a, b, method="percentile", seed=[7, 123], n_resamples=2000)
    assert iv != ratio_of_medians(a, b, method="percentile", seed=[7, 124], n_resamples=2000)
    with pytest.raises(ValueError, match="method must be one of"):
        ratio_of_medians(a, b, method="studentized")


def test_ratio_from_two_runs_says_the_interval_is_too_narrow() -> None:
    iv = ratio_of_medians([10.0, 11.0], [20.0, 21.0, 22.0, 19.0], method="percentile")
    assert iv.low <= iv.estimate <= iv.high
    assert iv.note == "interval from 2 runs in a is too narrow to trust"


def test_ratio_that_overflows_is_undefined() -> None:
    iv = ratio_of_medians([1e-300, 1e-300, 1e-300], [1e300, 1e300, 1e300])
    assert math.isnan(iv.estimate) and iv.note == "ratio not finite (values too large or too small)"


# -- effect sizes and the test ---------------------------------------------------------------


def test_cliffs_delta_known_answers() -> None:
    assert cliffs_delta([1, 2, 3], [4, 5, 6]) == 1.0
    assert cliffs_delta([4, 5, 6], [1, 2, 3]) == -1.0
    assert cliffs_delta([1, 2, 3], [1, 2, 3]) == 0.0
    # Pairs (a, b): b > a in 3 of 4 pairs with [1, 2] vs [2, 3]: (1,2) (1,3) (2,3) > and (2,2) tie.
    assert cliffs_delta([1, 2], [2, 3]) == 0.75
    assert math.isnan(cliffs_delta([], [1.0])) and math.isnan(cliffs_delta([np.nan], [1.0]))


@settings(max_examples=100, deadline=None)
@given(
    a=st.lists(st.integers(-5, 5), min_size=1, max_size=30),
    b=st.lists(st.integers(-5, 5), min_size=1, max_size=30),
)
def test_cliffs_delta_matches_pairs_and_mann_whitney(a: list[int], b: list[int]) -> None:
    x, y = np.array(a, float), np.array(b, float)
    pairs = np.sign(np.subtract.outer(y, x))
    assert cliffs_delta(x, y) == pytest.approx(pairs.mean())
    # delta = 2 A12 - 1 with A12 = U_b / (m n) (Vargha-Delaney).
    u = mannwhitneyu(y, x).statistic
    assert cliffs_delta(x, y) == pytest.approx(2 * u / (x.size * y.size) - 1)


def test_hodges_lehmann_known_answers() -> None:
    assert hodges_lehmann([1, 2, 3], [4, 5, 6]) == 3.0  # differences 1..5, median 3
    assert hodges_lehmann([0, 10], [1]) == -4.0  # differences 1, -9
    assert math.isnan(hodges_lehmann([], [1.0]))


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    m=st.integers(1, 300),
    n=st.integers(1, 300),
    ties=st.booleans(),
)
def test_hodges_lehmann_selection_equals_all_pairs(seed: int, m: int, n: int, ties: bool) -> None:
    # Force the selection path (used above DIRECT_PAIRS) with tiny limits so it takes several
    # rounds, and check it against the median of every difference.
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 15, m).astype(float) if ties else rng.normal(size=m)
    b = rng.integers(0, 15, n).astype(float) if ties else rng.normal(1.0, 2.0, n)
    expected = float(np.median(np.subtract.outer(b, a)))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(compare, "DIRECT_PAIRS", 0)
        mp.setattr(compare, "ENUMERATE_MAX", 40)
        mp.setattr(compare, "PIVOT_SAMPLE", 100)
        assert hodges_lehmann(a, b) == expected


def _permutation_p(a: list[float], b: list[float]) -> float:
    """Two-sided p of U by enumerating every split of the pooled values into groups of len(a)
    and len(b) (the exact permutation test the exact null distribution must equal)."""
    pooled = a + b
    m, n = len(a), len(b)

    def u(xs: list[float], ys: list[float]) -> float:
        return sum((y > x) + 0.5 * (y == x) for x in xs for y in ys)

    centre = m * n / 2
    observed = abs(u(a, b) - centre)
    splits = list(itertools.combinations(range(m + n), m))
    extreme = 0
    for idx in splits:
        xs = [pooled[i] for i in idx]
        ys = [pooled[i] for i in range(m + n) if i not in idx]
        extreme += abs(u(xs, ys) - centre) >= observed - 1e-9
    return extreme / len(splits)


@pytest.mark.parametrize(("m", "n", "shift"), [(4, 5, 0.5), (6, 6, 1.0), (5, 7, 0.0), (9, 3, 2.0)])
def test_mann_whitney_untied_small_samples_equal_the_permutation_p(
    m: int, n: int, shift: float
) -> None:
    rng = np.random.default_rng(m * 10 + n)
    a = rng.normal(0, 1, m).tolist()
    b = rng.normal(shift, 1, n).tolist()
    assert mann_whitney_p(a, b) == pytest.approx(_permutation_p(a, b), rel=1e-12)
    assert mann_whitney_p(a, b) == pytest.approx(mann_whitney_p(b, a), rel=1e-12)


def test_mann_whitney_is_exact_beyond_eight_runs_a_side() -> None:
    # 10 vs 10 fully separated: only the two extreme splits of C(20, 10) are as extreme.
    a, b = np.arange(10.0), np.arange(10.0) + 100
    assert mann_whitney_p(a, b) == pytest.approx(2 / math.comb(20, 10), rel=1e-9)
    rng = np.random.default_rng(4)
    a, b = rng.normal(0, 1, 12), rng.normal(1, 1, 15)
    assert mann_whitney_p(a, b) == pytest.approx(mannwhitneyu(b, a, method="exact").pvalue)


def test_mann_whitney_with_ties_is_the_corrected_normal_approximation() -> None:
    a, b = [1.0, 2.0, 2.0, 3.0, 3.0, 4.0], [3.0, 4.0, 4.0, 5.0, 5.0, 6.0]
    p = mann_whitney_p(a, b)
    assert p == pytest.approx(
        mannwhitneyu(b, a, method="asymptotic", use_continuity=True).pvalue, rel=1e-12
    )
    # The tie and continuity corrections are in: the uncorrected statistic gives another p.
    assert p != pytest.approx(mannwhitneyu(b, a, method="asymptotic", use_continuity=False).pvalue)


def test_mann_whitney_all_equal_is_one_and_empty_is_nan() -> None:
    assert mann_whitney_p([3.0, 3.0], [3.0, 3.0, np.nan]) == 1.0  # no evidence of a difference
    assert mann_whitney_p([7.0], [7.0]) == 1.0
    assert math.isnan(mann_whitney_p([], [1.0, 2.0]))
    assert math.isnan(mann_whitney_p([1.0, 2.0], [np.nan, np.inf]))  # nothing finite in b


# -- multiple comparisons ----------------------------------------------------------------------


# multipletests(method="holm") takes ~70 ms a call here, hence only 30 examples.
@settings(max_examples=30, deadline=None)
@given(
    p=st.lists(
        st.one_of(st.floats(0.0, 1.0), st.sampled_from([0.0, 0.01, 0.04, 0.05, 1.0])),
        min_size=1,
        max_size=40,
    )
)
def test_adjustments_match_statsmodels(p: list[float]) -> None:
    arr = np.array(p)
    assert holm(arr) == pytest.approx(multipletests(arr, method="holm")[1], abs=1e-12)
    assert benjamini_hochberg(arr) == pytest.approx(
        multipletests(arr, method="fdr_bh")[1], abs=1e-12
    )


def test_adjustments_known_answers() -> None:
    p = [0.01, 0.04, 0.03, 0.005]
    # Holm: sorted 0.005 0.01 0.03 0.04 times 4 3 2 1 = 0.02 0.03 0.06 0.04, running max.
    assert holm(p) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # BH: sorted times 4/1 4/2 4/3 4/4 = 0.02 0.02 0.04 0.04, running min from the top.
    assert benjamini_hochberg(p) == pytest.approx([0.02, 0.04, 0.04, 0.02])


def test_adjustments_skip_missing_p() -> None:
    p = np.array([0.01, np.nan, 0.04, 2.0, 0.03])
    ok = np.array([0.01, 0.04, 0.03])
    for ours, method in ((holm, "holm"), (benjamini_hochberg, "fdr_bh")):
        got = ours(p)
        assert np.isnan(got[[1, 3]]).all()
        assert got[[0, 2, 4]] == pytest.approx(multipletests(ok, method=method)[1])
        assert ours([]).size == 0 and np.isnan(ours([np.nan])).all()


# -- huge and awkward inputs -----------------------------------------------------------------


def _huge_inputs() -> None:
    """Million-value inputs: every statistic answers; the ratio's bootstrap reduces its resamples
    and says so."""
    rng = np.random.default_rng(0)
    a, b = rng.normal(0.0, 1.0, 1_000_000), rng.normal(0.5, 1.0, 1_000_000)
    assert cliffs_delta(a, b) == pytest.approx(0.276, abs=0.005)  # 2 Phi(0.5 / sqrt 2) - 1
    assert hodges_lehmann(a, b) == pytest.approx(0.5, abs=0.01)
    assert mann_whitney_p(a, b) < 1e-12
    iv = ratio_of_medians(a[:1000] + 10, b + 10)
    assert iv.low < iv.estimate < iv.high
    assert iv.note is not None and "resamples reduced" in iv.note
    p = rng.uniform(size=1_000_000)
    assert holm(p).shape == benjamini_hochberg(p).shape == (1_000_000,)


def test_huge_inputs_stay_bounded() -> None:
    _huge_inputs()


@pytest.mark.perf
def test_huge_inputs_take_under_25_s() -> None:
    start = time.perf_counter()
    _huge_inputs()
    assert time.perf_counter() - start < 25


floats = st.floats(allow_nan=True, allow_infinity=True)
awkward = st.one_of(
    st.lists(floats, max_size=20),
    st.lists(st.sampled_from([0.0, 1.0, -1.0, 1e300, np.nan, np.inf]), max_size=20),
    st.builds(lambda v, k: [v] * k, floats, st.integers(0, 20)),
    st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=20),
)


@pytest.mark.filterwarnings("error")
@settings(max_examples=150, deadline=None)
@given(a=awkward, b=awkward)
def test_nothing_raises_on_awkward_groups(a: list[float], b: list[float]) -> None:
    iv = ratio_of_medians(a, b, n_resamples=300)
    assert isinstance(iv, Interval)
    if math.isnan(iv.low) or math.isnan(iv.high):
        assert iv.note
    else:
        assert iv.low <= iv.high
    d = cliffs_delta(a, b)
    assert math.isnan(d) or -1.0 <= d <= 1.0
    assert isinstance(hodges_lehmann(a, b), float)
    p = mann_whitney_p(a, b)
    assert math.isnan(p) or 0.0 <= p <= 1.0


@pytest.mark.filterwarnings("error")
@settings(max_examples=100, deadline=None)
@given(p=awkward)
def test_adjustments_never_raise(p: list[float]) -> None:
    for f in (holm, benjamini_hochberg):
        got = f(p)
        assert got.shape == (len(p),)
        fin = got[np.isfinite(got)]
        assert ((fin >= 0) & (fin <= 1)).all()
