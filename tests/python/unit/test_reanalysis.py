"""The Net-Celerity re-analysis (stats/reanalysis computes, report/reanalysis.py shapes): the
per-run functions on synthetic data, then the real pipeline on the vendored data (tables,
structured findings and their sentences). (Drawn by report/net-celerity.qmd with R:
e2e/render/test_reanalysis_report.py.)"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from report import reanalysis as rea_report
from report import sentences
from stats import blockboot
from stats import reanalysis as rea
from stats.importers.netcelerity import FLAWS
from stats.reanalysis import distributions as dist

from support.paths import REPO

DATA = REPO / "data" / "external" / "net-celerity"


# -- shaping functions on synthetic data -------------------------------------------------------


def test_frame_floor_counts_values_on_whole_frames() -> None:
    # Frame = 1000/60 ms. On a multiple within 0.05 ms: 16.67, 16.70, 33.33, 50.00, 66.62 (x2).
    # Off: 16.72 (0.053 away), 25.00, 8.33 (half a frame is no frame), NaN is ignored.
    values = [16.67, 16.67, 16.70, 33.33, 50.00, 66.62, 66.62, 16.72, 25.00, 8.33, math.nan]
    ff = dist.frame_floor(values)
    assert ff.samples == 10
    assert ff.frac_on_frame_multiple == pytest.approx(7 / 10)
    assert ff.frac_at_floor == pytest.approx(3 / 10)  # 16.67, 16.67, 16.70
    assert ff.rtt_min_ms == 8.33
    assert ff.rtt_mode_ms in (16.67, 66.62)  # both appear twice; np.unique picks the first
    assert ff.rtt_mode_ms == 16.67
    mask = dist.on_frame_multiple([16.6167, 16.7166, 16.6166, 16.7168])  # +-0.05 edges
    assert mask.tolist() == [True, True, False, False]


def test_frame_floor_of_no_values_is_nan() -> None:
    ff = dist.frame_floor([math.nan])
    assert ff.samples == 0 and math.isnan(ff.frac_on_frame_multiple)


def test_expected_fraction_of_unquantised_values() -> None:
    # Printed 0.01-ms values within +-0.05 ms of k * 16.666...: 10 for two frames of three and
    # 11 when the multiple is itself printable (50.00), i.e. 31 per 50 ms.
    assert dist.expected_fraction_unquantised() == pytest.approx(31 / 5000, rel=1e-3)
    # and a uniform sample of printed values agrees
    rng = np.random.default_rng(1)
    v = np.round(rng.uniform(20, 200, 400_000), 2)
    measured = float(np.mean(dist.on_frame_multiple(v)))
    assert measured == pytest.approx(dist.expected_fraction_unquantised(), rel=0.08)


def test_histogram_bins_hold_equal_numbers_of_printable_values() -> None:
    # Every 0.01-ms value from 24.60 to 24.89 once: bins 24.6 (24.60-24.64, half a bin),
    # 24.7 (24.65-24.74), 24.8 (24.75-24.84), 24.9 (24.85-24.89).
    v = np.round(np.arange(2460, 2490) / 100, 2)
    h = dist.histogram_share(v, 0.1, 0.0, 100.0)
    counts = dict(zip(h["bin_ms"].to_list(), (h["share_pct"] * v.size / 100).round(6), strict=True))
    assert counts == {24.6: 5, 24.7: 10, 24.8: 10, 24.9: 5}
    assert h["share_pct"].sum() == pytest.approx(100.0)
    assert dist.histogram_share(v, 0.1, 24.75, 24.85)["bin_ms"].to_list() == [24.8]


def test_block_indices_are_blocks_of_consecutive_positions() -> None:
    rng = np.random.default_rng(0)
    idx = blockboot.block_indices(23, 5, 50, rng)
    assert idx.shape == (50, 23)
    assert idx.min() >= 0 and idx.max() <= 22
    blocks = idx[:, :20].reshape(50, 4, 5)  # the first four whole blocks of each resample
    assert np.all(np.diff(blocks, axis=2) == 1)
    assert blockboot.block_indices(3, 10, 4, rng).shape == (4, 3)  # block longer than the series


def test_choose_block_white_noise_and_a_trend() -> None:
    rng = np.random.default_rng(3)
    noise = rng.normal(size=120)
    block, note = blockboot.choose_block(noise)
    assert block == math.ceil(120 ** (1 / 3)) and note is None
    trend = np.arange(120) + rng.normal(size=120)  # correlated over most of the series
    block, note = blockboot.choose_block(trend)
    assert block == 30 and note is not None and "too narrow" in note


def _synthetic_run(rng: np.random.Generator, seconds: int, per_second: int) -> tuple[Any, Any]:
    """t_s in [-20, seconds) and AR(1)-correlated per-second levels plus sample noise."""
    level = np.zeros(seconds + 20)
    for i in range(1, level.size):
        level[i] = 0.8 * level[i - 1] + rng.normal()
    t = np.repeat(np.arange(-20, seconds), per_second) + rng.uniform(0, 1, level.size * per_second)
    v = 30 + np.repeat(level, per_second) + rng.normal(0, 2, t.size)
    return t, v


def test_block_bootstrap_quantile_equals_direct_computation() -> None:
    rng = np.random.default_rng(7)
    t, v = _synthetic_run(rng, 60, 7)
    got = blockboot.block_bootstrap_quantile(t, v, 0.5, 0, 60, n_resamples=200, seed=11, block=4)
    window = v[(t >= 0) & (t < 60)]
    assert got.estimate == np.percentile(window, 50)
    assert got.low <= got.estimate <= got.high
    assert got.steps == 60 and got.block == 4 and got.draws.shape == (200,)
    # The same resamples by brute force: the pooled samples of the drawn seconds.
    sec = np.floor(t).astype(int)
    idx = blockboot.block_indices(60, 4, 200, np.random.default_rng(11))
    for b in (0, 1, 99, 199):
        pooled = np.concatenate([v[(sec == s) & (t >= 0)] for s in idx[b]])
        assert got.draws[b] == pytest.approx(np.percentile(pooled, 50), abs=1e-12)
    p95 = blockboot.block_bootstrap_quantile(t, v, 0.95, 0, 60, n_resamples=200, seed=11, block=4)
    pooled = np.concatenate([v[(sec == s) & (t >= 0)] for s in idx[5]])
    assert p95.draws[5] == pytest.approx(np.percentile(pooled, 95), abs=1e-12)
    again = blockboot.block_bootstrap_quantile(t, v, 0.5, 0, 60, n_resamples=200, seed=11, block=4)
    assert np.array_equal(again.draws, got.draws)  # seeded


def test_block_bootstrap_interval_widens_with_autocorrelation() -> None:
    # Blocks keep the correlated levels together, so the interval is wider than an i.i.d.
    # bootstrap (block 1) of the same samples would give.
    rng = np.random.default_rng(5)
    t, v = _synthetic_run(rng, 120, 10)
    iid = blockboot.block_bootstrap_quantile(t, v, 0.5, 0, 120, n_resamples=500, block=1)
    blocked = blockboot.block_bootstrap_quantile(t, v, 0.5, 0, 120, n_resamples=500)
    assert blocked.block > 1
    assert blocked.high - blocked.low > 1.3 * (iid.high - iid.low)


def test_block_bootstrap_without_samples_says_so() -> None:
    got = blockboot.block_bootstrap_quantile([-5.0, -1.0], [10.0, 11.0], 0.5, 0, 120)
    assert math.isnan(got.estimate) and got.note and "no samples" in got.note


def test_block_bootstrap_mean_of_a_constant_series() -> None:
    got = blockboot.block_bootstrap_mean(np.full(100, 2.5), n_resamples=100)
    assert got.estimate == got.low == got.high == 2.5


def test_by_second_uses_population_sd() -> None:
    got = dist.by_second([0.1, 0.5, 0.9, 1.2, math.nan], [1.0, 2.0, 3.0, 7.0, 1.0])
    assert got["second"].to_list() == [0.0, 1.0]
    assert got["median"].to_list() == [2.0, 7.0]
    assert got["sd"].to_list() == pytest.approx([np.std([1.0, 2.0, 3.0]), 0.0])
    assert got["samples"].to_list() == [3, 1]


def test_fixed_decimals_of_the_sentences() -> None:
    assert sentences.fixed(0.5131, 3) == "0.513"
    assert sentences.fixed(None) == "n/a" and sentences.fixed(math.nan) == "n/a"
    assert sentences.fixed(-0.04, 3) == "-0.040"


def test_grouped_findings_are_stated_together_in_order() -> None:
    def f(kind: str, **ctx: Any) -> dict[str, Any]:
        return {"kind": kind, "context": ctx}

    found = [
        f("rtt_slope", label="A"),
        f("resource_slope", metric="cpu", workload_label="w1", label="A"),
        f("resource_slope", metric="cpu", workload_label="w1", label="B"),
        f("resource_slope", metric="cpu", workload_label="w2", label="A"),
        f("nic_rate", direction="send", players=80, label="A"),
    ]
    got = rea_report.stated(found)
    assert [g["kind"] for g in got] == ["rtt_slope", "resource_slopes", "resource_slopes",
                                        "nic_rates"]  # fmt: skip
    assert [m["context"]["label"] for m in got[1]["members"]] == ["A", "B"]
    assert got[2]["context"] == {"metric": "cpu", "workload_label": "w2"}


# -- the real pipeline on the vendored data ---------------------------------------------------


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, rea.Computed]:
    out = tmp_path_factory.mktemp("reanalysis") / "results"
    return out, rea.compute(out, DATA)


@pytest.fixture(scope="module")
def shown(built: tuple[Path, rea.Computed]) -> dict[str, Any]:
    """report.json: what the report shapes from the tables (sentences, flaws)."""
    return rea_report.shape(built[0])[1]


def _csv(results: Path, name: str) -> pl.DataFrame:
    return pl.read_csv(results / f"{name}.csv")


def _of_kind(computed: rea.Computed, kind: str) -> list[dict[str, Any]]:
    return [f for f in computed.findings["findings"] if f["kind"] == kind]


def test_pipeline_writes_every_table(built: tuple[Path, rea.Computed]) -> None:
    results, computed = built
    for name in ("samples", "runs", "resources"):
        assert (results / f"{name}.parquet").is_file()
    for name, table in computed.tables.items():
        assert (results / f"{name}.csv").is_file(), name
        assert pl.read_parquet(results / f"{name}.parquet").equals(table), name
    assert not list(results.glob(".*tmp*"))  # no temporary file left behind
    runs = pl.read_parquet(results / "runs.parquet")
    assert runs.height == 36
    assert _csv(results, "rtt_by_run").height == 24  # Mirror runs; NFE has no RTT results
    assert _csv(results, "server_cpu").height == 36
    assert set(_csv(results, "network")["direction"]) == {"send", "receive"}
    doc = json.loads((results / "findings.json").read_text())
    assert doc["dataset"]["runs"] == 36 and doc["dataset"]["bad_rows"] == 0
    assert doc["dataset"]["licence"] == "MIT License"
    assert doc["dataset"]["runs_per_configuration_max"] == 1


def test_frame_floor_is_one_frame_in_every_run(built: tuple[Path, rea.Computed]) -> None:
    results, _ = built
    floor = _csv(results, "frame_floor")
    # The importer's docs (and SOURCE.md): Mirror's RTT never goes below 16.67 ms.
    assert floor.height == 24
    assert floor["rtt_min_ms"].to_list() == [16.67] * 24
    assert (floor["frac_on_frame_multiple"] >= floor["frac_at_floor"]).all()
    # The quantisation shows: some runs sit mostly on whole frames.
    assert floor["frac_on_frame_multiple"].max() > 0.5 > floor["expected_frac_unquantised"][0]


def test_tables_agree_with_the_importer(built: tuple[Path, rea.Computed]) -> None:
    results, _ = built
    runs = pl.read_parquet(results / "runs.parquet")
    warm = _csv(results, "warmup").join(
        runs.select("cell_id", "rtt_lib_p50_us", "server_cpu_cores"), on="cell_id"
    )
    # The fixed window is the importer's window: its p50 is the runs table's.
    assert np.allclose(warm["rtt_p50_fixed_ms"], warm["rtt_lib_p50_us"] / 1000.0, atol=1e-9)
    assert (warm["samples_pooled"] >= warm["samples_fixed"]).all()
    rtt = _csv(results, "rtt_by_run")
    assert (rtt["rtt_p50_low_ms"] <= rtt["rtt_p50_ms"]).all()
    assert (rtt["rtt_p50_ms"] <= rtt["rtt_p50_high_ms"]).all()
    assert rtt["note"].str.contains("within-run").all()
    assert rtt["note"].str.contains("no between-run interval").all()
    cpu = _csv(results, "server_cpu").join(runs.select("cell_id", "server_cpu_cores"), on="cell_id")
    # mean of the per-interval rates vs the importer's exact cumulative rate over the window
    assert np.allclose(cpu["cpu_cores_mean"], cpu["server_cpu_cores"], rtol=0.05)


def test_single_runs_get_no_between_run_intervals(built: tuple[Path, rea.Computed]) -> None:
    results, computed = built
    cross = _csv(results, "crossings")
    assert cross["between_run_low_players"].null_count() == cross.height
    assert cross["note"].str.contains("no between-run interval").all()
    reached = cross.filter(pl.col("crossing_players").is_not_null())
    assert reached.height > 0
    assert (reached["within_run_low_players"] <= reached["crossing_players"]).all()
    assert (reached["crossing_players"] <= reached["within_run_high_players"]).all()
    scaling = _csv(results, "scaling")
    assert (scaling["runs"] == 6).all()
    assert scaling["note"].str.contains("no run-to-run replication").all()
    for f in _of_kind(computed, "rtt_crossing"):
        assert f["interval_kind"] == "within-run" and f["between_run_interval"] is None


# Units a re-analysis finding may be stored in; each must be one the report can show.
FINDING_UNITS = {"ms", "s", "ms/player", "cores/player", "MiB/player", "MiB/s", "players", "count"}
KINDS = {"reanalysed_data", "rtt_slope", "resource_slope", "rtt_crossing",
         "threshold_not_reached", "pooled_vs_fixed", "mser_cut", "last_join", "frame_floor",
         "nic_rate"}  # fmt: skip


def _strings(value: Any) -> list[str]:
    """Every string in a JSON value (keys excluded)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def test_stats_writes_findings_as_records_without_prose(built: tuple[Path, rea.Computed]) -> None:
    results, _ = built
    findings = json.loads((results / "findings.json").read_text())["findings"]
    assert {f["kind"] for f in findings} == KINDS  # every kind occurs in these data
    for f in findings:
        assert {"kind", "context", "estimate", "interval", "unit"} <= f.keys(), f
        assert isinstance(f["context"], dict) and f["context"], f
        assert f["estimate"] is None or math.isfinite(f["estimate"]), f
        assert f["unit"] in FINDING_UNITS, f
        sentences.convert(1.0, f["unit"])  # the report knows how to show it
        if f["interval"] is not None:
            low, high = f["interval"]
            assert low <= high and 0 < f["level"] < 1, f
        assert "statement" not in f
        # No prose: names and labels only (at most a few words, never a sentence).
        for text in _strings(f):
            assert len(text.split()) <= 6 and not text.rstrip().endswith("."), (f["kind"], text)
    assert [f["estimate"] for f in findings if f["kind"] == "threshold_not_reached"] == [None] * 8


