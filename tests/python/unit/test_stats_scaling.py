"""stats.scaling: known slopes, crossings and growth factors from synthetic runs; never a crash."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stats.scaling import crossing, fit, growth

METRIC = "rtt_net_p50_us"


def make_runs(
    rng: np.random.Generator,
    lines: dict[str, tuple[float, float]],
    counts: list[int],
    n_runs: int,
    noise: float,
) -> pl.DataFrame:
    """Runs whose metric is (intercept + slope * players) * (1 + noise * N(0, 1)) per transport.

    Multiplicative noise: the spread grows with the player count, as RTT's does. Each cell also
    gets a failed run with an absurd value, which must never count.
    """
    rows = []
    for transport, (intercept, slope) in lines.items():
        for players in counts:
            mean = intercept + slope * players
            values = mean * (1 + noise * rng.standard_normal(n_runs))
            rows += [(transport, players, "ok", float(v)) for v in values]
            rows.append((transport, players, "failed", 1e12))
    return pl.DataFrame(
        rows,
        schema={
            "transport": pl.String,
            "players": pl.Int32,
            "status": pl.String,
            METRIC: pl.Float64,
        },
        orient="row",
    )


def test_fit_slope_interval_contains_true_slope_per_group() -> None:
    # One data set (a 95 % interval misses 1 in 20 seeds; the coverage test below checks the rate).
    rng = np.random.default_rng(1)
    runs = make_runs(rng, {"kcp": (20_000, 200.0), "tcp": (10_000, 400.0)}, [20, 50, 100, 150, 200],
                     6, 0.05)  # fmt: skip
    result = fit(runs, METRIC)
    assert result.note is None and result.results is not None
    for transport, (intercept, slope) in {"kcp": (20_000, 200.0), "tcp": (10_000, 400.0)}.items():
        g = result.groups[transport]
        assert g.slope_low <= slope <= g.slope_high, g
        assert g.intercept_low <= intercept <= g.intercept_high, g
        assert g.n == 30 and g.player_counts == 5 and g.note is None
        assert g.r2 > 0.9
    # Slopes 200 and 400 µs/player are told apart.
    assert result.slopes_differ_pvalue is not None and result.slopes_differ_pvalue < 1e-6


def test_fit_slope_interval_coverage() -> None:
    # 95 % intervals over 150 small heteroscedastic data sets (4 runs x 5 counts per group):
    # HC3 with per-group t quantiles should cover the true slope at close to the nominal rate.
    rng = np.random.default_rng(12)
    covered = {"kcp": 0, "tcp": 0}
    for _ in range(150):
        runs = make_runs(rng, {"kcp": (20_000, 200.0), "tcp": (10_000, 400.0)},
                         [20, 50, 100, 150, 200], 4, 0.08)  # fmt: skip
        result = fit(runs, METRIC)
        for transport, slope in (("kcp", 200.0), ("tcp", 400.0)):
            g = result.groups[transport]
            covered[transport] += g.slope_low <= slope <= g.slope_high
    assert all(c / 150 >= 0.89 for c in covered.values()), covered


def test_fit_log_y_recovers_multiplicative_growth() -> None:
    rng = np.random.default_rng(13)
    counts = [10, 50, 100, 200, 400]
    rows = [
        ("quic", p, "ok", float(5_000 * math.exp(0.004 * p) * (1 + 0.05 * e)))
        for p in counts
        for e in rng.standard_normal(8)
    ]
    runs = pl.DataFrame(rows, schema=["transport", "players", "status", METRIC], orient="row")
    g = fit(runs, METRIC, log_y=True).groups["quic"]
    assert g.slope_low <= 0.004 <= g.slope_high
    assert g.intercept_low <= math.log(5_000) <= g.intercept_high


def test_fit_notes_groups_with_few_player_counts() -> None:
    rng = np.random.default_rng(14)
    runs = pl.concat([
        make_runs(rng, {"kcp": (20_000, 200.0)}, [20, 50, 100], 5, 0.05),
        make_runs(rng, {"two": (20_000, 200.0)}, [20, 200], 5, 0.05),
        make_runs(rng, {"one": (20_000, 200.0)}, [20], 5, 0.05),
    ])  # fmt: skip
    result = fit(runs, METRIC)
    assert result.groups["kcp"].note is None
    two = result.groups["two"]
    assert two.slope_low <= 200 <= two.slope_high
    assert two.note is not None and "linearity cannot be checked" in two.note
    one = result.groups["one"]
    assert math.isnan(one.slope) and one.note is not None and "2 distinct player counts" in one.note
    # A single run at one of two counts fixes the line there: HC3 cannot see its spread.
    two_runs = runs.filter(pl.col("transport") == "two")
    at_200 = two_runs.filter(pl.col("players") == 200).head(1)  # its first run is ok
    lone = pl.concat([two_runs.filter(pl.col("players") == 20), at_200])
    note = fit(lone, METRIC).groups["two"].note
    assert note is not None and "interval too narrow" in note


def test_fit_group_by_prototype_and_single_group() -> None:
    rng = np.random.default_rng(15)
    runs = make_runs(rng, {"kcp": (20_000, 200.0)}, [20, 50, 100], 5, 0.05)
    runs = runs.with_columns(prototype=pl.lit("netstick-ref"))
    result = fit(runs, METRIC, group="prototype")
    g = result.groups["netstick-ref"]
    assert g.slope_low <= 200 <= g.slope_high
    assert result.slopes_differ_pvalue is None  # one group, nothing to compare


def test_crossing_of_a_known_linear_rtt() -> None:
    # RTT = 20 ms + 0.2 ms/player reaches 50 ms at 150 players, between measured 100 and 200.
    rng = np.random.default_rng(21)
    runs = make_runs(rng, {"kcp": (20_000, 200.0)}, [25, 50, 100, 200, 300], 10, 0.05)
    c = crossing(runs, METRIC, 50_000, "kcp")
    assert c.estimate is not None and abs(c.estimate - 150) < 12
    assert c.low is not None and c.high is not None and c.low <= 150 <= c.high
    assert c.low < c.estimate < c.high and c.note is None
    assert c.n == 50 and c.player_counts == (25, 50, 100, 200, 300)
    # The same seed gives the same interval.
    assert crossing(runs, METRIC, 50_000, "kcp") == c


def test_crossing_interval_coverage() -> None:
    rng = np.random.default_rng(22)
    covered = 0
    for i in range(100):
        runs = make_runs(rng, {"kcp": (20_000, 200.0)}, [25, 50, 100, 200, 300], 10, 0.05)
        c = crossing(runs, METRIC, 50_000, "kcp", n_resamples=500, seed=i)
        covered += c.low is not None and c.high is not None and c.low <= 150 <= c.high
    assert covered >= 88, covered


def test_crossing_not_reached_and_already_reached_are_notes() -> None:
    rng = np.random.default_rng(23)
    runs = make_runs(rng, {"kcp": (20_000, 200.0)}, [25, 50, 100], 5, 0.05)
    c = crossing(runs, METRIC, 100_000, "kcp")
    assert c.estimate is None and c.low is None and c.high is None
    assert c.note is not None and "not reached within the measured range" in c.note
    assert "largest measured player count 100" in c.note
    c = crossing(runs, METRIC, 1_000, "kcp")
    assert c.estimate is None and c.note is not None and "already reached" in c.note
    c = crossing(runs, METRIC, 50_000, "no-such-transport")
    assert c.estimate is None and c.note is not None and "no ok runs" in c.note


def test_crossing_bound_beyond_range_is_none_with_note() -> None:
    # Crossing right below the largest count: some resamples never reach the threshold.
    rng = np.random.default_rng(24)
    runs = make_runs(rng, {"kcp": (20_000, 200.0)}, [50, 100, 150], 5, 0.05)
    c = crossing(runs, METRIC, 49_500, "kcp")
    assert c.estimate is not None and 140 < c.estimate <= 150
    assert c.high is None and c.note is not None and "beyond the largest" in c.note


def test_growth_ratio_of_medians() -> None:
    rng = np.random.default_rng(31)
    # 20.5 ms + 0.1 ms/player: 22.5 ms at 20 players, 40.5 ms at 200, a factor of 1.8.
    runs = make_runs(rng, {"kcp": (20_500, 100.0)}, [20, 100, 200], 10, 0.05)
    g = growth(runs, METRIC, "kcp", 20, 200)
    assert g.estimate is not None and g.low is not None and g.high is not None
    assert abs(g.estimate - 1.8) < 0.1 and g.low <= 1.8 <= g.high
    assert g.n_low == g.n_high == 10 and g.note is None
    assert g.describe().startswith(f"kcp {METRIC} grows 1.")
    assert "from 20 to 200 players" in g.describe()
    missing = growth(runs, METRIC, "kcp", 20, 500)
    assert missing.estimate is None and missing.note is not None and "500" in missing.note


# -- property tests: never a crash, and a note whenever there is no answer ----------------------

values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, 1.0, 1e300, -1e300, 5e-324, 50_000.0]),
)
rows = st.lists(
    st.tuples(
        st.sampled_from(["kcp", "tcp"]),
        st.sampled_from([1, 20, 200, 2**31 - 1]),
        st.sampled_from(["ok", "ok", "ok", "failed"]),
        values,
    ),
    max_size=30,
)


def frame(data: list[tuple[str, int, str, float]]) -> pl.DataFrame:
    return pl.DataFrame(
        data,
        schema={
            "transport": pl.String,
            "players": pl.Int64,
            "status": pl.String,
            METRIC: pl.Float64,
        },
        orient="row",
    )


# No example database: property runs leave no files behind.
PROPERTY = settings(
    max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)


@PROPERTY
@given(rows, st.booleans())
def test_fit_never_raises(data: list[tuple[str, int, str, float]], log_y: bool) -> None:
    result = fit(frame(data), METRIC, log_y=log_y)
    if result.results is None:
        assert result.note
    for g in result.groups.values():
        if not all(math.isfinite(v) for v in (g.slope, g.slope_low, g.slope_high)):
            assert g.note, g


@PROPERTY
@given(rows, st.sampled_from([50_000.0, 0.0, 1e300, float("nan")]))
def test_crossing_never_raises(data: list[tuple[str, int, str, float]], threshold: float) -> None:
    c = crossing(frame(data), METRIC, threshold, "kcp", n_resamples=50)
    if c.estimate is None or c.low is None or c.high is None:
        assert c.note, c


@PROPERTY
@given(rows)
def test_growth_never_raises(data: list[tuple[str, int, str, float]]) -> None:
    g = growth(frame(data), METRIC, "kcp", 20, 200, n_resamples=50)
    if g.estimate is None or g.low is None or g.high is None:
        assert g.note, g
    assert isinstance(g.describe(), str)


@pytest.mark.parametrize(
    "runs",
    [
        pl.DataFrame(),
        frame([]),
        frame([("kcp", 20, "ok", 5.0)]),
        frame([("kcp", p, "ok", 7.0) for p in (20, 20, 200, 200, 200)]),
        frame([("kcp", p, "ok", float("nan")) for p in (20, 200)]),
    ],
    ids=["no-columns", "empty", "single-run", "constant", "all-nan"],
)
def test_degenerate_inputs_say_why(runs: pl.DataFrame) -> None:
    f = fit(runs, METRIC)
    assert f.note or all(g.note for g in f.groups.values())
    c = crossing(runs, METRIC, 6.0, "kcp")
    assert c.estimate is None or c.note
    g = growth(runs, METRIC, "kcp", 20, 200)
    assert g.estimate is None or g.low is not None


def test_huge_number_of_runs_is_fast() -> None:
    rng = np.random.default_rng(41)
    runs = make_runs(rng, {"kcp": (20_000, 200.0), "tcp": (10_000, 400.0)},
                     [20, 50, 100, 150, 200], 2_000, 0.05)  # fmt: skip
    assert runs.height == 2 * 5 * 2_001
    g = fit(runs, METRIC).groups["kcp"]
    assert g.slope_low <= 200 <= g.slope_high
    c = crossing(runs, METRIC, 50_000, "kcp", n_resamples=200)
    assert c.low is not None and c.high is not None and c.low <= 150 <= c.high
