"""The campaign report's figure data and tables: a synthetic campaign (support/report_fixture.py)
has every figure type; the stats stage and the figure shaping run on it for real. (Rendered with
R: e2e/render/test_report_render.py; the workflow tests render the real quick campaign's.)
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from report import figdata, tables
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
            # Threshold lines only where the data reach them: none in this campaign.
            assert table.height > 0 or name == "rtt-players.lines.csv", name
    assert "lie above every value: not drawn" in figs["rtt-players"]["caption"]


def test_threshold_lines_only_in_the_panels_their_data_reach(tmp_path: Path) -> None:
    from report import figdata
    from report.display import Display

    out = tmp_path
    runs = pl.DataFrame({"panel": ["idle", "idle", "active"], "metric_label": ["RTT p99 (ms)"] * 3,
                         "y": [20.0, 80.0, 30.0]})  # fmt: skip
    cells = runs.with_columns(pl.col("y").alias("y_high"))
    runs.write_csv(out / "f.runs.csv")
    cells.write_csv(out / "f.cells.csv")
    fig = figdata.Figure("f", "t", expected=True, caption="c.")
    disp = Display({}, {}, {}, {}, (50_000.0, 75_000.0, 100_000.0))
    figdata._threshold_lines(fig, out, disp)
    lines = pl.read_csv(out / "f.lines.csv")
    assert lines.select("panel", "y", "label").rows() == [
        ("idle", 50.0, "50 ms"),
        ("idle", 75.0, "75 ms"),
    ]
    assert "in the panels whose values reach them" in fig.caption


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
    u = unsettled.row(0, named=True)
    row = table.filter(
        (pl.col("transport") == u["transport"]) & (pl.col("players") == u["players"])
        & (pl.col("workload").str.starts_with(u["workload"]))
        & (pl.col("profile") == u["network_profile"])
        & (pl.col("version") == u["library_version"])
    ).row(0, named=True)  # fmt: skip
    assert row["not_settled"] == u["run_id"]
    assert table["runs"].sum() == runs.filter(pl.col("status") == "ok").height
    # Keyed as a reader names a cell, sorted, no hashed ids.
    assert "cell_id" not in table.columns
    keys = table.select("transport", "version", "players").rows()
    assert keys == sorted(keys)


def test_a_note_every_warmup_row_shares_is_said_once() -> None:
    ok = pl.DataFrame(
        {"cell_id": ["a", "a", "b"], "run_id": ["r1", "r2", "r1"],
         "transport": ["tcp", "tcp", "kcp"],
         "library_version": ["pinned"] * 3, "players": [20, 20, 100], "workload": ["active"] * 3,
         "params": ["{}"] * 3, "network_profile": ["lan"] * 3, "warmup_cut_s": [None] * 3,
         "warmup_note": ["window too short for MSER-5"] * 3}
    )  # fmt: skip
    table, shared = tables.warmup_table(ok)
    assert shared == "window too short for MSER-5" and "notes" not in table.columns
    assert table["transport"].to_list() == ["kcp", "tcp"]


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
    old = tables.failed_table(runs.drop("exit_code", "stderr_tail", "failure_summary"))
    assert old["cause"].to_list() == [""] * bad.height
