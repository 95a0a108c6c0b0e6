"""Suspect runs and every planned comparison: the robust rule for a run far from its siblings,
busy runs, comparisons that are not significant or cannot be made, and results with and
without the suspects."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import polars as pl

from report import sentences
from stats import analyse, comparisons, suspects


def test_a_run_far_from_its_siblings_is_found_and_ordinary_spread_is_not() -> None:
    # The kcp run of the issue: p99 of 660 ms beside five siblings of 7-14 ms.
    p99 = [7.1, 8.0, 9.5, 11.0, 14.0, 660.0]
    assert np.flatnonzero(suspects.far(p99)).tolist() == [5]
    assert suspects.modified_z(p99)[5] > 2 * suspects.Z_MAX
    rng = np.random.default_rng(3)
    # Cells of 6 log-normal runs: at 10 % spread no run is named, at 30 % under 1.5 % of runs
    # (the z-score alone names one in about 17 % of 6-run cells at any spread).
    calm = [suspects.far(rng.lognormal(0, 0.1, 6)).sum() for _ in range(2000)]
    noisy = [suspects.far(rng.lognormal(0, 0.3, 6)).sum() for _ in range(2000)]
    assert sum(calm) == 0
    assert sum(noisy) < 0.015 * 12_000, sum(noisy)
    alone = [
        (np.abs(suspects.modified_z(rng.lognormal(0, 0.1, 6))) > 3.5).any() for _ in range(2000)
    ]
    assert 0.1 < np.mean(alone) < 0.25


def test_too_few_or_identical_runs_name_no_one() -> None:
    assert np.isnan(suspects.modified_z([1.0, 1.0, 50.0])).all()
    assert np.isnan(suspects.modified_z([4.0, 4.0, 4.0, 4.0, 4.0])).all()
    # More than half identical: the MAD is 0 and the mean absolute deviation stands in.
    assert np.flatnonzero(suspects.far([4.0, 4.0, 4.0, 4.0, 4.0, 40.0])).tolist() == [5]
    # Far in z but within a factor of 2 of the median: not named.
    assert not suspects.far([10.0, 10.01, 10.0, 10.02, 10.0, 15.0]).any()


def _runs(spec: dict[str, list[float | None]], **extra: Any) -> pl.DataFrame:
    """Runs of one context: per transport its RTT p50 values (None: the run failed)."""
    rows = []
    for transport, values in spec.items():
        for k, v in enumerate(values, 1):
            rows.append(
                {"cell_id": f"c-{transport}", "run_id": f"r{k}", "transport": transport,
                 "status": "ok" if v is not None else "failed", "prototype": "reference",
                 "players": 20, "workload": "active", "params": "{}", "network_profile": "lan",
                 "duration_s": 12.0, "library_version": "pinned", "rtt_net_p50_us": v,
                 "server_cpu_cores": None if v is None else 0.1, "tick_rate_hz": 60.0,
                 "profile_rtt_us": 0.0, "interference": False, "others_cpu_cores": 0.0}
            )  # fmt: skip
    df = pl.DataFrame(rows)
    for column, changes in extra.items():
        values = [changes.get((r["cell_id"], r["run_id"]), r[column]) for r in df.to_dicts()]
        df = df.with_columns(pl.Series(column, values))
    return df


def _row(comps: pl.DataFrame, metric: str = "rtt_net_p50_us") -> dict[str, Any]:
    rows = comps.filter(pl.col("metric") == metric).to_dicts()
    assert len(rows) == 1, rows
    return rows[0]


def test_a_comparison_without_a_difference_is_kept_with_its_bound_and_medians() -> None:
    same = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2]
    row = _row(comparisons.comparisons(_runs({"kcp": same, "tcp": [v * 1.001 for v in same]})))
    assert row["verdict"] == "no_difference"
    assert row["ci_low"] < 1 < row["ci_high"]
    assert row["a_median"] == np.median(same) and row["a_low"] is not None
    assert row["frame_us"] == 1e6 / 60 and row["profile_rtt_us"] == 0.0


def test_a_clear_difference_is_decided_and_every_planned_pair_has_a_row() -> None:
    fast = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2]
    comps = comparisons.comparisons(
        _runs({"enet": fast, "kcp": [3 * v for v in fast], "tcp": [None] * 6})
    )
    pairs = {
        (r["a"], r["b"]): r for r in comps.filter(pl.col("metric") == "rtt_net_p50_us").to_dicts()
    }
    assert set(pairs) == {("enet", "kcp"), ("enet", "tcp"), ("kcp", "tcp")}
    assert pairs["enet", "kcp"]["verdict"] == "higher"
    # tcp failed every run: its comparisons are planned, shown, and say why they are not made.
    for pair in (("enet", "tcp"), ("kcp", "tcp")):
        assert pairs[pair]["verdict"] == "not_compared"
        assert pairs[pair]["note"] == "no usable run in b"
        assert pairs[pair]["p_bh"] is None
    # Only the comparisons made count as tests for Benjamini-Hochberg.
    made = comps.filter(pl.col("verdict") != "not_compared")
    assert made["p_bh"].is_not_null().all()


def test_a_far_run_is_named_with_the_result_without_it() -> None:
    base = [7.1, 8.0, 9.5, 11.0, 14.0]
    runs = _runs({"enet": [10.0, 10.5, 9.8, 10.2, 10.1, 9.9], "kcp": [*base, 660.0]})
    row = _row(comparisons.comparisons(runs))
    named = json.loads(row["suspects"])
    assert [(s["run"], s["side"], s["why"]) for s in named] == [("c-kcp/r6", "b", "far")]
    assert named[0]["value"] == 660.0 and named[0]["cell_median"] == np.median([*base, 660.0])
    assert row["n_b"] == 6 and row["alt_n_b"] == 5  # kept in the result, left out of the other
    assert row["alt_ratio"] == np.median(base) / np.median([10.0, 10.5, 9.8, 10.2, 10.1, 9.9])


def test_a_busy_run_is_left_out_and_its_result_with_it_given() -> None:
    runs = _runs(
        {"enet": [10.0, 10.5, 9.8, 10.2, 10.1, 9.9], "kcp": [20.0, 21.0, 19.5, 20.5, 20.2, 80.0]},
        interference={("c-kcp", "r6"): True}, others_cpu_cores={("c-kcp", "r6"): 0.9},
    )  # fmt: skip
    row = _row(comparisons.comparisons(runs))
    named = json.loads(row["suspects"])
    assert [(s["run"], s["why"], s["others_cores"]) for s in named] == [("c-kcp/r6", "busy", 0.9)]
    assert row["n_b"] == 5 and row["alt_n_b"] == 6
    # The findings carry both results and the suspect, as records.
    comps = comparisons.comparisons(runs)
    found = [
        f
        for f in analyse._comparison_findings(comps)
        if f["context"].get("metric") == "rtt_net_p50_us"
    ]
    assert found[0]["suspects"][0]["run"] == "c-kcp/r6"
    assert found[0]["without_suspects"]["n_runs"] == [6, 6]
    assert found[0]["verdict"] == "higher" and found[0]["metric_unit"] == "us"


def test_reliable_streams_say_where_only_one_side_keeps_order() -> None:
    """reliable_ordered (the manifests' declaration) is read where a round trip rides the
    reliable channel: tcp keeps order, udp's best effort does not, and the comparison says so;
    not for CPU, not for an unreliable stream, not for probes of other workloads."""
    same = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2]
    ordered = {("c-tcp", f"r{k}"): True for k in range(1, 7)}
    ordered |= {("c-udp", f"r{k}"): False for k in range(1, 7)}
    base = _runs({"tcp": same, "udp": same})
    stream = base.with_columns(
        pl.lit("stream").alias("workload"),
        pl.lit(json.dumps({"size": 400, "rate": 60})).alias("params"),
        pl.Series(
            "reliable_ordered", [ordered[(r["cell_id"], r["run_id"])] for r in base.to_dicts()]
        ),
    )
    comps = comparisons.comparisons(stream)
    assert json.loads(_row(comps)["reliable_order"]) == {"a": True, "b": False}
    assert _row(comps, "server_cpu_cores")["reliable_order"] is None
    unreliable = stream.with_columns(pl.lit(json.dumps({"channel": "unreliable"})).alias("params"))
    assert _row(comparisons.comparisons(unreliable))["reliable_order"] is None
    probes = stream.with_columns(pl.lit("active").alias("workload"))
    assert _row(comparisons.comparisons(probes))["reliable_order"] is None

    found = [
        f
        for f in analyse._comparison_findings(comps)
        if f["context"].get("metric") == "rtt_net_p50_us"
    ]
    assert found[0]["reliable_order"] == {"a": True, "b": False}
    text = sentences.order_text(found[0])
    assert "tcp's keeps order while udp's does not keep order" in text, text
    assert "head-of-line blocking" in sentences.sentence(found[0])
