"""The minimum detectable effect: its formula, and that it matches a simulation of the test."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as st

from stats import power


def test_formula_and_edges() -> None:
    z = st.norm.ppf(0.975) + st.norm.ppf(0.8)
    expected = math.exp(z * 0.1 * math.sqrt(2 / (6 * 3 / math.pi)))
    assert math.isclose(power.minimum_detectable_ratio(0.1, 6, 6), expected)
    assert math.isnan(power.minimum_detectable_ratio(0.1, 1, 6))
    assert math.isnan(power.cell_mde([1.0]))
    # More runs, smaller detectable effects; more spread, larger.
    assert power.minimum_detectable_ratio(0.1, 12, 12) < power.minimum_detectable_ratio(0.1, 6, 6)
    assert power.minimum_detectable_ratio(0.2, 6, 6) > power.minimum_detectable_ratio(0.1, 6, 6)


def test_a_shift_of_the_detectable_size_is_found_about_as_often_as_promised() -> None:
    # Simulated log-normal runs: at the minimum detectable ratio the Mann-Whitney test rejects
    # in roughly `power` of the nights (the normal approximation is rough at n = 10).
    rng = np.random.default_rng(7)
    sigma, n = 0.08, 10
    ratio = power.minimum_detectable_ratio(sigma, n, n)
    hits = 0
    trials = 400
    for _ in range(trials):
        a = np.exp(rng.normal(0.0, sigma, n))
        b = np.exp(rng.normal(math.log(ratio), sigma, n))
        hits += st.mannwhitneyu(a, b, alternative="two-sided").pvalue < 0.05
    assert 0.65 <= hits / trials <= 0.92, hits / trials


def test_the_cells_table_states_each_cells_detectable_change() -> None:
    import polars as pl

    from stats import analyse

    rtts = [100.0, 104.0, 98.0, 101.0, 103.0, 99.0]
    runs = pl.DataFrame(
        {
            "cell_id": ["c"] * 6,
            "prototype": ["reference"] * 6,
            "transport": ["tcp"] * 6,
            "players": [20] * 6,
            "workload": ["idle"] * 6,
            "params": ["{}"] * 6,
            "network_profile": ["lan"] * 6,
            "status": ["ok"] * 6,
            "rtt_net_p50_us": rtts,
        }
    )
    table = analyse.cells(runs)
    row = table.filter(pl.col("metric") == "rtt_net_p50_us").row(0, named=True)
    assert math.isclose(row["mde_ratio"], power.cell_mde(rtts))
    assert 1.01 < row["mde_ratio"] < 1.1  # a 2 % spread: a few per cent are detectable


def test_pairing_by_round_removes_a_drift_the_unpaired_figure_carries() -> None:
    # Two identical versions measured side by side in 12 rounds whose level drifts 20 % from
    # round to round: the paired log differences do not see the drift, the pooled spread does.
    rng = np.random.default_rng(3)
    drift = rng.normal(0.0, 0.2, 12)
    a = np.exp(drift + rng.normal(0.0, 0.02, 12))
    b = np.exp(drift + rng.normal(0.0, 0.02, 12))
    unpaired = power.minimum_detectable_ratio(power.log_sd(np.r_[a, b]), 6, 6)
    paired = power.paired_minimum_detectable_ratio(float(np.std(np.log(b / a), ddof=1)), 6)
    assert paired - 1 < (unpaired - 1) / 4
    z = st.norm.ppf(0.975) + st.norm.ppf(0.8)
    expected = math.exp(z * 0.1 / math.sqrt(6 * 3 / math.pi))
    assert math.isclose(power.paired_minimum_detectable_ratio(0.1, 6), expected)
    assert math.isnan(power.paired_minimum_detectable_ratio(0.1, 1))
