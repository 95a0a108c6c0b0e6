"""The campaign report's figure data and tables: a synthetic campaign (support/report_fixture.py)
has every figure type; the stats stage and the figure shaping run on it for real. (Rendered with
R: e2e/render/test_report_render.py; the workflow tests render the real quick campaign's.)
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from report import figdata
from stats import analyse

from support import report_fixture

FIGURE_IDS = [
    "rtt-players", "resources-players", "rates-players", "idle-active", "rtt-time",
    "world-size", "envmod-time", "profiles", "versions",
]  # fmt: skip


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("synthetic")
    results = root / "results"
    report_fixture.build(results)
    return {"root": root, "results": results}


def _manifest(results: Path) -> dict[str, dict]:
    doc = json.loads((results / "figures" / "manifest.json").read_text())
    return {f["id"]: f for f in doc["figures"]}


def test_synthetic_campaign_has_every_figure_type(synthetic: dict[str, Path]) -> None:
    figs = _manifest(synthetic["results"])
    assert list(figs) == FIGURE_IDS
    # idle and active are the only contexts with several player counts: two panels
    assert figs["rtt-players"]["panels"] == 2
    for fid, f in figs.items():
        assert f["expected"], (fid, f["reason"])
        assert f["caption"] and f["runs"] > 0, fid
        for name in f["files"]:
            table = pl.read_csv(synthetic["results"] / "figures" / name)
            assert table.height > 0, name


def test_figure_data_carries_the_stats_numbers(synthetic: dict[str, Path]) -> None:
    """Figures draw the stats stage's intervals, converted to the shown unit, never recomputed."""
    results = synthetic["results"]
    cells = pl.read_parquet(results / "cells.parquet").filter(pl.col("metric") == "rtt_net_p50_us")
    shown = pl.read_csv(results / "figures" / "rtt-players.cells.csv").filter(
        pl.col("metric") == "rtt_net_p50_us"
    )
    joined = shown.join(cells, on="cell_id", suffix="_stats")
    assert joined.height == shown.height > 0
    for r in joined.iter_rows(named=True):
        assert r["y"] == pytest.approx(r["estimate_stats"] / 1000)
        if r["ci_low_stats"] is not None:
            assert r["y_low"] == pytest.approx(r["ci_low_stats"] / 1000)
            assert r["y_high"] == pytest.approx(r["ci_high_stats"] / 1000)


def test_change_point_of_the_slower_versions_is_found(synthetic: dict[str, Path]) -> None:
    """The stats stage finds it (changepoints.csv); the figure draws the same rows."""
    found = pl.read_csv(
        synthetic["results"] / "changepoints.csv", schema_overrides={"library_version": pl.String}
    ).sort("version_order")
    versions = pl.read_csv(
        synthetic["results"] / "figures" / "versions.cells.csv",
        schema_overrides={"library_version": pl.String},
    ).sort("version_order")
    for table in (found, versions):
        assert table["library_version"].to_list() == list(report_fixture.VERSIONS)
        assert table.filter(pl.col("change_point"))["library_version"].to_list() == [
            report_fixture.STEP_FROM
        ]
    # Drawn in ms: the stats stage's medians (µs) converted once.
    assert versions["y"].to_list() == pytest.approx((found["estimate"] / 1000).to_list())


def test_quick_like_campaign_says_why_figures_are_missing(tmp_path: Path) -> None:
    results = tmp_path / "results"
    report_fixture.build(results)
    runs = pl.read_parquet(results / "runs.parquet").filter(
        pl.col("workload").is_in(["idle", "active"])
        & (pl.col("network_profile") == "lan")
        & (pl.col("library_version") == "pinned")
    )
    runs.write_parquet(results / "runs.parquet")
    analyse.analyse(results)
    figs = {f.id: f for f in figdata.shape(results)}
    drawn = {fid for fid, f in figs.items() if f.expected}
    assert drawn == {"rtt-players", "resources-players", "rates-players", "idle-active", "rtt-time"}
    for fid in set(FIGURE_IDS) - drawn:
        assert figs[fid].reason, fid


def test_warmup_table_names_every_unsettled_run(synthetic: dict[str, Path]) -> None:
    table = pl.read_csv(synthetic["results"] / "figures" / "warmup.csv")
    runs = pl.read_parquet(synthetic["results"] / "runs.parquet")
    unsettled = runs.filter(pl.col("warmup_second_half").fill_null(False))
    assert unsettled.height == 1
    row = table.filter(pl.col("cell_id") == unsettled["cell_id"][0]).row(0, named=True)
    assert row["not_settled"] == unsettled["run_id"][0]
    assert table["runs"].sum() == runs.filter(pl.col("status") == "ok").height


def test_failed_runs_table_has_every_run_not_ok_with_its_cause(synthetic: dict[str, Path]) -> None:
    doc = json.loads((synthetic["results"] / "figures" / "manifest.json").read_text())
    table = pl.read_csv(synthetic["results"] / "figures" / doc["tables"]["failed"]["file"])
    runs = pl.read_parquet(synthetic["results"] / "runs.parquet")
    bad = runs.filter(pl.col("status") != "ok")
    assert table["run"].to_list() == [f"{c}/{r}" for c, r in bad.select("cell_id", "run_id").rows()]
    assert set(table["cause"]) == {
        "on $PORT & ~/run: *all* `if` · panic: bad <frame> | chunk_id [3]"
    }
    assert set(table["exit_code"]) == {2} and set(table["attempts"]) == {3}
    # Results written before the failure columns existed still give the table.
    old = figdata.failed_table(runs.drop("exit_code", "stderr_tail", "failure_summary"))
    assert old["cause"].to_list() == [""] * bad.height