def test_findings_carry_the_table_numbers(built: tuple[Path, rea.Computed]) -> None:
    results, computed = built
    scaling = _csv(results, "scaling")
    cross = _csv(results, "crossings")
    slopes = _of_kind(computed, "rtt_slope")
    assert len(slopes) == 4  # Mirror KCP and Telepathy x two workloads
    for f in slopes:
        ctx = f["context"]
        row = scaling.filter(
            (pl.col("metric") == "rtt_p50_ms")
            & (pl.col("label") == ctx["label"])
            & (pl.col("workload_label") == ctx["workload_label"])
        )
        assert row["slope_per_player"][0] == pytest.approx(f["estimate"], rel=1e-5)
        said = sentences.sentence(f)
        assert f"{f['estimate']:.3f} ms per player" in said
        low, high = f["interval"]
        assert f"[{low:.3f}, {high:.3f}]" in said
    assert len(_of_kind(computed, "resource_slope")) == 12  # 2 metrics x 2 workloads x 3
    for f in _of_kind(computed, "rtt_crossing"):
        ctx = f["context"]
        row = cross.filter(
            (pl.col("metric") == "rtt_p50_ms")
            & (pl.col("label") == ctx["label"])
            & (pl.col("workload_label") == ctx["workload_label"])
            & (pl.col("threshold_ms") == ctx["threshold_ms"])
        )
        assert row["crossing_players"][0] == pytest.approx(f["estimate"], rel=1e-5)
        assert f"about {f['estimate']:.1f} players" in sentences.sentence(f)
    warm = _csv(results, "warmup")
    [pooled] = _of_kind(computed, "pooled_vs_fixed")
    assert pooled["range_ms"][0] == pytest.approx(warm["pooled_minus_fixed_ms"].min())
    assert f"{warm['pooled_minus_fixed_ms'].min():.2f} to" in sentences.sentence(pooled)
    [floor] = _of_kind(computed, "frame_floor")
    assert floor["rtt_min_ms"] == [16.67]
    assert "The minimum RTT of every Mirror run is 16.67 ms" in sentences.sentence(floor)


def test_every_flaw_is_listed(built: tuple[Path, rea.Computed], shown: dict[str, Any]) -> None:
    results, _ = built
    flaws = _csv(results, "flaws")
    runs = pl.read_parquet(results / "runs.parquet")
    dataset = flaws.filter(pl.col("scope") == "dataset")["flaw"].to_list()
    assert set(FLAWS) <= set(dataset)
    assert shown["dataset_flaws"] == dataset
    per_run = sum(len([f for f in r.split(";") if f]) for r in runs["flaws"].to_list())
    assert flaws.filter(pl.col("scope") == "run").height == per_run
    summary = rea_report.shape(results)[0]["flaws_summary"]
    assert summary["runs"].sum() == per_run
    everywhere = summary.filter(pl.col("runs") == runs.height)
    assert everywhere.height > 0 and set(everywhere["applies_to"]) == {"all runs"}


def test_bad_data_dir_is_named(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="--data"):
        rea.compute(tmp_path / "out", tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no Net-Celerity runs"):
        rea.compute(tmp_path / "out", tmp_path / "empty")
    with pytest.raises(rea_report.ReanalysisError, match=r"findings\.json"):
        rea_report.shape(tmp_path / "empty")
